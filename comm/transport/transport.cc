#include "comm/transport/transport.h"

#include <time.h>

#include <string>

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

std::string context_mismatch(uint32_t got, uint32_t want) {
  return "sent a message of communicator " + std::to_string(got) +
         " where this rank expected one of communicator " + std::to_string(want) +
         " (0 is the world, others come from Communicator::split): between two ranks, calls on "
         "the communicators they share must come in the same order on both";
}

Error peer_gave_up(int peer, int failed, int self, int size) {
  const std::string who = "rank " + std::to_string(peer);
  if (failed < 0 || failed >= size || failed == peer) {
    return Error(ErrorKind::kPeerLost, "lost " + who + ": it failed and aborted the job", {peer});
  }
  const std::string text =
      failed == self
          ? who + " gave up on this rank (" + std::to_string(self) + "): its own error names this "
                "rank (it waited too long for it, or its message did not fit this rank's call)"
          : who + " gave up because of rank " + std::to_string(failed) + ": its own error names "
                "that rank (which died, stopped, fell behind or called something else)";
  return Error(ErrorKind::kPeerLost, text, {failed, peer});
}

void check_arrival(int peer, uint32_t got_context, uint32_t want_context, uint64_t got_bytes,
                   size_t want_bytes) {
  const std::string who = "rank " + std::to_string(peer);
  if (got_context != want_context) {
    throw Error(ErrorKind::kProtocol, who + " " + context_mismatch(got_context, want_context),
                {peer});
  }
  if (got_bytes != want_bytes) {
    throw Error(ErrorKind::kProtocol,
                who + " sent a message of " + std::to_string(got_bytes) + " bytes where " +
                    std::to_string(want_bytes) +
                    " were expected: the ranks called different collectives, counts or types",
                {peer});
  }
}

void wait_all(Transport& t, std::span<Request> reqs, Deadline deadline) {
  for (Request& r : reqs) {
    if (!r.done()) t.wait(r, deadline);
  }
}

}  // namespace cc::comm
