// launch --detach's fork, through a fake: a fork that fails is a failure of this machine, named
// with its system error (it was exit 2, "usage", with no reason given).
#include "launch/detach.h"

#include <cerrno>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "tests/temp_dir.h"
#include "util/atomic_file.h"

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

TEST_CASE("detach: a fork that fails removes the run's log directory, and only what it made") {
  namespace fs = std::filesystem;
  cc::test::TempDir tmp{"cc-detach-test"};
  auto failing = [] {
    errno = EAGAIN;
    return pid_t{-1};
  };
  cc::launch::OutputOptions quiet;  // nothing on the test's terminal
  quiet.out = nullptr;
  quiet.err = nullptr;
  // LOGS and its parent made for this run: all of it goes (it was a run's log directory left
  // empty, which `ls LOGS` showed as a run).
  const fs::path fresh = tmp.path / "state" / "logs" / "job-1";
  auto mux = cc::launch::OutputMux::open(fresh, {"h1", "h2"}, quiet);
  REQUIRE(mux.ok());
  REQUIRE(fs::is_regular_file(fresh / "rank-1.err"));
  auto r = cc::launch::start_in_background(failing, mux->get());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == cc::util::ExitCode::kCheckFailed);
  CHECK_FALSE(fs::exists(fresh));
  CHECK_FALSE(fs::exists(tmp.path / "state"));
  CHECK(fs::exists(tmp.path));
  (*mux)->note("after discard");  // the mux stays usable without its logs
  (*mux)->feed(0, 1, "a line no log gets\n");

  // LOGS there already, with an earlier run and a file of someone else's: only this run goes.
  const fs::path logs = tmp.path / "logs";
  fs::create_directories(logs / "job-0");
  REQUIRE(cc::util::write_file_atomic(logs / "notes.txt", "mine\n").ok());
  auto again = cc::launch::OutputMux::open(logs / "job-2", {"h1"}, quiet);
  REQUIRE(again.ok());
  REQUIRE_FALSE(cc::launch::start_in_background(failing, again->get()).ok());
  CHECK_FALSE(fs::exists(logs / "job-2"));
  CHECK(fs::is_directory(logs / "job-0"));
  CHECK(fs::is_regular_file(logs / "notes.txt"));

  // A file another process put in the run's directory keeps it (and so its parents).
  auto third = cc::launch::OutputMux::open(tmp.path / "new" / "job-3", {"h1"}, quiet);
  REQUIRE(third.ok());
  REQUIRE(cc::util::write_file_atomic(tmp.path / "new" / "job-3" / "other", "x\n").ok());
  REQUIRE_FALSE(cc::launch::start_in_background(failing, third->get()).ok());
  CHECK(fs::is_regular_file(tmp.path / "new" / "job-3" / "other"));
  CHECK_FALSE(fs::exists(tmp.path / "new" / "job-3" / "rank-0.out"));

  // A fork that succeeds (the parent) leaves the logs to the child.
  auto kept = cc::launch::OutputMux::open(logs / "job-4", {"h1"}, quiet);
  REQUIRE(kept.ok());
  REQUIRE(cc::launch::start_in_background([] { return pid_t{4242}; }, kept->get()).ok());
  CHECK(fs::is_regular_file(logs / "job-4" / "rank-0.out"));
}
