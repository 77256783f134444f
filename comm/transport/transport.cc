#include "comm/transport/transport.h"

#include <time.h>

#include <iterator>
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

std::string describe_signature(Signature s) {
  if (s == kReducesNothing) {
    return "a call that reduces nothing (all_gather, broadcast, all_to_all, barrier, send)";
  }
  const unsigned type = (s - 1u) / 4u, op = (s - 1u) % 4u;
  if (type >= std::size(kAllDataTypes)) return "an unknown call (signature " + std::to_string(s) + ")";
  // Type names with their width (nccl-tests' "float" and "half" say less).
  static constexpr const char* kNames[] = {"float32", "float64", "float16", "bfloat16",
                                           "int8",    "int16",   "int32",   "int64",
                                           "uint8",   "uint16",  "uint32",  "uint64"};
  static_assert(std::size(kNames) == std::size(kAllDataTypes));
  const std::string name = kNames[type];
  return (name[0] == 'i' ? "an " : "a ") + name + " " + std::string(to_string(kAllReduceOps[op])) +
         " reduction";
}

std::string signature_mismatch(Signature got, Signature want) {
  std::string mine = describe_signature(want);
  // "this rank's call is a call that reduces nothing" reads badly: "this rank's call reduces
  // nothing (...)".
  mine = want == kReducesNothing ? "reduces nothing (all_gather, broadcast, all_to_all, "
                                   "barrier, send)"
                                 : "is " + mine;
  return "sent data of " + describe_signature(got) + " where this rank's call " + mine +
         ": the ranks called different collectives, or reduced with different dtypes or ops";
}

void check_arrival(int peer, uint32_t got_context, uint32_t want_context, Signature got_sig,
                   Signature want_sig, uint64_t got_bytes, size_t want_bytes) {
  const std::string who = "rank " + std::to_string(peer);
  if (got_context != want_context) {
    throw Error(ErrorKind::kProtocol, who + " " + context_mismatch(got_context, want_context),
                {peer});
  }
  if (got_sig != want_sig) {
    throw Error(ErrorKind::kProtocol, who + " " + signature_mismatch(got_sig, want_sig), {peer});
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
