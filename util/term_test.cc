#include "util/term.h"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

TEST_CASE("make_blocking: a descriptor inherited non-blocking is made blocking, once") {
  // mlx#2144: a stdout shared with a process that set O_NONBLOCK failed writes to a slow reader
  // with EAGAIN, and stdio dropped what it held.
  int fds[2] = {-1, -1};
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::fcntl(fds[1], F_SETFL, ::fcntl(fds[1], F_GETFL) | O_NONBLOCK) == 0);
  CHECK(cc::util::make_blocking(fds[1]));
  CHECK((::fcntl(fds[1], F_GETFL) & O_NONBLOCK) == 0);
  CHECK_FALSE(cc::util::make_blocking(fds[1]));  // already blocking: nothing to do
  CHECK_FALSE(cc::util::make_blocking(fds[0]));
  ::close(fds[0]);
  ::close(fds[1]);
  CHECK_FALSE(cc::util::make_blocking(fds[1]));  // closed: nothing done, no crash
}
