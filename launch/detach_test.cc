// launch --detach's fork, through a fake: a fork that fails is a failure of this machine, named
// with its system error (it was exit 2, "usage", with no reason given). And through a real
// fork: the child starts nothing until its record is saved, and ends when it cannot be.
#include "launch/detach.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <thread>

#include <doctest/doctest.h>

#include "tests/temp_dir.h"
#include "util/atomic_file.h"

namespace {

// A record that is always saved.
cc::util::Status saved(pid_t) {
  return {};
}

}  // namespace

TEST_CASE("detach: a fork that fails says why, exit 1, nothing started") {
  int calls = 0;
  auto r = cc::launch::start_in_background(
      [&calls] {
        ++calls;
        errno = EAGAIN;
        return pid_t{-1};
      },
      saved);
  CHECK(calls == 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == cc::util::ExitCode::kCheckFailed);
  CHECK(r.error().message ==
        "cannot start in the background: fork failed: Resource temporarily unavailable; nothing "
        "was started. This machine is at its limit of processes (`ulimit -u`): end some, then "
        "launch again (or without --detach, in the foreground)");

  auto nomem = cc::launch::start_in_background(
      [] {
        errno = ENOMEM;
        return pid_t{-1};
      },
      saved);
  REQUIRE_FALSE(nomem.ok());
  CHECK(nomem.error().code == cc::util::ExitCode::kCheckFailed);
  CHECK(nomem.error().message.find("fork failed: Cannot allocate memory; nothing was started. "
                                   "This machine is out of memory") != std::string::npos);
}

TEST_CASE("detach: the parent gets the child's pid and is left as it was") {
  pid_t recorded = 0;
  auto r = cc::launch::start_in_background([] { return pid_t{4242}; },
                                           [&recorded](pid_t child) {
                                             recorded = child;
                                             return cc::util::Status{};
                                           });
  CHECK(recorded == 4242);
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
  auto r = cc::launch::start_in_background(failing, saved, mux->get());
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
  REQUIRE_FALSE(cc::launch::start_in_background(failing, saved, again->get()).ok());
  CHECK_FALSE(fs::exists(logs / "job-2"));
  CHECK(fs::is_directory(logs / "job-0"));
  CHECK(fs::is_regular_file(logs / "notes.txt"));

  // A file another process put in the run's directory keeps it (and so its parents).
  auto third = cc::launch::OutputMux::open(tmp.path / "new" / "job-3", {"h1"}, quiet);
  REQUIRE(third.ok());
  REQUIRE(cc::util::write_file_atomic(tmp.path / "new" / "job-3" / "other", "x\n").ok());
  REQUIRE_FALSE(cc::launch::start_in_background(failing, saved, third->get()).ok());
  CHECK(fs::is_regular_file(tmp.path / "new" / "job-3" / "other"));
  CHECK_FALSE(fs::exists(tmp.path / "new" / "job-3" / "rank-0.out"));

  // A fork that succeeds (the parent) leaves the logs to the child.
  auto kept = cc::launch::OutputMux::open(logs / "job-4", {"h1"}, quiet);
  REQUIRE(kept.ok());
  REQUIRE(cc::launch::start_in_background([] { return pid_t{4242}; }, saved, kept->get()).ok());
  CHECK(fs::is_regular_file(logs / "job-4" / "rank-0.out"));
}

namespace {

// What a real child did: forks through start_in_background; the child, if it is let go on,
// creates `ran` (as the job's launcher would start the ranks) and exits 0. `record` runs in
// the parent. The parent's result, and the child's exit status when the parent still has it
// to reap (-1: reaped already, by start_in_background).
struct Forked {
  cc::util::Result<pid_t> result;
  int child_status = -1;
};

Forked fork_for_real(const std::filesystem::path& ran, const cc::launch::RecordFunction& record,
                     std::chrono::milliseconds wait = cc::launch::kRecordWait) {
  Forked f{cc::launch::start_in_background([] { return ::fork(); }, record, nullptr, wait)};
  if (f.result.ok() && *f.result == 0) {  // the child, let go on
    const int fd = ::open(ran.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    ::_exit(fd >= 0 ? 0 : 3);
  }
  if (f.result.ok()) {
    int status = 0;
    if (::waitpid(*f.result, &status, 0) == *f.result) f.child_status = status;
  }
  return f;
}

}  // namespace

TEST_CASE("detach: the child starts nothing before its record is saved") {
  cc::test::TempDir tmp{"cc-detach-test"};
  const auto ran = tmp.path / "ran";
  bool ran_before_record = true;
  pid_t recorded = 0;
  auto f = fork_for_real(ran, [&](pid_t child) {
    // The child is waiting: give it time to get ahead, if it could.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ran_before_record = std::filesystem::exists(ran);
    recorded = child;
    return cc::util::Status{};
  });
  REQUIRE(f.result.ok());
  CHECK(*f.result > 0);
  CHECK(recorded == *f.result);
  CHECK_FALSE(ran_before_record);
  REQUIRE(WIFEXITED(f.child_status));
  CHECK(WEXITSTATUS(f.child_status) == 0);
  CHECK(std::filesystem::exists(ran));  // let go on, it ran
}

TEST_CASE("detach: a record that cannot be saved ends the child, which ran nothing") {
  namespace fs = std::filesystem;
  cc::test::TempDir tmp{"cc-detach-test"};
  const auto ran = tmp.path / "ran";
  cc::launch::OutputOptions quiet;
  quiet.out = nullptr;
  quiet.err = nullptr;
  const fs::path run_logs = tmp.path / "logs" / "job-1";
  auto mux = cc::launch::OutputMux::open(run_logs, {"h1"}, quiet);
  REQUIRE(mux.ok());
  pid_t child = 0;
  auto r = cc::launch::start_in_background(
      [] { return ::fork(); },
      [&child](pid_t c) {
        child = c;
        return cc::util::Status{cc::util::error(
            cc::util::ExitCode::kUsage, "/state/jobs/job-1.json: cannot write: No space left")};
      },
      mux->get());
  if (r.ok() && *r == 0) {  // the child, let go on: what the fix forbids
    const int fd = ::open(ran.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    ::_exit(fd >= 0 ? 0 : 3);
  }
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == cc::util::ExitCode::kUsage);
  CHECK(r.error().message ==
        "/state/jobs/job-1.json: cannot write: No space left; the job was not started (a job "
        "must have a record, or `clusterctl logs` and `stop` cannot find it): fix that, then "
        "launch again");
  REQUIRE(child > 0);
  // Reaped already: no such child is left, running or not.
  int status = 0;
  CHECK(::waitpid(child, &status, WNOHANG) == -1);
  CHECK(errno == ECHILD);
  CHECK_FALSE(fs::exists(ran));
  CHECK_FALSE(fs::exists(run_logs));  // never run: no log directory either
}

TEST_CASE("detach: a child whose parent never answers ends without running anything") {
  cc::test::TempDir tmp{"cc-detach-test"};
  const auto ran = tmp.path / "ran";
  // The parent is stuck past the child's wait (200 ms here), then records the job.
  auto f = fork_for_real(
      ran,
      [](pid_t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        return cc::util::Status{};
      },
      std::chrono::milliseconds(200));
  REQUIRE(f.result.ok());
  REQUIRE(WIFEXITED(f.child_status));
  CHECK(WEXITSTATUS(f.child_status) == 1);
  CHECK_FALSE(std::filesystem::exists(ran));
}
