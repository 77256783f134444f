#include "healthcheck/host_sample.h"

#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "discovery/linux_system.h"
#include "discovery/text.h"
#include "util/number.h"

namespace cc::healthcheck {
namespace {

using discovery::ProbeCommand;
using discovery::RawOutput;

// Seconds since the epoch with sub-second digits where the system can give them.
constexpr const char* kClockScript =
    "t=$(date +%s.%N 2>/dev/null); case $t in ''|*[!0-9.]*) "
    "perl -MTime::HiRes=time -e 'printf \"%.6f\\n\", time' 2>/dev/null || date +%s;; "
    "*) echo \"$t\";; esac";

ProbeCommand clock_command(const char* tag) {
  return ProbeCommand{fmt::format("date +%s.%N ({})", tag), {"sh", "-c", kClockScript, tag}};
}
ProbeCommand pmset_command() {
  return ProbeCommand{"pmset -g", provision::pmset_argv()};
}
ProbeCommand vm_stat_command() {
  return ProbeCommand{"vm_stat", {"vm_stat"}};
}
ProbeCommand df_command() {
  return ProbeCommand{"df -Pk .", {"df", "-Pk", "."}};
}
ProbeCommand version_command(const std::string& clusterctl) {
  return ProbeCommand{clusterctl + " --version", {clusterctl, "--version"}};
}
ProbeCommand meminfo_command() {
  return ProbeCommand{std::string(discovery::kMeminfoCommand), {"cat", "/proc/meminfo"}};
}

const RawOutput* ok_output(const discovery::ProbeOutputs& o, const ProbeCommand& c) {
  const RawOutput* r = o.find(c);
  return r != nullptr && r->exit_status == 0 ? r : nullptr;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

discovery::ProbeExtras health_extras(const std::string& remote_clusterctl) {
  discovery::ProbeExtras e;
  e.first = {clock_command("clusterctl-clock-first")};
  e.on_macos = {pmset_command(), vm_stat_command(), df_command(),
                version_command(remote_clusterctl)};
  e.on_linux = {df_command(), version_command(remote_clusterctl)};
  e.last = {clock_command("clusterctl-clock-last")};
  return e;
}

std::optional<double> parse_clock(std::string_view out) {
  const auto d = util::parse_double(discovery::trim(out));
  if (!d || *d <= 0) return std::nullopt;
  return d;
}

std::optional<std::uint64_t> parse_mem_available(std::string_view meminfo) {
  for (auto line : discovery::split_lines(meminfo)) {
    auto w = discovery::split_words(line);
    if (w.size() >= 2 && w[0] == "MemAvailable:") {
      auto kib = discovery::parse_u64(w[1]);
      if (kib) return *kib * 1024;
    }
  }
  return std::nullopt;
}

std::optional<std::uint64_t> parse_vm_stat_available(std::string_view vm_stat) {
  std::optional<std::uint64_t> page;
  std::uint64_t pages = 0;
  bool any = false;
  for (auto line : discovery::split_lines(vm_stat)) {
    if (auto at = line.find("page size of "); at != std::string_view::npos) {
      auto w = discovery::split_words(line.substr(at + 13));
      if (!w.empty()) page = discovery::parse_u64(w[0]);
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const auto key = discovery::trim(line.substr(0, colon));
    if (key != "Pages free" && key != "Pages inactive" && key != "Pages speculative" &&
        key != "Pages purgeable") {
      continue;
    }
    auto value = discovery::trim(line.substr(colon + 1));
    if (!value.empty() && value.back() == '.') value.remove_suffix(1);
    if (auto n = discovery::parse_u64(value)) {
      pages += *n;
      any = true;
    }
  }
  if (!page || !any) return std::nullopt;
  return pages * *page;
}

std::optional<std::pair<std::uint64_t, std::string>> parse_df(std::string_view df) {
  auto lines = discovery::split_lines(df);
  if (lines.size() < 2) return std::nullopt;
  // Filesystem 1024-blocks Used Available Capacity Mounted-on; the name may hold spaces, so
  // count from the end: available is the 3rd field from the end, the mount point the last.
  auto w = discovery::split_words(lines[1]);
  if (w.size() < 6) return std::nullopt;
  auto avail = discovery::parse_u64(w[w.size() - 3]);
  if (!avail) return std::nullopt;
  return std::pair<std::uint64_t, std::string>{*avail * 1024, std::string(w.back())};
}

std::optional<std::string> parse_clusterctl_version(std::string_view out) {
  auto w = discovery::split_words(discovery::trim(out));
  if (w.size() < 2 || w[0] != "clusterctl") return std::nullopt;
  return std::string(w[1]);
}

util::Result<HostSample> sample_from_probe(std::string_view host,
                                           const discovery::ProbeOutputs& outputs,
                                           std::string_view fallback_address,
                                           const std::string& remote_clusterctl, double t0,
                                           double t1) {
  auto facts = discovery::facts_from_probe(host, outputs, fallback_address);
  if (!facts) return facts.error();
  HostSample s;
  s.facts = std::move(*facts);
  s.probe_s = t1 - t0;
  const RawOutput* c1 = ok_output(outputs, clock_command("clusterctl-clock-first"));
  const RawOutput* c2 = ok_output(outputs, clock_command("clusterctl-clock-last"));
  if (c1 != nullptr && c2 != nullptr) {
    auto r1 = parse_clock(c1->out);
    auto r2 = parse_clock(c2->out);
    if (r1 && r2 && *r2 >= *r1) {
      const double inside = *r2 - *r1;
      s.clock_offset_s = *r1 - (t0 + t1 - inside) / 2;
      s.clock_uncertainty_s = std::max(0.0, (t1 - t0 - inside) / 2);
    }
  }
  const bool mac = s.facts.os.name == "macOS";
  if (mac) {
    if (const RawOutput* v = ok_output(outputs, vm_stat_command())) {
      s.memory_available_bytes = parse_vm_stat_available(v->out);
    }
    if (const RawOutput* p = outputs.find(pmset_command())) s.sleep = provision::sleep_item(*p);
  } else if (const RawOutput* m = ok_output(outputs, meminfo_command())) {
    s.memory_available_bytes = parse_mem_available(m->out);
  }
  if (const RawOutput* d = ok_output(outputs, df_command())) {
    if (auto df = parse_df(d->out)) {
      s.disk_free_bytes = df->first;
      s.disk_path = df->second;
    }
  }
  const RawOutput* v = outputs.find(version_command(remote_clusterctl));
  if (v == nullptr) {
    s.clusterctl_problem = "`" + remote_clusterctl + " --version` was not run";
  } else if (v->exit_status != 0) {
    s.clusterctl_problem = fmt::format(
        "`{} --version` exited {}{}", remote_clusterctl, v->exit_status,
        v->exit_status == 127 ? " (not found on the remote PATH)"
                              : ": " + discovery::excerpt(discovery::trim(v->err), 120));
  } else if (auto ver = parse_clusterctl_version(v->out)) {
    s.clusterctl_version = *ver;
  } else {
    s.clusterctl_problem = fmt::format("`{} --version` printed '{}', not 'clusterctl VERSION'",
                                       remote_clusterctl,
                                       discovery::excerpt(discovery::trim(v->out), 60));
  }
  return s;
}

util::Result<HostSample> sample_host(remote::Executor& ex, discovery::ProbeMode mode,
                                     std::chrono::milliseconds timeout,
                                     const std::string& remote_clusterctl) {
  const double t0 = now_s();
  auto outputs = discovery::run_host_probe(ex, mode, timeout, health_extras(remote_clusterctl));
  const double t1 = now_s();
  if (!outputs) return outputs.error();
  return sample_from_probe(ex.host(), *outputs, "", remote_clusterctl, t0, t1);
}

}  // namespace cc::healthcheck
