// Running a job: every rank started in parallel through remote/ (one SSH connection per rank,
// one more per host for setup, signals and cleanup), watched, and ended cleanly.
//
// On each host: a job directory JOBDIR = /tmp/clusterctl-job-JOBID-RANDOM-hH, H the host's index in
// WorldPlan::hosts from 0, not its name (README, "Running jobs") (mode 0700,
// new for every run and restart attempt; wrapper.h, "Trust") holding the uploads, the
// runtime's files and the ranks' pid files; each rank runs under the wrapper
// of wrapper.h in its own session and process group, with its environment sent on stdin. The
// job ends when every rank has exited, or early:
//   - the first rank to exit non-zero, be killed, or lose its host's connection fails the job;
//   - Ctrl-C (util::interrupted()), the startup timeout (not every rank running) and the total
//     timeout end it too;
// then every other rank's process group gets SIGTERM, SIGKILL after timeouts.grace, and
// JOBDIR is removed on every host (whatever happened). A host whose connection is lost has its
// ranks ended by their own watchdog (wrapper.h). Every rank connection carries a heartbeat
// (kHeartbeatInterval); a host cut off without a TCP reset (link down, cable pulled) leaves
// its heartbeats unacknowledged, so its connections fail after kHeartbeatTimeout and the job
// fails (exit 4, "connection lost: host H lost") while the host's watchdogs end its ranks.
// Before setting a host up, the janitor removes the job directories there that a launcher on
// this machine left when it was killed (kill -9) and is gone, and says which.
//
// The parts (backend.h, watcher.h): a LaunchBackend starts the ranks and reports on a RankBoard
// (ssh_backend.cc: one session per rank; mpi_backend.cc: mpirun), the watcher decides when the
// job ends, in RunnerOptions::clock's time; run_job sets the hosts up, wires them, and cleans.
//
// runtime mpi (mpi.h): mpirun runs on this machine under the same wrapper, in a job directory
// of its own here; the hosts' job directories hold uploads and the ranks' pid files as usual,
// each rank's start, output and exit status come back through mpirun's tagged output, and the
// job ends with mpirun (its exit status fails the job too). Each host runs a watch on a
// connection with the same heartbeat (mpi.h, host_watch_argv): a host cut off fails the job
// as under the other runtimes, where mpirun would wait for its ranks forever.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/job_spec.h"
#include "launch/mpi.h"
#include "launch/output.h"
#include "launch/rank_env.h"
#include "remote/executor.h"
#include "util/clock.h"
#include "util/result.h"

