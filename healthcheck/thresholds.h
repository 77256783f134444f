// The limits `clusterctl health` judges measurements by, read from a YAML file
// (templates/health-thresholds.yaml holds the defaults, commented; `--thresholds FILE`).
//
//   host:
//     clock_skew_max_s: 1.0          # |clock skew| vs this machine, seconds: FAIL above
//     free_memory_min_gib: 1.0       # available memory, GiB: FAIL below
//     free_disk_min_gib: 2.0         # free space where jobs write logs, GiB: FAIL below
//     macos_min_version: "26.2"      # RDMA needs 26.2 (docs/platform.md#enabling-rdma-on-a-mac)
//     rdma_required: false           # true: no RDMA on a host or cabled port FAILs; false: WARN
//   link:                            # per cable, TCP point-to-point (clustercomm-perf sendrecv)
//     min_speed_gbps: 80             # Thunderbolt link speed; unknown speeds are not judged
//     latency_p99_us: {warn: 500, fail: 2000}      # 8-byte exchange, p99: above = WARN/FAIL
//     bandwidth_gbps: {warn: 20, fail: 10}         # per direction: below = WARN/FAIL
//     bandwidth_baseline_percent: {warn: 90, fail: 70}  # of the saved baseline: below = ...
//   all_reduce:                      # --full: all_reduce over every host, data checked
//     size_bytes: 16777216
//     busbw_gbps: {warn: 20, fail: 10}
//     busbw_baseline_percent: {warn: 90, fail: 70}
//
// Every key is optional (the defaults above apply). Units are in the key names: s, GiB, us,
// Gb/s (1e9 bits per second), bytes, percent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.h"

namespace cc::healthcheck {

/// A two-level limit. For "higher is worse" figures (latency) WARN above warn, FAIL above fail;
/// for "lower is worse" ones (bandwidth) WARN below warn, FAIL below fail.
struct Limit {
  double warn = 0;
  double fail = 0;
};

struct Thresholds {
  double clock_skew_max_s = 1.0;
  double free_memory_min_gib = 1.0;
  double free_disk_min_gib = 2.0;
  std::string macos_min_version = "26.2";
  bool rdma_required = false;

  int link_min_speed_gbps = 80;
  Limit latency_p99_us{500, 2000};
  Limit bandwidth_gbps{20, 10};
  Limit bandwidth_baseline_percent{90, 70};

  std::int64_t all_reduce_size_bytes = 16 << 20;
  Limit busbw_gbps{20, 10};
  Limit busbw_baseline_percent{90, 70};
};

/// The limits `clusterctl --lab NAME health` uses unless --thresholds is given: the built-in
/// lab's cables are veth pairs on one shared machine, not Thunderbolt 5, so only a broken cable
/// should fail there. Measured on the 2-core CI machine with other suites running: 6-9 Gb/s per
/// cable, p99 one-way latency 1.6-5 ms (p50 ~0.2 ms), baseline noise up to ~30%.
/// Latency p99 warn 50,000 / fail 200,000 µs; bandwidth warn 0.2 / fail 0.05 Gb/s; baseline
/// 50 / 25 %; all_reduce of 4 MiB, busbw warn 0.1 / fail 0.02 Gb/s.
Thresholds lab_thresholds();

/// Thresholds from YAML text. Errors (kUsage) "FILE:LINE:COLUMN: what": a syntax error, an
/// unknown key (with "did you mean"), a value of the wrong type or out of range, a limit whose
/// warn is worse than its fail.
util::Result<Thresholds> parse_thresholds(std::string_view text, const std::string& file);

/// Reads and parses FILE. Errors as above, plus an unreadable file (kUsage, naming it).
util::Result<Thresholds> load_thresholds(const std::string& file);

}  // namespace cc::healthcheck
