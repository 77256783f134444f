// The ranks' output: stdout and stderr kept apart, cut into lines, written unprefixed to one
// log file per rank and stream (LOGDIR/rank-R.out, LOGDIR/rank-R.err; LOGDIR is one run's own
// directory, logs/NAME/JOBID, with logs/NAME/latest pointing at the newest), and shown on the
// terminal prefixed "[R host] " (stdout lines on stdout, stderr lines on stderr), one whole
// line at a time and flushed at once (line-buffered), optionally only for some ranks. The
// attempts of `restart: on-failure` share the logs, each begun by a marker line (mark_logs).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace cc::launch {

struct OutputOptions {
  bool prefix = true;        // "[R host] " before each terminal line (--no-prefix: none)
  std::set<int> shown;       // ranks shown on the terminal; empty = every rank (--ranks)
  std::FILE* out = stdout;   // where stdout lines go; nullptr = nowhere (--detach)
  std::FILE* err = stderr;   // where stderr lines go; nullptr = nowhere
  // A terminal (cli/ sets it from util::OutputStyle::progress): status() draws a transient line
  // on `err`. Drawn here, not with util::ProgressLine, because it must be cleared and redrawn
  // around every rank line under mu_, on the stream those lines go to (ARCHITECTURE.md).
  bool status_line = false;
  /// Sees every complete line of a rank (fd 1 or 2, without its newline) after it is logged and
  /// before it is shown; returning false keeps it off the terminal. Called with the mux's lock
  /// held, from the ranks' threads: it must not call back into the mux. `clusterctl push`
  /// reads its ranks' "@push" events this way.
  std::function<bool(int rank, int fd, std::string_view line)> filter;
  /// Whether launch's notes about the job's own course (job_note: "rank 0 on h1 failed (exit
  /// 2): ending the job (SIGTERM, ...)", the SIGKILL-now and stalled/stopped rank warnings) are
  /// shown. They speak of ranks and a job, which only `clusterctl launch`'s operator knows of: a
  /// front-end that starts its own program through launch and reports the outcome in its own
  /// words (`clusterctl push`) sets false, keeps them (held_job_notes()) and shows them only
  /// where they add to its own message.
  bool job_notes = true;
};

/// At most this much of a rank's line without a newline is held (OutputMux::feed), and the
/// longest piece of a line that is shown.
inline constexpr size_t kMaxLinePiece = 64 * 1024;

/// Cuts a byte stream into lines, and a line longer than kMaxLinePiece into pieces of at most
/// kMaxLinePiece bytes (never inside a UTF-8 character), holding at most kMaxLinePiece bytes of
/// an unfinished line. Both the live output (OutputMux) and `clusterctl logs` show lines through
/// it, so a line of 100 MB is shown the same way in both, and memory stays bounded.
class LineCutter {
 public:
  /// Gets each line (without its newline, `ends_line` true) or each piece of a longer line
  /// (`ends_line` false: the line goes on in the next one).
  using Sink = std::function<void(std::string_view piece, bool ends_line)>;
  /// Passes on every line and piece `bytes` completes; keeps the rest.
  void feed(std::string_view bytes, const Sink& out);
  /// Passes on the unfinished last line, if any, as a line (ends_line true).
  void finish(const Sink& out);
  bool empty() const { return partial_.empty(); }

 private:
  std::string partial_;  // at most kMaxLinePiece bytes between calls
};

/// Thread-safe: ranks' threads feed it at once; each line is written whole (a line longer
/// than kMaxLinePiece in pieces).
class OutputMux {
 public:
  /// `labels[r]` is rank r's host name. Creates `log_dir` (its parents as needed), which must
  /// not exist yet, and the log files in it (util::create_new_file: nothing is followed or
  /// truncated, so two runs never share a file). Errors: kUsage naming the directory or file.
  static util::Result<std::unique_ptr<OutputMux>> open(const std::filesystem::path& log_dir,
                                                       std::vector<std::string> labels,
                                                       OutputOptions opts);
  ~OutputMux();
  OutputMux(const OutputMux&) = delete;
  OutputMux& operator=(const OutputMux&) = delete;

