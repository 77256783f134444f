// `clusterctl health`: one run at a chosen level over the hosts of an expected cluster state.
//   quick    every host probed once, all at once (host_sample.h, one SSH round trip each),
//            then the checks of quick_checks.h. Wall time: the slowest host's round trip (a
//            host that a live discovery just failed to reach is not waited on again).
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
  /// `expected` was discovered just now, for this run (no state file): a host it could not
  /// probe (ClusterState::problems) is not waited on a second time; that problem is the host's
  /// outcome. Ctrl-C before run_health (during that discovery) interrupts every host's checks
  /// and the report says so (Report::interrupted_while). A state file's problems are old:
  /// false, and every host is probed.
  bool discovered_now = false;
  /// When the command began (before a live discovery), for Report::elapsed_s; default: when
  /// run_health is called.
  std::optional<std::chrono::steady_clock::time_point> started;
};

/// Runs the checks of `opts.level`. `executors` are the hosts of expected_hosts(expected), in
/// that order (one per host). Never fails as a whole: every problem is a result in the report.
Report run_health(const discovery::ClusterState& expected, std::span<remote::Executor* const> executors,
                  const HealthOptions& opts, const util::OutputStyle& style);

}  // namespace cc::healthcheck
