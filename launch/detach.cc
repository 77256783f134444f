#include "launch/detach.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "util/atomic_file.h"
#include "util/exit_code.h"
#include "util/process.h"

namespace cc::launch {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kGo = 'g';  // the one byte the parent writes once the job is recorded

// In the child: waits for the parent's word. True only for kGo; false when the parent closed
// its end (it failed to record the job, or it ended) or said nothing within `wait`.
bool wait_for_go(int fd, std::chrono::milliseconds wait) {
  const auto deadline = Clock::now() + wait;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    char c = 0;
    const ssize_t got = ::read(fd, &c, 1);
    if (got < 0 && errno == EINTR) continue;
    return got == 1 && c == kGo;
  }
}

// In the parent, after the child was told to end: reaps it, so no zombie stays. The child
// ends at once (its pipe is closed); one that has not within 5 s is killed: it is this
// process's own child (waitpid said so), blocked before it started anything.
void reap_unreleased(pid_t child) {
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(child, &status, WNOHANG);
    if (r == child || (r < 0 && errno != EINTR)) return;  // reaped, or not a child (a fake)
    if (r == 0 && Clock::now() >= deadline) {
      ::kill(child, SIGKILL);
      while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

util::Result<pid_t> start_in_background(const ForkFunction& fork_fn, const RecordFunction& record,
                                        OutputMux* logs, std::chrono::milliseconds record_wait) {
  int go[2] = {-1, -1};
  if (!util::cloexec_pipe(go)) {
    const int err = errno;
    if (logs != nullptr) logs->discard();
    return util::error(util::ExitCode::kCheckFailed,
                       fmt::format("cannot start in the background: pipe failed: {}; nothing "
                                   "was started. Launch again (or without --detach, in the "
                                   "foreground)",
                                   std::strerror(err)));
  }
  util::UniqueFd go_read(go[0]), go_write(go[1]);
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
  if (child > 0) {
    // The parent keeps its read end open until it has written: a child that has died cannot
    // make the write fail (a record naming a dead launcher reads "lost", which it is).
    if (auto st = record(child); !st) {
      go_write = util::UniqueFd();  // the child reads the end of the pipe and ends
      reap_unreleased(child);
      if (logs != nullptr) logs->discard();  // never run: no log directory of it either
      util::Error e = st.error();
      e.message +=
          "; the job was not started (a job must have a record, or `clusterctl logs` "
          "and `stop` cannot find it): fix that, then launch again";
      return e;
    }
    const char c = kGo;
    while (::write(go_write.get(), &c, 1) < 0 && errno == EINTR) {
    }
    return child;
  }
  go_write = util::UniqueFd();  // so that the parent's end closing is seen here
  ::setsid();
  const int devnull = ::open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    if (devnull > 2) ::close(devnull);
  }
  // Nothing has been started: end without running anything (no destructor, no atexit: the
  // parent owns what both processes share, such as the log directory).
  if (!wait_for_go(go_read.get(), record_wait)) ::_exit(util::to_int(util::ExitCode::kCheckFailed));
  return pid_t{0};
}

}  // namespace cc::launch
