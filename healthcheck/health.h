// `clusterctl health`: one run at a chosen level over the hosts of an expected cluster state.
//   quick    every host probed once, all at once (host_sample.h, one SSH round trip each),
//            then the checks of quick_checks.h. Wall time: the slowest host's round trip.
//   default  quick, then each cable's latency and bandwidth over TCP (link_test.h).
//   full     default, then an all_reduce over every host with a data check (collective.h),
//            and a soak of N seconds when asked.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>

#include "discovery/cluster_state.h"
#include "discovery/fix_command.h"
#include "discovery/probe.h"
#include "healthcheck/baseline.h"
#include "healthcheck/check.h"
#include "healthcheck/link_test.h"
#include "healthcheck/thresholds.h"
#include "remote/executor.h"
#include "util/term.h"

namespace cc::healthcheck {

enum class Level { kQuick, kDefault, kFull };
const char* to_string(Level l);  // "quick", "default", "full"

struct HealthOptions {
  Level level = Level::kDefault;
  discovery::ProbeMode mode = discovery::ProbeMode::kScript;
  std::chrono::milliseconds timeout{30'000};  // per host round trip
  std::string remote_clusterctl = "clusterctl";
  std::string local_version;
  Thresholds thresholds;
  PerfOptions perf;                 // the link and all_reduce tests
  std::optional<Baseline> baseline;  // figures to compare against
  int soak_s = 0;                   // --full: all_reduce repeated for this many seconds
  discovery::FixCommand fix;        // how the fixes' commands name the cluster (runnable)
};

/// Runs the checks of `opts.level`. `executors` are the hosts of expected_hosts(expected), in
/// that order (one per host). Never fails as a whole: every problem is a result in the report.
Report run_health(const discovery::ClusterState& expected, std::span<remote::Executor* const> executors,
                  const HealthOptions& opts, const util::OutputStyle& style);

}  // namespace cc::healthcheck