namespace cc::launch {

/// A new connection to host `host` (index into WorldPlan::hosts). Called once per rank and
/// once per host, from several threads at once.
using ExecutorFactory = std::function<util::Result<std::unique_ptr<remote::Executor>>(size_t host)>;

struct RunnerOptions {
  std::string job_id;  // unique; names JOBDIR on the hosts
  OutputOptions output;
  std::chrono::milliseconds control_timeout{15'000};  // each setup/signal/cleanup command
  /// Called about every 200 ms with a status line ("4/4 running, 0 exited, 12 s"); may be empty.
  std::function<void(const std::string&)> status;
  /// runtime mpi (mpi.h): a new connection to this machine, where mpirun runs, and mpirun's
  /// ssh agent, TCP subnet and root flag (run_job fills in the rest of MpiLaunch).
  std::function<util::Result<std::unique_ptr<remote::Executor>>()> connect_local;
  MpiLaunch mpi;
  /// The job's cables that are down now (watcher.h WatchOptions::cables_down); may be empty.
  std::function<std::vector<std::string>()> cables_down;
  /// The time every timeout and wait of the job counts in (watcher.h); nullptr: the real,
  /// steady clock. Tests pass a util::FakeClock.
  util::Clock* clock = nullptr;
};

/// How a rank ended.
struct RankOutcome {
  int rank = 0;
  std::string host;
  bool started = false;      // the rank's process ran (its start line arrived)
  long pid = 0;              // its pid (= process group and session id) on its host, once started
  bool finished = false;     // its exit status (or a connection loss) is known
  int exit_status = -1;      // 0..255 (128+N after death by signal N); -1: unknown (lost, never ran)
  bool signaled = false;     // it died by signal exit_status-128 (an exit with 128+N is not)
  std::string problem;       // why it has no status: "connection lost: ...", "never started";
                             // or, with a status, why it failed before its command ran
                             // ("cannot enter the working directory /x on h2": wrapper.h)
  bool ended_by_us = false;  // its end followed clusterctl's SIGTERM/SIGKILL
  bool ended_by_launcher = false;  // runtime mpi: ended_by_us, but by mpirun alone (Open MPI
                                   // ends the others after a rank's failure; clusterctl sent
                                   // it no signal)
  bool stopped = false;      // seen stopped while it ran (ps STAT T/t: SIGSTOP, Ctrl-Z, a debugger)
  std::string last_error;    // its last non-blank stderr line (OutputMux::last_error_line)
  std::optional<double> exited_at;  // a failed rank's end by its host's clock (wrapper.h
                                    // EndRecord), when the host's waiter recorded it
  std::chrono::milliseconds duration{0};
  bool failed() const { return exit_status != 0; }
};

struct JobOutcome {
  util::ExitCode code = util::ExitCode::kOk;  // kOk, kJobFailed or kInterrupted
  std::vector<RankOutcome> ranks;
  int first_failed = -1;  // the rank whose failure ended the job (its cause: root_cause); -1
                          // when none
  int consequence = -1;   // the rank that failed before first_failed, whose error names it
                          // (root_cause); -1 when the first failure was the cause
  std::string reason;     // why the job ended early ("rank 2 on h3 exited 1", "Ctrl-C", ...)
  std::vector<std::string> cleanup_problems;  // hosts whose job directory may remain
  std::chrono::milliseconds startup{0};       // launch until every rank ran (0: never)
  std::chrono::milliseconds duration{0};
  std::vector<std::string> command;  // the job's command as given: its argv, or sh -c SCRIPT
  // The global options that select the job's hosts, as shell words for a suggested command
  // ("--lab t3a", "--inventory 'inv.yaml'"; "" for none), so that a fix runs as printed.
  std::string global_words;
};

/// Runs the job to its end. `plan` holds the hosts and environment; `spec` the command,
/// uploads, cwd and timeouts. Errors (before any rank started): kUsage for a plan that cannot
/// run, kUnreachable when a host cannot be set up (named, with the reason), kCheckFailed when
/// something listens on or holds the coordinator port on rank 0's host, or for mlx-ring any
/// rank's port on its host (every HOST:PORT named with its rank, and what to do: runner.cc,
/// check_coordinator_port); the hosts already set up are cleaned. Once ranks started, the result is a JobOutcome whatever happened.
util::Result<JobOutcome> run_job(const JobSpec& spec, const WorldPlan& plan, OutputMux& output,
                                 const ExecutorFactory& connect, const RunnerOptions& opts);

/// The job directory of host `host` on that host, for the run `run_id` (JOBID-RANDOM).
std::string job_dir(const std::string& run_id, size_t host);
/// runtime mpi: mpirun's job directory on this machine.
std::string local_job_dir(const std::string& run_id);

/// The janitor: removes this user's job directories on the host whose launcher (a clusterctl on
/// this machine) is gone, e.g. killed with -9 during an upload (wrapper.h, leftovers_argv,
/// launcher_gone), killing what still runs there; returns "HOST:DIR" for each removed.
/// Directories of live launchers and of other machines' are left alone. A host that does not
/// answer within `timeout` is skipped; when `unreachable` is given, it then holds why (the
/// listing's kUnreachable or kInterrupted error), so a caller tries the host no second time.
/// With `only`, just the directories whose launcher record names a job id `only` accepts
/// (`lab down`: the jobs of the lab it removed), the same trust rules applying.
std::vector<std::string> sweep_leftovers(
    remote::Executor& ex, std::chrono::milliseconds timeout, util::Status* unreachable = nullptr,
    const std::function<bool(std::string_view job_id)>& only = {});

/// "0", "1", "SIGKILL", "connection lost" for the summary.
std::string describe_status(const RankOutcome& r);

/// What a failed rank's status means when the status alone does not say, "" otherwise: its
/// problem (why it failed before its command ran, or the waiter's "command not found: python3
/// (looked for in PATH=...)", "not executable: ./run.sh: Permission denied": exec_failure);
/// else exit 127 and 126 as a shell means them; a death by SIGKILL, SIGSEGV, SIGABRT, ... that
/// clusterctl did not cause, with its usual cause.
std::string status_reason(const RankOutcome& r);

/// describe_status, and, but for a signal (named already), status_reason ("exit 126: cannot
/// enter the working directory /x on h2", "exit 127: command not found: python3 (...)").
std::string describe_failure(const RankOutcome& r);

/// Whether a rank's last error line says only that a peer went away: a connection reset or
/// closed under it ("[ring] connection to a peer was lost", "errno 104", "Connection reset by
/// peer", "Broken pipe"). Such a failure is a consequence of another rank's end.
bool peer_loss(std::string_view error_line);

/// The rank to take for the job's first failure: `first` (the board's: the first reported, or
/// the first to end by the hosts' clocks), unless its error is a peer_loss and another rank
/// failed on its own (exit 1..255, no peer_loss error, not the teardown's SIGTERM or SIGKILL):
/// then that one, the earliest to end by its host's clock when the hosts recorded it, else the
/// lowest rank. Under mlx-ring a rank's sys.exit(3) closes its ring connections before its
/// process ends, so a peer failing on them may both end and be reported before it.
int first_cause(const std::vector<RankOutcome>& ranks, int first,
                const std::vector<std::string>& error_lines);

/// The rank whose failure caused rank `first`'s (the first to fail), from `first`'s last error
/// line (`error_lines[r]`: OutputMux::last_error_line): the coordinator, rank 0, when the line
/// names the coordinator ("the coordinator (rank 0) at h1:42503 refused this rank: another
/// job's coordinator is on that port", after rank 0 of this job failed to listen there), else
/// the first other rank it names ("rank K", or one of a list: "ranks K, L") that failed on its
/// own (an exit status above 0, not a death by signal, which during teardown is clusterctl's
/// doing), since a rank that clusterctl ended caused nothing, and whose own last error line does
/// not name `first` back ("rank 0: rank 2 closed the connection": then rank 2 came first).
/// `first` otherwise (also when it is -1).
int root_cause(const std::vector<RankOutcome>& ranks, int first,
               const std::vector<std::string>& error_lines);

/// Why the job's first failure ends it, from what is known now, the board's first failure
/// being `board_first` (RankBoard::first_failed): the first failure taken is first_cause's, its
/// cause root_cause's. The watcher's "ending the job" line (and its later note, should the
/// reports that came since change the cause: watcher.h) and the summary's verdict
/// (JobOutcome::reason) all come from it, so they name the same rank.
struct FailureCause {
  int first = -1;        // first_cause: the first failure (-1 when `board_first` is -1)
  int cause = -1;        // root_cause: the rank to blame (-1 when `board_first` is -1)
  int consequence = -1;  // `first`, when its error names `cause`; -1 when it is the cause
  /// "rank 1 on h2 failed (exit 3)", or, for a consequence, "rank 0 on h1 failed (exit 1);
  /// rank 1 on h2 failed before it (exit 1), but its error names rank 0: a consequence".
  std::string reason;
  /// reason, with a failure's "why" longer than 60 characters cut to its first words
  /// ("exit 127: command not found; in full in the summary"): for the line printed before the
  /// summary, which prints it once.
  /// When `first` is its own cause and its error names ranks that were still running (it
  /// waited for them: "ranks 1, 2 never joined the coordinator"), both end with "; its error
  /// names rank 1 on h2 and rank 2 on h3, still running: look there first" (after the job:
  /// "which were still running until clusterctl ended them"; at most 4 named, then "(and N
  /// more)").
  std::string brief;
};
FailureCause failure_cause(const std::vector<RankOutcome>& ranks, int board_first,
                           const std::vector<std::string>& error_lines);

/// Why the job did not succeed, in one line: the reason it ended early, or the rank that
/// failed first ("rank 2 on h3 failed (exit 1)"); "" for a job that succeeded. The verdict
/// of render_summary, and the `reason` of the job's record (`clusterctl jobs`).
std::string job_reason(const JobOutcome& outcome);

/// When a rank's command was not found (exit 127): a "to fix: ..." line naming the hosts and
/// what to do, one per way it was looked for: a name without '/' in PATH (a non-interactive
/// SSH session's PATH; an absolute path in `command:` or the whole PATH in `env:`; a PATH that
/// holds a '$' is said to be one of `env:`'s literal values, with the whole PATH to write); a
/// relative path from the rank's working directory on its host, not the job file's (an
/// absolute path in `command:`, or `upload:`). None for an absolute path, whose own reason says
/// what is missing. "" when no command was not found.
std::string not_found_advice(const JobOutcome& outcome);

/// When a rank's command was found but not executable (the waiter's exit 126, "not executable:
/// ./run.sh: Permission denied"): one "to fix: ..." line naming it and the hosts (the upload's
/// `mode: "0755"`, chmod +x, or a noexec file system); "" otherwise.
std::string not_executable_advice(const JobOutcome& outcome);

/// When a rank's command is a script whose #! interpreter is missing on its host (the waiter's
/// exit 127, "interpreter not found: /usr/bin/python9, named by the #! line of ./run.sh"): one
/// "to fix: on h1 (rank 0), h2 (rank 1): ..." line per interpreter and script, with
/// remote::missing_interpreter_fix (install it or fix the #! line; a CRLF script: dos2unix or
/// sed); "" otherwise.
std::string interpreter_advice(const JobOutcome& outcome);

/// When a failed rank's last stderr line is Python's "ModuleNotFoundError: No module named
/// 'clustercomm'" (or 'mlx', 'mlx.core'): one "to fix: ..." line per module naming the ranks'
/// hosts, the interpreter that ran (the command's program, as looked up on the host) and how to
/// install the package there (README.md, "Python"; MLX: pip install mlx); "" otherwise.
std::string module_advice(const JobOutcome& outcome);

/// The summary table (rank, host, exit, duration; the first failure marked, "failed" alone in a
/// job of one rank; a failed rank's status_reason on the line below it), the verdict ("1 rank",
/// "4 ranks": util::plural), not_found_advice, not_executable_advice, interpreter_advice and
/// module_advice. A
/// status cell is never cut: a status longer than the column shows its first words ("connection
/// lost") and the whole on the line below. A reason longer than 60 characters is printed once,
/// under the first rank that has it: later ranks say "same as rank N", and the verdict "as under
/// rank N above".
std::string render_summary(const JobOutcome& outcome);

}  // namespace cc::launch
