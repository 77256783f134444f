// The Executor for this machine: posix_spawn, no shell unless the Command asks for one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "remote/executor.h"

namespace cc::remote {

/// Runs commands as child processes of clusterctl.
///  - argv runs through posix_spawnp (PATH lookup, no shell); Command::shell runs /bin/sh -c
///    SCRIPT. An executable file without a "#!" line runs under /bin/sh, as execvp(3) runs it.
///  - stdout and stderr are separate pipes; RunOptions::stdin_data is written to stdin, then EOF.
///  - The child leads its own process group. On timeout, and when util::interrupted() becomes
///    true (checked every 100 ms), the whole group gets SIGTERM (its traps run), then SIGKILL
///    for what is left after a second.
///  - Like a shell: a program that cannot be found gives exit status 127 (126 when it is not
///    executable) with "clusterctl: NAME: command not found" on stderr; death by signal N
///    gives 128+N.
///  - Output is read until the process has exited and both pipes are closed, as ssh does: a
///    background process that keeps them open holds run() until the timeout.
/// Errors of run(): kUsage for an empty argv, a shell Command without exactly one script, or an
/// argument containing a NUL byte; kInterrupted after Ctrl-C; kUnreachable when no process can
/// be created (out of processes or descriptors; the message gives the OS error).
/// Thread-safe: several LocalExecutors may run at once (fan_out), with no lock; children never
/// inherit another run's pipes (util::cloexec_pipe).
class LocalExecutor final : public Executor {
 public:
  /// `host` is the name shown to the operator. Commands get clusterctl's environment.
  explicit LocalExecutor(std::string host = "local") : host_(std::move(host)) {}
  /// Commands get `environment` ("NAME=VALUE" each) as their whole environment instead (a
  /// program is still looked for in clusterctl's PATH).
  LocalExecutor(std::string host, std::vector<std::string> environment)
      : host_(std::move(host)), environment_(std::move(environment)) {}

  const std::string& host() const override { return host_; }
  util::Result<CommandResult> run(const Command& cmd, const RunOptions& opts) override;
  /// A local atomic copy (util::write_file_atomic) with `mode`; the whole file is read into
  /// memory first. Its temporary is named, and those earlier uploads left are removed, as an
  /// SSH upload's (upload_temp.h: LocalUpload); `timeout` bounds that removal.
  util::Status upload(const std::filesystem::path& local, const std::string& remote_path,
                      unsigned mode, std::chrono::milliseconds timeout) override;

 private:
  std::string host_;
  std::optional<std::vector<std::string>> environment_;
};

/// The part of `env` ("NAME=VALUE" entries, as `environ`) that an SSH session to this machine
/// would have too, as the environment of a rank on `local` in a job with other hosts: a shell
/// variable set for the launch (OMP_NUM_THREADS=8 clusterctl launch ...) would otherwise reach
/// that rank alone, not the ranks that SSH starts (sshd passes on only what it sets itself and
/// LANG/LC_*; openpmix/prrte#304). Kept: PATH, HOME, USER, LOGNAME, SHELL, MAIL, TZ, TMPDIR,
/// LANG and LC_*. `dropped`, when given, receives the names of the others, in order.
std::vector<std::string> session_environment(const std::vector<std::string>& env,
                                             std::vector<std::string>* dropped = nullptr);

/// This process's environment as "NAME=VALUE" entries.
std::vector<std::string> current_environment();

}  // namespace cc::remote
