#include "util/process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

TEST_CASE("process_start_time names a process, not a pid") {
  auto me = cc::util::process_start_time(::getpid());
  REQUIRE(me.has_value());
  CHECK(me == cc::util::process_start_time(::getpid()));  // stable
  ::usleep(30'000);  // start times count in clock ticks (10 ms): the child's must differ
  const pid_t child = ::fork();
  if (child == 0) {
    ::usleep(20'000);
    ::_exit(0);
  }
  auto theirs = cc::util::process_start_time(child);
  REQUIRE(theirs.has_value());
  CHECK(theirs != me);  // another process (started later)
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK_FALSE(cc::util::process_start_time(child).has_value());  // reaped: gone
  CHECK_FALSE(cc::util::process_start_time(0).has_value());
  CHECK_FALSE(cc::util::host_name().empty());
}
