#include "launch/job_state.h"

#include <unistd.h>

#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "util/process.h"

namespace cc::launch {
namespace {

// A record of job `name`, started at `us` microseconds after the epoch; running (its launcher:
// this test process, which lives) or ended.
JobRecord job_run_record(const std::string& id, const std::string& name, std::int64_t us,
                         bool running) {
  JobRecord r;
  r.id = id;
  r.name = name;
  r.started_us = us;
  r.started_at = "2026-12-07T05:40:01Z";
  if (running) {
    r.pid = ::getpid();
    r.pid_start = util::process_start_time(r.pid).value_or("");
    r.state = JobState::kRunning;
  } else {
    r.pid = 1;
    r.state = JobState::kSucceeded;
    r.exit_code = 0;
  }
  return r;
}

TEST_CASE(
    "job_state: runs are ordered by their start to the microsecond, never by the id's "
    "random part") {
  // Two runs in the same second: the id of the older one sorts after the newer one's.
  std::vector<JobRecord> jobs{
      job_run_record("train-20261207-054001-aaa", "train", 1'796'104'801'100'000, false),
      job_run_record("train-20261207-054001-fff", "train", 1'796'104'801'000'000, false)};
  sort_newest_first(jobs);
  CHECK(jobs[0].id == "train-20261207-054001-aaa");
  CHECK(jobs[1].id == "train-20261207-054001-fff");
  // The name picks the newest of the two ended runs.
  auto picked = resolve_job(jobs, "train", NameUse::kCurrentRun, "logs");
  REQUIRE(picked.ok());
  CHECK(picked->id == "train-20261207-054001-aaa");
}

TEST_CASE("job_state: a name that two running runs share is refused, naming both ids") {
  REQUIRE(util::process_start_time(::getpid()).has_value());
  std::vector<JobRecord> jobs{job_run_record("dup-b", "dup", 2'000'000, true),
                              job_run_record("dup-a", "dup", 1'000'000, true),
                              job_run_record("other-1", "other", 3'000'000, false)};
  sort_newest_first(jobs);
  auto picked = resolve_job(jobs, "dup", NameUse::kCurrentRun, "stop");
  REQUIRE_FALSE(picked.ok());
  CHECK(picked.error().code == util::ExitCode::kUsage);
  CHECK(picked.error().message ==
        "2 runs of job 'dup' are running: dup-b (running, started 2026-12-07T05:40:01Z), dup-a "
        "(running, started 2026-12-07T05:40:01Z); `clusterctl stop` takes one run: give its id "
        "(`clusterctl stop dup-b`)");
  // Every command that takes a name says so with its own name.
  auto logs = resolve_job(jobs, "dup", NameUse::kCurrentRun, "logs");
  REQUIRE_FALSE(logs.ok());
  CHECK(logs.error().message.find("`clusterctl logs dup-b`") != std::string::npos);
  // A run's id always names it.
  auto by_id = resolve_job(jobs, "dup-a", NameUse::kCurrentRun, "stop");
  REQUIRE(by_id.ok());
  CHECK(by_id->id == "dup-a");
}

TEST_CASE("job_state: a name means its one running run, even beside newer ended runs") {
  std::vector<JobRecord> jobs{job_run_record("t-new", "t", 5'000'000, false),
                              job_run_record("t-old", "t", 1'000'000, true)};
  sort_newest_first(jobs);
  auto picked = resolve_job(jobs, "t", NameUse::kCurrentRun, "stop");
  REQUIRE(picked.ok());
  CHECK(picked->id == "t-old");
}

TEST_CASE(
    "job_state: ended runs started in the same second (older records) are not told "
    "apart by their ids") {
  std::vector<JobRecord> jobs{job_run_record("old-x", "old", 7'000'000, false),
                              job_run_record("old-y", "old", 7'000'000, false)};
  sort_newest_first(jobs);
  auto picked = resolve_job(jobs, "old", NameUse::kCurrentRun, "logs");
  REQUIRE_FALSE(picked.ok());
  CHECK(picked.error().code == util::ExitCode::kUsage);
  CHECK(picked.error().message.starts_with("2 runs of job 'old' started in the same second"));
}

TEST_CASE("job_state: --forget's name must be one record's") {
  std::vector<JobRecord> jobs{job_run_record("f-2", "f", 2'000'000, false),
                              job_run_record("f-1", "f", 1'000'000, false),
                              job_run_record("g-1", "g", 1'000'000, false)};
  sort_newest_first(jobs);
  auto two = resolve_job(jobs, "f", NameUse::kOnlyRecord, "jobs --forget");
  REQUIRE_FALSE(two.ok());
  CHECK(two.error().message.starts_with(
      "2 job records have the name 'f': f-2 (succeeded, started 2026-12-07T05:40:01Z), f-1 "
      "(succeeded, started 2026-12-07T05:40:01Z); give the id of the one to drop"));
  auto one = resolve_job(jobs, "g", NameUse::kOnlyRecord, "jobs --forget");
  REQUIRE(one.ok());
  CHECK(one->id == "g-1");
  auto none = resolve_job(jobs, "h", NameUse::kOnlyRecord, "jobs --forget");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message.starts_with("no job 'h' in "));
}

TEST_CASE("job_state: a job name or run id typed wrong gets a \"did you mean\"") {
  std::vector<JobRecord> jobs{
      job_run_record("sleepy-20261207-054001-abc", "sleepy", 2'000'000, false),
      job_run_record("train-20261207-054001-def", "train", 1'000'000, false)};
  sort_newest_first(jobs);
  // logs, stop and jobs --forget all resolve a name here.
  auto logs = resolve_job(jobs, "sleepyy", NameUse::kCurrentRun, "logs");
  REQUIRE_FALSE(logs.ok());
  CHECK(logs.error().code == util::ExitCode::kUsage);
  CHECK(logs.error().message ==
        fmt::format("no job 'sleepyy' in {} (did you mean 'sleepy'?); `clusterctl jobs` lists "
                    "them (recent: sleepy-20261207-054001-abc, train-20261207-054001-def)",
                    jobs_dir().string()));
  auto forget = resolve_job(jobs, "trian", NameUse::kOnlyRecord, "jobs --forget");
  REQUIRE_FALSE(forget.ok());
  CHECK(forget.error().message.find("(did you mean 'train'?)") != std::string::npos);
  // An id typed with one character wrong.
  auto id = resolve_job(jobs, "train-20261207-054001-dex", NameUse::kCurrentRun, "stop");
  REQUIRE_FALSE(id.ok());
  CHECK(id.error().message.find("(did you mean 'train-20261207-054001-def'?)") !=
        std::string::npos);
  // Nothing close: no suggestion.
  auto far = resolve_job(jobs, "zzz", NameUse::kCurrentRun, "logs");
  REQUIRE_FALSE(far.ok());
  CHECK(far.error().message.find("did you mean") == std::string::npos);
}

}  // namespace
}  // namespace cc::launch
