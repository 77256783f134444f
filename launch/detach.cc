#include "launch/detach.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace cc::launch {

util::Result<pid_t> start_in_background(const ForkFunction& fork_fn, OutputMux* logs) {
  std::fflush(nullptr);  // what is buffered is written once, not by both processes
  const pid_t child = fork_fn();
  if (child < 0) {
    const int err = errno;
    // No job will write there: an empty run directory would pass for a run in `LOGS/`.
    if (logs != nullptr) logs->discard();
    const char* what = err == EAGAIN   ? "This machine is at its limit of processes (`ulimit -u`): "
                                         "end some, then launch again"
                       : err == ENOMEM ? "This machine is out of memory: free some, then launch "
                                         "again"
                                       : "Launch again";
    return util::error(util::ExitCode::kCheckFailed,
                       fmt::format("cannot start in the background: fork failed: {}; nothing was "
                                   "started. {} (or without --detach, in the foreground)",
                                   std::strerror(err), what));
  }
  if (child > 0) return child;
  ::setsid();
  const int devnull = ::open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    if (devnull > 2) ::close(devnull);
  }
  return pid_t{0};
}

}  // namespace cc::launch