  /// Output of rank `rank` on fd 1 (stdout) or 2 (stderr), any split. A line longer than
  /// kMaxLinePiece is passed on in pieces of at most that size (memory stays bounded): the log
  /// gets its bytes exactly, the terminal each piece as a line of its own.
  void feed(int rank, int fd, std::string_view bytes);
  /// Writes out the rank's incomplete last lines (with a newline added).
  void finish(int rank);
  /// A line of clusterctl's own about the job, on stderr (and not in any rank's log).
  void note(std::string_view line);
  /// A line of clusterctl's own in every rank's logs, stdout's and stderr's, never on the
  /// terminal: where a restart attempt starts (restart.h, attempt_marker), in logs every
  /// attempt shares. Each rank's unfinished line is ended first; what the mux knows of the
  /// ranks' last run starts afresh (last_error_line empty, last_output now), so the next
  /// attempt is judged by its own lines.
  void mark_logs(std::string_view line);
  /// A note about the job's own course (launch/watcher.cc): shown as note() does when
  /// OutputOptions::job_notes, else only kept for held_job_notes().
  void job_note(std::string_view line);
  /// The job notes kept instead of shown (OutputOptions::job_notes false), in order.
  std::vector<std::string> held_job_notes() const;
  /// Redraws the transient status line ("4/4 running, 12 s"), only with status_line; lines
  /// written meanwhile clear it first and redraw it after. "" clears it for good. A status of
  /// several lines ('\n' between them, none at the end; each narrower than the terminal) is
  /// cleared line by line (`clusterctl push` draws one line per target).
  void status(std::string_view text);
  /// When rank `rank` last printed anything (steady clock), for the stall warning.
  std::chrono::steady_clock::time_point last_output(int rank) const;
  /// Rank `rank`'s last non-blank stderr line so far ("" for none): where a failed rank's
  /// error usually is (a Python exception's last line, libclustercomm's message), which the
  /// summary reads to tell a failure from its consequences (root_cause, runner.h).
  std::string last_error_line(int rank) const;
  /// Every rank's last_error_line, by rank: what failure_cause (runner.h) reads.
  std::vector<std::string> last_error_lines() const;
  /// Path of rank's log for fd 1 or 2.
  std::filesystem::path log_path(int rank, int fd) const;
  /// Removes what open() made, for a run that ends before it began (launch --detach whose fork
  /// failed): the rank logs, this run's directory, and the parent directories open() created
  /// (deepest first, each only while empty). Nothing else: a file another process put there
  /// keeps it and its directories, and nothing is followed. The logs are closed; the mux writes
  /// no log after it.
  void discard();

 private:
  struct Stream {
    std::FILE* log = nullptr;
    LineCutter lines;
  };
  OutputMux(std::filesystem::path dir, std::vector<std::string> labels, OutputOptions opts);
  // `ends_line`: the log gets a newline after it (not after a piece of a longer line).
  void emit(int rank, int fd, std::string_view line, bool ends_line = true);
  void clear_status();  // with mu_ held
  void draw_status();

  std::filesystem::path dir_;
  std::vector<std::filesystem::path> made_parents_;  // created by open(), deepest first
  std::vector<std::string> labels_;
  OutputOptions opts_;
  mutable std::mutex mu_;
  std::vector<Stream> streams_;  // 2 per rank: [2r] stdout, [2r+1] stderr
  std::vector<std::chrono::steady_clock::time_point> last_;
  std::vector<std::string> last_error_;  // per rank: its last non-blank stderr line
  std::string status_;  // drawn now on opts_.err when not empty
  std::vector<std::string> held_;  // job notes not shown (OutputOptions::job_notes false)
};

/// Points LOGDIR's parent's `latest` at LOGDIR (a relative symbolic link, replaced
/// atomically). Errors: kUsage when `latest` exists and is not a symbolic link (left alone).
util::Status link_latest(const std::filesystem::path& log_dir);

/// "[R host] " as shown before each line.
std::string rank_prefix(int rank, std::string_view host);

}  // namespace cc::launch
