// What `clusterctl health` learns about one host in one round trip: discovery's host probe
// (discovery/probe.h, the same script `discover` sends) with a few commands added through
// discovery::ProbeExtras, run in the same script:
//   first (both OSes)  the remote clock: `date +%s.%N` (Linux), or perl Time::HiRes / `date +%s`
//                      where %N is not supported (macOS), key "..clock-first"
//   macOS              `pmset -g` (sleep timer: provision/mac_hygiene.h), `vm_stat` (free memory)
//   both               `df -Pk .` (free space in the login directory, where job logs go),
//                      `CLUSTERCTL --version` (CLUSTERCTL as given: `clusterctl` on the remote
//                      PATH by default; exit 127 when missing)
//   last (both OSes)   the remote clock again, key "..clock-last"
// Linux's available memory comes from /proc/meminfo (MemAvailable), already in the probe.
//
// Clock offset. With t0/t1 this machine's wall clock just before and after the round trip and
// r1/r2 the remote stamps, r1 was taken between t0 and t1 - (r2 - r1), so
//   offset = r1 - (t0 + t1 - (r2 - r1)) / 2  (seconds; remote minus local),
//   uncertainty = (t1 - t0 - (r2 - r1)) / 2  (half the time spent outside the script).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "discovery/host_facts.h"
#include "discovery/probe.h"
#include "provision/mac_hygiene.h"
#include "remote/executor.h"
#include "util/result.h"

namespace cc::healthcheck {

struct HostSample {
  discovery::HostFacts facts;
  std::optional<double> clock_offset_s;  // remote minus this machine, seconds
  double clock_uncertainty_s = 0;        // +- seconds
  std::optional<std::uint64_t> memory_available_bytes;
  std::optional<std::uint64_t> disk_free_bytes;
  std::string disk_path;                      // the file system's mount point from df
  std::optional<std::string> clusterctl_version;  // "0.1.0"; nullopt when missing
  std::string clusterctl_problem;             // why it is missing ("clusterctl: not found")
  std::optional<provision::HygieneItem> sleep;  // Macs only
  double probe_s = 0;                         // the round trip, seconds
};

/// The extra commands above; `remote_clusterctl` is the program name or path to ask.
discovery::ProbeExtras health_extras(const std::string& remote_clusterctl);

/// The sample from a probe's outputs (pure). `t0`/`t1`: seconds since the epoch on this machine
/// before and after the round trip. Errors: those of discovery::facts_from_probe.
util::Result<HostSample> sample_from_probe(std::string_view host,
                                           const discovery::ProbeOutputs& outputs,
                                           std::string_view fallback_address,
                                           const std::string& remote_clusterctl, double t0,
                                           double t1);

/// Runs the probe with the extras and returns the sample. Errors: those of
/// discovery::run_host_probe (kUnreachable for an unreachable host).
util::Result<HostSample> sample_host(remote::Executor& ex, discovery::ProbeMode mode,
                                     std::chrono::milliseconds timeout,
                                     const std::string& remote_clusterctl);

/// Pure parsers (nullopt when the text does not hold the figure).
std::optional<double> parse_clock(std::string_view out);  // "1764547200.123456789"
std::optional<std::uint64_t> parse_mem_available(std::string_view meminfo);  // bytes
/// macOS vm_stat: (free + inactive + speculative + purgeable) pages x the page size in bytes.
std::optional<std::uint64_t> parse_vm_stat_available(std::string_view vm_stat);
/// `df -Pk` second line: available 1024-byte blocks x 1024, and the mount point.
std::optional<std::pair<std::uint64_t, std::string>> parse_df(std::string_view df);
/// "clusterctl 0.1.0" -> "0.1.0".
std::optional<std::string> parse_clusterctl_version(std::string_view out);

}  // namespace cc::healthcheck
