// The restart loop against a fake job runner: which attempts run, under which job ids, and
// what the outcome says.
#include "launch/restart.h"

#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "util/interrupt.h"

using namespace cc::launch;
using cc::util::ExitCode;

namespace {

// A job runner that answers attempt i (0-based) with codes[i], recording the job ids.
struct FakeJob {
  explicit FakeJob(std::vector<ExitCode> c) : codes(std::move(c)) {}
  std::vector<ExitCode> codes;
  std::vector<std::string> ids;
  std::vector<std::string> numbers;  // "N of M" per attempt
  std::vector<std::string> notes;
  bool interrupt_after_first = false;
  bool no_reason = false;  // the ranks all ended before the watcher named a cause

  cc::util::Result<JobOutcome> run(const Restart& restart) {
    return run_with_restarts(
        restart, "job-1",
        [&](const Attempt& a) -> cc::util::Result<JobOutcome> {
          ids.push_back(a.job_id);
          numbers.push_back(std::to_string(a.number) + " of " + std::to_string(a.of));
          if (interrupt_after_first) cc::util::set_interrupted(true);
          const ExitCode c = codes.at(ids.size() - 1);
          if (c == ExitCode::kUnreachable) return cc::util::error(c, "h2: cannot connect");
          JobOutcome o;
          o.code = c;
          o.reason = c == ExitCode::kOk || no_reason ? "" : "rank 0 on h1 failed (exit 1)";
          RankOutcome r;
          r.host = "h1";
          r.started = r.finished = true;
          r.exit_status = c == ExitCode::kOk ? 0 : 1;
          o.ranks = {r};
          o.first_failed = c == ExitCode::kOk ? -1 : 0;
          return o;
        },
        [&](const std::string& text) { notes.push_back(text); });
  }
};

Restart on_failure(int max) {
  Restart r;
  r.policy = Restart::Policy::kOnFailure;
  r.max_attempts = max;
  return r;
}

}  // namespace

TEST_CASE("restart: never runs the job once, whatever happened") {
  FakeJob job({ExitCode::kJobFailed});
  auto out = job.run(Restart{});
  REQUIRE(out.ok());
  CHECK(out->code == ExitCode::kJobFailed);
  CHECK(job.ids == std::vector<std::string>{"job-1"});
  CHECK(job.notes.empty());
  CHECK(out->reason == "rank 0 on h1 failed (exit 1)");
  CHECK(job.numbers == std::vector<std::string>{"1 of 1"});  // one attempt: no marker in logs
}

TEST_CASE("restart: on-failure retries until an attempt succeeds, ids -a2, -a3, reason suffixed") {
  FakeJob job({ExitCode::kJobFailed, ExitCode::kJobFailed, ExitCode::kOk});
  auto out = job.run(on_failure(5));
  REQUIRE(out.ok());
  CHECK(out->code == ExitCode::kOk);
  CHECK(job.ids == std::vector<std::string>{"job-1", "job-1-a2", "job-1-a3"});
  CHECK(job.numbers == std::vector<std::string>{"1 of 5", "2 of 5", "3 of 5"});
  REQUIRE(job.notes.size() == 2);
  CHECK(job.notes[0].starts_with("attempt 1 of 5 failed:\n"));
  // The summary table of a job of one rank: no "failed first", no "1 ranks".
  CHECK(job.notes[0].find("<- failed\n") != std::string::npos);
  CHECK(job.notes[0].find("job failed: rank 0 on h1 failed (exit 1); 0/1 rank exited 0\n") !=
        std::string::npos);
  CHECK(job.notes[0].ends_with("starting attempt 2 (restart: on-failure)"));
  CHECK(job.notes[1].starts_with("attempt 2 of 5 failed:\n"));
  CHECK(out->reason.empty());  // it succeeded: no reason, and no " (attempt 3 of 5)" alone
}

TEST_CASE("restart: on-failure stops after max_attempts, the last reason says which") {
  FakeJob job({ExitCode::kJobFailed, ExitCode::kJobFailed, ExitCode::kJobFailed});
  auto out = job.run(on_failure(3));
  REQUIRE(out.ok());
  CHECK(out->code == ExitCode::kJobFailed);
  CHECK(job.ids.size() == 3);
  CHECK(job.ids.back() == "job-1-a3");
  CHECK(out->reason == "rank 0 on h1 failed (exit 1) (attempt 3 of 3)");
}

TEST_CASE("restart: a later attempt's reason is the verdict's even when the watcher named none") {
  // A job whose ranks all ended in one tick has no reason of the watcher's: the last attempt's
  // verdict read "job failed:  (attempt 2 of 2)", and `jobs` showed that as why.
  FakeJob job({ExitCode::kJobFailed, ExitCode::kJobFailed});
  job.no_reason = true;
  auto out = job.run(on_failure(2));
  REQUIRE(out.ok());
  CHECK(out->reason == "rank 0 on h1 failed (exit 1) (attempt 2 of 2)");
  CHECK(render_summary(*out).find("job failed: rank 0 on h1 failed (exit 1) (attempt 2 of 2); "
                                  "0/1 rank exited 0\n") != std::string::npos);
}

TEST_CASE("restart: no retry after Ctrl-C, an interrupted attempt, or a set-up error") {
  SUBCASE("Ctrl-C during the first attempt") {
    FakeJob job({ExitCode::kJobFailed, ExitCode::kOk});
    job.interrupt_after_first = true;
    auto out = job.run(on_failure(3));
    cc::util::set_interrupted(false);
    REQUIRE(out.ok());
    CHECK(job.ids.size() == 1);
    CHECK(out->code == ExitCode::kJobFailed);
  }
  SUBCASE("the attempt ended interrupted") {
    FakeJob job({ExitCode::kInterrupted, ExitCode::kOk});
    auto out = job.run(on_failure(3));
    REQUIRE(out.ok());
    CHECK(job.ids.size() == 1);
    CHECK(out->code == ExitCode::kInterrupted);
  }
  SUBCASE("a host could not be set up (no rank started)") {
    FakeJob job({ExitCode::kJobFailed, ExitCode::kUnreachable, ExitCode::kOk});
    auto out = job.run(on_failure(3));
    REQUIRE_FALSE(out.ok());
    CHECK(out.error().code == ExitCode::kUnreachable);
    CHECK(job.ids == std::vector<std::string>{"job-1", "job-1-a2"});
  }
}

TEST_CASE("restart: each attempt's start is marked in the logs by clusterctl, with its time") {
  // The attempts of `restart: on-failure` share rank-R.out: two attempts printing "attempt"
  // read "attempt\nattempt", nothing between them.
  CHECK(attempt_marker(Attempt{"job-1-a2", 2, 3}, "2026-12-07T02:31:05Z") ==
        "--- clusterctl: attempt 2 of 3 started 2026-12-07T02:31:05Z (job job-1-a2) ---");
}
