// Process exit codes of clusterctl, documented in README.md ("Exit codes") and used by every
// subcommand. Only cli/main.cc turns them into a process exit status.
#pragma once

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

}  // namespace cc::util
