// libFuzzer target: a job file through what launch does before any host is contacted: the
// job spec (parse_job_spec), then each rank's plan on a fixed 3-host world whose hosts the
// job may or may not name (a name outside it has no address, as a host missing from the
// inventory), with the direct-cable routes of a fixed cluster state: check_world, rank_env for
// every rank, the runtime's files. Property: no input makes them throw, crash or trip a
// sanitizer, and a spec error names the job file.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "discovery/fuzz/fuzz_check.h"
#include "launch/job_spec.h"
#include "launch/rank_env.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cc::launch;
  using cc::discovery::fuzz::fail;
  constexpr const char* kFile = "/fuzz/job.yaml";
  const std::string_view text = cc::discovery::fuzz::text(data, size);
  try {
    auto spec = parse_job_spec(text, kFile);
    if (!spec.ok()) {
      if (spec.error().message.find("job.yaml") == std::string::npos) {
        fail("a job file error does not name the file", spec.error().message);
      }
      return 0;
    }
    WorldPlan plan;
    plan.runtime = spec->runtime;
    plan.coordinator_port = spec->coordinator_port;
    plan.ranks_per_host = spec->ranks_per_host;
    plan.env = spec->env;
    plan.token = "fuzz-token";
    // The job's own host names, else the fixed world; h1..h3 have addresses, others none.
    std::vector<std::string> names = spec->hosts;
    if (names.empty()) names = {"h1", "h2", "h3"};
    if (names.size() > 16) names.resize(16);
    for (const auto& n : names) {
      const bool known = n == "h1" || n == "h2" || n == "h3";
      plan.hosts.push_back({n, known ? "10.0.0." + std::string(1, n[1]) : "", ""});
    }
    if (!check_world(plan).ok()) return 0;
    if (plan.world_size() > 256) return 0;
    for (int r = 0; r < plan.world_size(); ++r) {
      (void)rank_env(plan, r, "/tmp/clusterctl-job-fuzz-h0");
    }
    (void)runtime_files(plan);
  } catch (const std::exception& e) {
    fail("exception", e.what());
  }
  return 0;
}
