#include "comm/transport/transport.h"

#include <time.h>

#include "comm/error.h"

namespace cc::comm {

Deadline deadline_in(std::chrono::milliseconds timeout) {
#if defined(CLOCK_MONOTONIC_COARSE) && defined(__GLIBCXX__)
  // libstdc++'s steady_clock is CLOCK_MONOTONIC, whose epoch the coarse clock shares.
  timespec ts{};
  if (::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0) {
    const auto since = std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
    return Deadline(std::chrono::duration_cast<Clock::duration>(since)) + timeout;
  }
#endif
  return Clock::now() + timeout;
}

void Transport::check_interrupt(Clock::time_point now) {
  if (!interrupted_ || now < next_interrupt_check_) return;
  next_interrupt_check_ = now + kInterruptCheckEvery;
  if (interrupted_()) {
    throw Error(ErrorKind::kInterrupted, "interrupted (Config::interrupted said to give up)");
  }
}

void wait_all(Transport& t, std::vector<Request>& reqs, Deadline deadline) {
  for (Request& r : reqs) {
    if (!r.done()) t.wait(r, deadline);
  }
}

}  // namespace cc::comm
