// Process exit codes of clusterctl, documented in README.md ("Exit codes") and used by every
// subcommand. Only cli/main.cc turns them into a process exit status.
#pragma once

#include <exception>
#include <system_error>

namespace cc::util {

enum class ExitCode : int {
  kOk = 0,             // everything asked for was done and every check passed
  kCheckFailed = 1,    // the tool worked, and a check it ran failed
  kUsage = 2,          // bad command line or bad input file; nothing was changed
  kUnreachable = 3,    // one or more hosts could not be reached (connect, auth, host key)
  kJobFailed = 4,      // a launched job failed
  kInterrupted = 130,  // SIGINT (Ctrl-C) or SIGTERM
};

constexpr int to_int(ExitCode c) {
  return static_cast<int>(c);
}

/// The more severe of two outcomes, for commands that aggregate many hosts:
/// interrupted > unreachable > job failed > usage > check failed > ok.
constexpr ExitCode worst(ExitCode a, ExitCode b) {
  auto rank = [](ExitCode c) {
    switch (c) {
      case ExitCode::kOk:
        return 0;
      case ExitCode::kCheckFailed:
        return 1;
      case ExitCode::kUsage:
        return 2;
      case ExitCode::kJobFailed:
        return 3;
      case ExitCode::kUnreachable:
        return 4;
      case ExitCode::kInterrupted:
        return 5;
    }
    return 5;
  };
  return rank(a) >= rank(b) ? a : b;
}

/// The exit status of a program that wrote to a pipe whose reader had gone (`clusterctl ... |
/// head -1`): 128 + SIGPIPE (13 on Linux and macOS), what a shell reports for a program the
/// signal ended. clusterctl ignores SIGPIPE (util::install_interrupt_handler), so the failed
/// write surfaces as an exception (fmt throws fmt::system_error) that cli/main.cc turns into
/// this status, quietly.
inline constexpr int kBrokenPipeStatus = 141;

/// Whether `e` is a write that failed because the reading end of a pipe or socket was closed
/// (EPIPE), such as fmt's "cannot write to file: Broken pipe".
inline bool is_broken_pipe(const std::exception& e) {
  const auto* sys = dynamic_cast<const std::system_error*>(&e);
  return sys != nullptr && sys->code() == std::errc::broken_pipe;
}

}  // namespace cc::util
