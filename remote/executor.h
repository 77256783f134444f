// Running commands on hosts. Every side effect on a host goes through an Executor, so the same
// code runs over SSH (real hosts and the lab), locally (fork/exec) and from a recorded bundle
// (replay: the way real Mac outputs, which cannot be produced here, enter the whole pipeline).
//
// An Executor is bound to one host and is cheap to create: no I/O happens until the first
// run(). Connections (SSH sessions) are opened on first use and reused for later calls. An
// Executor is not thread-safe; fan_out() uses one thread per Executor.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "util/result.h"

namespace cc::remote {

/// What to run. By default `argv` runs without a shell: the local executor execs it directly,
/// the SSH executor sends shell_quote(argv) so the remote login shell sees exactly these
/// arguments. With `shell = true`, argv must hold exactly one string: a POSIX sh script that
/// runs as `sh -c SCRIPT` (pipes, redirections, $VARS are then interpreted, deliberately).
struct Command {
  std::vector<std::string> argv;
  bool shell = false;
};

struct RunOptions {
  /// What the command is for, in a few words ("rank 2's wrapper", "the cleanup of /tmp/x"),
  /// shown in error messages instead of the command line (which may be a long internal
  /// script). Empty: the command line, shortened.
  std::string what;
  /// Limit for the whole command, from start to exit status (default 30 s). On expiry the
  /// remote process is signalled (TERM, then KILL), and the result has timed_out = true.
  std::chrono::milliseconds timeout{30'000};
  /// Bytes written to the command's stdin, then EOF. Without it stdin is empty (EOF at once).
  std::optional<std::string> stdin_data;
  /// Keep stdin open after stdin_data was written, until the command ends (no EOF is sent). A
  /// remote watchdog can then read stdin's end as the loss of this connection (launch/).
  bool keep_stdin_open = false;
  /// With keep_stdin_open: once stdin_data is written, `heartbeat_data` is written to stdin
  /// every `heartbeat` (0: never), so a remote watchdog can tell a silent network cut from a
  /// quiet command (launch/wrapper.h).
  std::chrono::milliseconds heartbeat{0};
  std::string heartbeat_data = "\n";
  /// With heartbeat (SSH only): the connection counts as lost (an error from run()) when data
  /// sent stays unacknowledged this long (TCP_USER_TIMEOUT on Linux, TCP_RXT_CONNDROPTIME on
  /// macOS; 0: the system's default of many minutes).
  std::chrono::milliseconds heartbeat_timeout{0};
  /// When set, called with each piece of output as it arrives (fd 1 = stdout, 2 = stderr; any
  /// split, not whole lines), on the thread inside run(); that output is then not kept in
  /// CommandResult::out / err.
  std::function<void(int fd, std::string_view bytes)> on_output;
  /// When set, replaces the util::interrupted() check (the caller ends the command its own way
  /// on Ctrl-C): polled at least every 100 ms; once it returns true the command is killed as
  /// on timeout (timed_out = true).
  std::function<bool()> cancelled;
};

/// The outcome of a command that ran (whatever its exit status).
struct CommandResult {
  int exit_status = -1;  // 0..255 as the shell reports it; 128+N when killed by signal N;
                         // -1 when timed out or the status never arrived
  bool timed_out = false;
  std::string out;  // stdout bytes, kept apart from stderr
  std::string err;  // stderr bytes
  /// Bytes of stdout / stderr that were not kept in out / err (fan_out's `keep`); 0: all kept.
  std::size_t out_hidden = 0;
  std::size_t err_hidden = 0;
  std::chrono::microseconds elapsed{0};
  /// The command died by a signal (SSH "exit-signal", WIFSIGNALED): exit_status is then 128+N
  /// (255 for a signal without a portable number). False for a command that exited 128+N.
  bool signaled = false;
};

class Executor {
 public:
  virtual ~Executor() = default;

  /// The host's name as the operator gave it (an SSH alias, "localhost", a replay host).
  virtual const std::string& host() const = 0;

  /// Runs a command. A command that ran and exited non-zero is a success of run() (see
  /// exit_status). Errors: ExitCode::kUnreachable when the host cannot be reached (connect
  /// timeout, refused, authentication failed, host key unknown or changed): the message names
  /// the host and what to do; ExitCode::kUsage for a malformed Command or a missing recording.
  virtual util::Result<CommandResult> run(const Command& cmd, const RunOptions& opts) = 0;

  /// The SHA256 fingerprint ("SHA256:" + unpadded base64, as `ssh-keygen -l` prints it) of the
  /// host key this executor's connection authenticated, once a run() has connected; "" when
  /// there is none (not connected yet, the local machine, a fake). Discovery records it as one
  /// piece of the host's identity (discovery::HostFacts::ssh_host_key).
  virtual std::string host_key_fingerprint() const { return {}; }
  /// What can be known to be wrong about reaching this host without connecting to it, or ok:
  /// the SSH executor checks its destination as check_destination does (a malformed one, a
  /// scope that is no interface of this machine, an SSH config that cannot be used, a name
  /// that resolves nowhere); the local and replay executors have nothing to check. Never
  /// runs anything on the host. Errors: kUsage, the message naming the host and what to fix.
  /// Commands that change or run something check every host this way before acting on any
  /// (remote::check_each).
  virtual util::Status check() const { return {}; }

  /// Copies a local regular file of at most kMaxUploadBytes to `remote_path` with permission
  /// bits `mode`, atomically (written to a temporary name, then renamed). The file is read
  /// whole into memory first. Errors as for run(), plus kUsage for a local file that cannot
  /// be read, is not a regular file or is larger.
  virtual util::Status upload(const std::filesystem::path& local, const std::string& remote_path,
                              unsigned mode, std::chrono::milliseconds timeout) = 0;
};

/// Checks a Command before any executor runs it: argv not empty, exactly one script for a shell
/// command, no NUL byte in any argument (no program can receive one). Errors: ExitCode::kUsage,
/// naming the argument's index and the program.
util::Status validate_command(const Command& cmd);

/// The size cap of one uploaded file: 4 GiB (uploads are programs and inputs; model weights
/// belong to a bulk copy, not to a job's upload list).
inline constexpr std::uintmax_t kMaxUploadBytes = 4ull << 30;

}  // namespace cc::remote
