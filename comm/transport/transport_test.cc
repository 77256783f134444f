// transport.h's own helpers: deadline_in and LazyDeadline.
#include "comm/transport/transport.h"

#include <doctest/doctest.h>

#include <thread>

namespace cc::comm {
namespace {

using std::chrono::milliseconds;

TEST_CASE("deadline: a lazy deadline starts counting at its first use, then stays put") {
  const LazyDeadline d(milliseconds(5000));
  std::this_thread::sleep_for(milliseconds(50));
  const auto before = Clock::now();
  const Deadline first = d;  // the clock is read here, not at construction
  const auto after = Clock::now();
  // deadline_in reads a coarse clock (up to a tick, 1-4 ms, behind): allow 10 ms.
  CHECK(first >= before + milliseconds(5000) - milliseconds(10));
  CHECK(first <= after + milliseconds(5000));
  std::this_thread::sleep_for(milliseconds(20));
  CHECK(Deadline(d) == first);  // every wait of one call shares the one reading
  const Deadline fixed = Clock::now() + milliseconds(7);
  const LazyDeadline f(fixed);
  std::this_thread::sleep_for(milliseconds(20));
  CHECK(Deadline(f) == fixed);
}

}  // namespace
}  // namespace cc::comm
