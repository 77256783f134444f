// launch --detach's fork, through a fake: a fork that fails is a failure of this machine, named
// with its system error (it was exit 2, "usage", with no reason given).
#include "launch/detach.h"

#include <cerrno>
#include <string>

#include <doctest/doctest.h>

TEST_CASE("detach: a fork that fails says why, exit 1, nothing started") {
  int calls = 0;
  auto r = cc::launch::start_in_background([&calls] {
    ++calls;
    errno = EAGAIN;
    return pid_t{-1};
  });
  CHECK(calls == 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == cc::util::ExitCode::kCheckFailed);
  CHECK(r.error().message ==
        "cannot start in the background: fork failed: Resource temporarily unavailable; nothing "
        "was started. This machine is at its limit of processes (`ulimit -u`): end some, then "
        "launch again (or without --detach, in the foreground)");

  auto nomem = cc::launch::start_in_background([] {
    errno = ENOMEM;
    return pid_t{-1};
  });
  REQUIRE_FALSE(nomem.ok());
  CHECK(nomem.error().code == cc::util::ExitCode::kCheckFailed);
  CHECK(nomem.error().message.find("fork failed: Cannot allocate memory; nothing was started. "
                                   "This machine is out of memory") != std::string::npos);
}

TEST_CASE("detach: the parent gets the child's pid and is left as it was") {
  auto r = cc::launch::start_in_background([] { return pid_t{4242}; });
  REQUIRE(r.ok());
  CHECK(*r == 4242);
}
