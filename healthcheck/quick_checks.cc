#include "healthcheck/quick_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "provision/rdma_status.h"
#include "topology/checks.h"
#include "topology/graph.h"

namespace cc::healthcheck {
namespace {

using discovery::CableEnd;
using discovery::HostFacts;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

CheckResult host_check(const std::string& host, const char* check) {
  CheckResult r;
  r.scope = Scope::kHost;
  r.subject = host;
  r.check = check;
  return r;
}

std::string os_string(const discovery::OsInfo& os) {
  std::string s = os.name + " " + os.version;
  if (!os.build.empty()) s += " (" + os.build + ")";
  return s;
}

const discovery::Port* find_port(const HostFacts& h, const CableEnd& end) {
  for (const auto& p : h.ports) {
    if (!end.interface.empty()) {
      if (p.interface && p.interface->name == end.interface) return &p;
    } else if (end.receptacle && p.receptacle == end.receptacle) {
      return &p;
    }
  }
  return nullptr;
}

// The interface named `name` among the host's ports and other interfaces.
const discovery::NetInterface* find_interface(const HostFacts& h, const std::string& name) {
  for (const auto& p : h.ports) {
    if (p.interface && p.interface->name == name) return &*p.interface;
  }
  for (const auto& i : h.interfaces) {
    if (i.name == name) return &i;
  }
  return nullptr;
}

// The rule shared by the RDMA checks: not ready is a FAIL only when RDMA is required; a Linux
// host with no RDMA device at all runs its collectives over TCP by design, which passes unless
// RDMA is required.
Status rdma_status_of(provision::RdmaReadiness r, const Thresholds& t) {
  if (r == provision::RdmaReadiness::kReady) return Status::kPass;
  if (t.rdma_required) return Status::kFail;
  return r == provision::RdmaReadiness::kNoDevice ? Status::kPass : Status::kWarn;
}

void version_checks(const std::vector<HostOutcome>& outcomes, const std::string& local_version,
                    Report& report, std::map<std::string, std::vector<CheckResult>>& by_host) {
  std::map<std::string, std::vector<std::string>> by_os;  // os string -> hosts
  for (const auto& o : outcomes) {
    HostVersions v{o.host, "", ""};
    if (o.sample) {
      v.os = os_string(o.sample->facts.os);
      v.clusterctl = o.sample->clusterctl_version.value_or("missing");
      by_os[v.os].push_back(o.host);
    }
    report.versions.push_back(v);
  }
  // The reference OS: the one most hosts run (ties: the first host's).
  std::string common;
  std::size_t most = 0;
  for (const auto& o : outcomes) {
    if (!o.sample) continue;
    const auto& hosts = by_os[os_string(o.sample->facts.os)];
    if (hosts.size() > most) {
      most = hosts.size();
      common = os_string(o.sample->facts.os);
    }
  }
  for (const auto& o : outcomes) {
    if (!o.sample) continue;
    const HostSample& s = *o.sample;
    CheckResult os = host_check(o.host, "os-version");
    os.measured = os_string(s.facts.os);
    os.threshold = "= " + common;
    if (os.measured != common) {
      os.status = Status::kFail;
      os.detail = fmt::format("{} runs {}, while {} run {}", o.host, os.measured,
                              fmt::join(by_os[common], ", "), common);
      os.fix = fmt::format("update {} so every host runs the same OS version and build", o.host);
    }
    by_host[o.host].push_back(os);

    CheckResult cv = host_check(o.host, "clusterctl-version");
    cv.measured = s.clusterctl_version.value_or("missing");
    cv.threshold = "= " + local_version;
    if (!s.clusterctl_version) {
      cv.status = Status::kWarn;
      cv.detail = fmt::format("{}: {}", o.host, s.clusterctl_problem);
      cv.fix = fmt::format("install clusterctl {} on {}, or name it with --remote-clusterctl PATH",
                           local_version, o.host);
    } else if (*s.clusterctl_version != local_version) {
      cv.status = Status::kFail;
      cv.detail = fmt::format("{} has clusterctl {}, this machine {}", o.host,
                              *s.clusterctl_version, local_version);
      cv.fix = fmt::format("install clusterctl {} on {}", local_version, o.host);
    }
    by_host[o.host].push_back(cv);
  }
}

}  // namespace

std::vector<std::string> expected_hosts(const discovery::ClusterState& expected) {
  std::vector<std::string> names;
  for (const auto& h : expected.hosts) names.push_back(h.host);
  for (const auto& p : expected.problems) {
    if (std::find(names.begin(), names.end(), p.host) == names.end()) names.push_back(p.host);
  }
  return names;
}

discovery::ClusterState live_state(const discovery::ClusterState& expected,
                                   const std::vector<HostOutcome>& outcomes) {
  discovery::ClusterState live;
  live.created_at = expected.created_at;
  for (const auto& o : outcomes) {
    if (o.sample) live.hosts.push_back(o.sample->facts);
    if (o.problem) live.problems.push_back(*o.problem);
  }
  for (const auto& c : expected.cables) {
    if (live.find_host(c.a.host) != nullptr && live.find_host(c.b.host) != nullptr) {
      live.cables.push_back(c);
    }
  }
  live.network = expected.network;
  return live;
}

namespace {

// What the host checks read beside the host's own sample.
struct Context {
  const discovery::ClusterState& expected;             // the saved cluster state
  const provision::RdmaStatus& rdma;                   // of the hosts as probed now
  const std::vector<topology::Finding>& mac_findings;  // topology::run_mac_checks
  const Thresholds& t;
  const discovery::FixCommand& fix;  // how the fixes' commands name the cluster
};

CheckResult reachable_check(const HostOutcome& o, Report& report,
                            const discovery::FixCommand& fix) {
  CheckResult r = host_check(o.host, "reachable");
  if (o.sample) {
    r.measured = fmt::format("{:.2f} s", o.sample->probe_s);
    r.value = o.sample->probe_s;
    r.unit = "s";
    r.detail = fmt::format("probed {} in one round trip", o.host);
    return r;
  }
  const bool unreachable = o.problem && o.problem->unreachable();
  const bool bad_destination = o.problem && o.problem->bad_destination();
  r.status = Status::kFail;
  r.measured = unreachable ? "unreachable" : bad_destination ? "bad destination" : "probe failed";
  r.detail = o.problem ? o.problem->message : o.host + ": not probed";
  // A name that does not resolve (remote's connect message): `ssh NAME` fails the same way,
  // so the fix is the name, with the message's own hint (a lab's host named without --lab).
  const std::string& message = r.detail;
  const size_t lab = message.find("if it is a host of a lab");
  if (unreachable && message.find("could not resolve host name") != std::string::npos) {
    r.fix = fmt::format(
        "check the host name {}: it does not resolve here; give it a Host entry "
        "with HostName in the SSH config (-F){}",
        o.host, lab == std::string::npos ? "" : "; " + message.substr(lab));
  } else if (bad_destination) {
    // Refused before any connection (remote's message says why and how to name it): nothing
    // ran on the host, so its outputs (`collect`) would show nothing; the name is what to fix.
    r.fix = fmt::format("fix how {} is named (--hosts, the inventory's `ssh:` or the SSH "
                        "config's HostName) as the message says, then check that `{}` works",
                        o.host, fix.ssh(o.host));
  } else {
    r.fix = unreachable
                ? fmt::format("check that {} is up and that `{}` works", o.host, fix.ssh(o.host))
                : fmt::format("run `{}` and read the failing output", fix.collect(o.host));
  }
  if (unreachable) report.unreachable.push_back(o.host);
  if (bad_destination) report.bad_destination.push_back(o.host);
  return r;
}

// Only when the cluster state recorded what identifies the host (discovery's machine ID and
// SSH host key) and the host reports it now: the same machine must answer under its name.
std::optional<CheckResult> identity_check(const std::string& host, const HostFacts& now,
                                          const HostFacts* then, const discovery::FixCommand& fix) {
  if (then == nullptr) return std::nullopt;
  std::vector<std::string> same, changed;
  auto compare = [&](const char* what, const std::optional<std::string>& a,
                     const std::optional<std::string>& b) {
    if (!a || !b || a->empty() || b->empty()) return;
    if (*a == *b) {
      same.push_back(what);
    } else {
      changed.push_back(fmt::format("{} {}, discovered {}", what, *b, *a));
    }
  };
  compare("machine ID", then->machine_id, now.machine_id);
  compare("SSH host key", then->ssh_host_key, now.ssh_host_key);
  if (same.empty() && changed.empty()) return std::nullopt;
  CheckResult r = host_check(host, "identity");
  r.threshold = "the machine discovered";
  if (changed.empty()) {
    r.measured = "same";
    r.detail = fmt::format("{}: the same {} as discovered", host, fmt::join(same, " and "));
    return r;
  }
  r.status = Status::kFail;
  r.measured = "another machine";
  r.detail = fmt::format("{} is not the machine discovered under that name: {}", host,
                         fmt::join(changed, "; "));
  r.fix = fmt::format(
      "if {0} was replaced or reinstalled, run `{1}` again and save the cluster state; if "
      "not, the name {0} now reaches another machine: check DNS, /etc/hosts and ~/.ssh/config",
      host, fix.rediscover());
  return r;
}

CheckResult macos_version_check(const std::string& host, const HostSample& s, const Thresholds& t) {
  CheckResult r = host_check(host, "macos-version");
  r.measured = s.facts.os.version;
  r.threshold = ">= " + t.macos_min_version;
  int major = 0, minor = 0;
  std::sscanf(t.macos_min_version.c_str(), "%d.%d", &major, &minor);
  if (!provision::macos_at_least(s.facts.os.version, major, minor)) {
    r.status = Status::kFail;
    r.detail = fmt::format("{} runs macOS {}: RDMA over Thunderbolt needs {} or later", host,
                           s.facts.os.version, t.macos_min_version);
    r.fix = fmt::format("update macOS on {} (System Settings > General > Software Update)", host);
  }
  return r;
}

CheckResult host_rdma_check(const provision::HostRdmaStatus& h, const Thresholds& t) {
  CheckResult r = host_check(h.host, "rdma");
  r.measured = provision::to_string(h.state);
  r.threshold = "ready";
  r.status = rdma_status_of(h.state, t);
  r.detail = fmt::format("{}: {}", h.host, h.detail);
  if (r.status == Status::kPass && h.state != provision::RdmaReadiness::kReady) {
    r.measured += " (TCP)";
    r.threshold = "ready, or no device (rdma_required: false)";
  }
  if (r.status != Status::kPass) r.fix = h.fix;
  return r;
}

CheckResult bridge_check(const std::string& host, const std::vector<topology::Finding>& findings) {
  CheckResult r = host_check(host, "thunderbolt-bridge");
  r.measured = "inactive";
  r.threshold = "inactive";
  for (const auto& f : findings) {
    if (f.check != "thunderbolt-bridge" || f.hosts.empty() || f.hosts[0] != host) continue;
    r.status = Status::kFail;
    r.measured = "active";
    r.detail = f.message;
    r.fix = f.fix;
  }
  return r;
}

CheckResult sleep_check(const std::string& host, const HostSample& s) {
  CheckResult r = host_check(host, "sleep");
  r.threshold = "never (sleep 0)";
  if (!s.sleep) {
    r.status = Status::kWarn;
    r.measured = "unknown";
    r.detail = fmt::format("{}: `pmset -g` was not run", host);
    return r;
  }
  r.measured = s.sleep->detail;
  r.detail = fmt::format("{}: {}", host, s.sleep->detail);
  if (s.sleep->status == provision::HygieneItem::Status::kFix) {
    r.status = Status::kFail;
    r.fix = s.sleep->fix;
  } else if (s.sleep->status != provision::HygieneItem::Status::kOk) {
    r.status = Status::kWarn;
  }
  return r;
}

// `median`: the median clock offset of the sampled hosts, which each host is compared with.
CheckResult clock_skew_check(const std::string& host, const HostSample& s, double median,
                             const Thresholds& t) {
  CheckResult r = host_check(host, "clock-skew");
  r.threshold = fmt::format("< {:g} s", t.clock_skew_max_s);
  r.unit = "s";
  if (!s.clock_offset_s) {
    r.status = Status::kWarn;
    r.measured = "unknown";
    r.detail = fmt::format("{}: the remote clock could not be read", host);
    return r;
  }
  const double skew = *s.clock_offset_s - median;
  r.value = skew;
  r.measured = fmt::format("{:+.3f} s (+-{:.3f})", skew, s.clock_uncertainty_s);
  r.detail = fmt::format("{}: clock {:+.3f} s from the hosts' median", host, skew);
  if (std::abs(skew) - s.clock_uncertainty_s > t.clock_skew_max_s) {
    r.status = Status::kFail;
  } else if (std::abs(skew) + s.clock_uncertainty_s > t.clock_skew_max_s) {
    r.status = Status::kWarn;
    r.detail += " (within the measurement's uncertainty of the limit)";
  }
  if (r.status != Status::kPass)
    r.fix = fmt::format("enable time synchronisation (NTP) on {}", host);
  return r;
}

// free-memory or disk-space: `bytes` free against `min_gib`.
CheckResult space_check(const std::string& host, const char* check,
                        std::optional<std::uint64_t> bytes, double min_gib, const std::string& what,
                        const std::string& fix) {
  CheckResult r = host_check(host, check);
  r.threshold = fmt::format(">= {:g} GiB", min_gib);
  r.unit = "GiB";
  if (!bytes) {
    r.status = Status::kWarn;
    r.measured = "unknown";
    r.detail = fmt::format("{}: {} could not be read", host, what);
    return r;
  }
  const double gib = static_cast<double>(*bytes) / kGiB;
  r.value = gib;
  r.measured = fmt::format("{:.1f} GiB", gib);
  r.detail = fmt::format("{}: {} {:.1f} GiB", host, what, gib);
  if (gib < min_gib) {
    r.status = Status::kFail;
    r.fix = fix;
  }
  return r;
}

// Every check of one probed host, in report order.
std::vector<CheckResult> sampled_host_checks(const HostOutcome& o, double median,
                                             const Context& ctx) {
  const HostSample& s = *o.sample;
  const bool mac = topology::is_mac(s.facts);
  std::vector<CheckResult> out;
  if (auto id = identity_check(o.host, s.facts, ctx.expected.find_host(o.host), ctx.fix)) {
    out.push_back(std::move(*id));
  }
  if (mac) out.push_back(macos_version_check(o.host, s, ctx.t));
  for (const auto& h : ctx.rdma.hosts) {
    if (h.host == o.host) out.push_back(host_rdma_check(h, ctx.t));
  }
  if (mac) {
    out.push_back(bridge_check(o.host, ctx.mac_findings));
    out.push_back(sleep_check(o.host, s));
  }
  out.push_back(clock_skew_check(o.host, s, median, ctx.t));
  out.push_back(space_check(o.host, "free-memory", s.memory_available_bytes,
                            ctx.t.free_memory_min_gib, "available memory",
                            fmt::format("stop what uses memory on {}", o.host)));
  out.push_back(space_check(
      o.host, "disk-space", s.disk_free_bytes, ctx.t.free_disk_min_gib,
      fmt::format("free disk space for logs ({})", s.disk_path.empty() ? "~" : s.disk_path),
      fmt::format("free disk space on {} ({})", o.host, s.disk_path)));
  return out;
}

CheckResult cable_check(const discovery::Cable& c, const char* check) {
  CheckResult r;
  r.scope = Scope::kCable;
  r.subject = cable_label(c.a, c.b);
  r.check = check;
  return r;
}

// A cable with an end on a host that was not probed: it cannot be checked. SKIP, not FAIL: the
// host's reachable check is the one failure (and exit 3), not one more per cable.
CheckResult unprobed_cable_check(const discovery::Cable& c, const discovery::ClusterState& live) {
  std::vector<std::string> gone;
  for (const auto* h : {&c.a.host, &c.b.host}) {
    if (live.find_host(*h) == nullptr) gone.push_back(*h);
  }
  CheckResult r = skipped_check(
      Scope::kCable, cable_label(c.a, c.b), "link-up",
      fmt::format("cable {} - {} not checked: {} not probed (see {} reachable check)",
                  discovery::end_label(c.a), discovery::end_label(c.b), fmt::join(gone, ", "),
                  gone.size() == 1 ? "its" : "their"));
  r.threshold = "carrier on both ends";
  return r;
}

CheckResult link_up_check(const discovery::Cable& c, const HostFacts& ha, const HostFacts& hb) {
  CheckResult r = cable_check(c, "link-up");
  r.threshold = "carrier on both ends";
  const topology::CableLink link = topology::cable_link(c.a, c.b, &ha, &hb);
  r.measured = link.up ? "up" : "down";
  if (link.up) {
    r.detail = fmt::format("{} - {}: carrier on both ends", discovery::end_label(c.a),
                           discovery::end_label(c.b));
    return r;
  }
  r.status = Status::kFail;
  r.detail = fmt::format("cable {} - {} is down: {}", discovery::end_label(c.a),
                         discovery::end_label(c.b), fmt::join(link.bad, "; "));
  r.fix = link.fix;
  return r;
}

CheckResult addresses_check(const discovery::Cable& c, const HostFacts& ha, const HostFacts& hb,
                            const std::vector<discovery::LinkAddress>& network,
                            const discovery::FixCommand& fix) {
  CheckResult r = cable_check(c, "addresses");
  const discovery::LinkAddress* plan = nullptr;
  for (const auto& l : network) {
    if (l.a == c.a && l.b == c.b) plan = &l;
  }
  if (plan == nullptr) {
    r.status = Status::kWarn;
    r.measured = "no plan";
    r.threshold = "planned addresses";
    r.detail = fmt::format("no network plan for cable {} - {}", discovery::end_label(c.a),
                           discovery::end_label(c.b));
    r.fix = fmt::format("run `{}`, then `{}`", fix.command("network plan"),
                        fix.command("network apply"));
    return r;
  }
  r.threshold = plan->a_address + ", " + plan->b_address;
  std::vector<std::string> missing, present;
  for (auto [end, h, addr] :
       {std::tuple{&c.a, &ha, &plan->a_address}, std::tuple{&c.b, &hb, &plan->b_address}}) {
    const discovery::NetInterface* i = find_interface(*h, end->interface);
    const bool has =
        i != nullptr && std::find(i->ipv4.begin(), i->ipv4.end(), *addr) != i->ipv4.end();
    (has ? present : missing).push_back(fmt::format("{} {}", discovery::end_label(*end), *addr));
  }
  r.measured = missing.empty() ? "present" : fmt::format("{} missing", missing.size());
  if (missing.empty()) {
    r.detail = fmt::format("{}", fmt::join(present, ", "));
    return r;
  }
  r.status = Status::kFail;
  r.detail = fmt::format("cable {} - {}: planned address missing on {}", discovery::end_label(c.a),
                         discovery::end_label(c.b), fmt::join(missing, ", "));
  r.fix = fmt::format("run `{}`", fix.command("network apply"));
  return r;
}

// link-speed, only when a Thunderbolt speed is reported (nullopt otherwise).
std::optional<CheckResult> link_speed_check(const discovery::Cable& c, const HostFacts& ha,
                                            const HostFacts& hb, const Thresholds& t) {
  int speed = 0;
  for (auto [end, h] : {std::pair{&c.a, &ha}, std::pair{&c.b, &hb}}) {
    const discovery::Port* p = find_port(*h, *end);
    if (p != nullptr && p->link_speed_gbps > 0) {
      speed = speed == 0 ? p->link_speed_gbps : std::min(speed, p->link_speed_gbps);
    }
  }
  if (speed == 0) return std::nullopt;
  CheckResult r = cable_check(c, "link-speed");
  r.value = speed;
  r.unit = "Gb/s";
  r.measured = fmt::format("{} Gb/s", speed);
  r.threshold = fmt::format(">= {} Gb/s", t.link_min_speed_gbps);
  r.detail =
      fmt::format("{} - {}: {} Gb/s", discovery::end_label(c.a), discovery::end_label(c.b), speed);
  if (speed < t.link_min_speed_gbps) {
    r.status = Status::kFail;
    r.detail += ": TB4 link, RDMA impossible";
    r.fix = "use a Thunderbolt 5 cable between Thunderbolt 5 ports on both ends";
  }
  return r;
}

// How a cable carries a job: RDMA on both ends, TCP because an end has no RDMA device (allowed
// unless rdma_required), or not at all.
enum class CableTransport { kRdma, kTcpOnly, kNotReady };

CheckResult cable_rdma_check(const discovery::Cable& c, const provision::RdmaStatus& rdma,
                             const Thresholds& t) {
  CheckResult r = cable_check(c, "rdma");
  r.threshold = "ready on both ends";
  std::vector<std::string> states;
  Status worst = Status::kPass;
  bool no_device = false;
  std::string fix;
  for (const auto* end : {&c.a, &c.b}) {
    const provision::PortRdmaStatus* ps = nullptr;
    for (const auto& h : rdma.hosts) {
      for (const auto& p : h.ports) {
        if (p.end.host == end->host && p.end.interface == end->interface &&
            p.end.receptacle == end->receptacle) {
          ps = &p;
        }
      }
    }
    if (ps == nullptr) {
      states.push_back(fmt::format("{} not probed", discovery::end_label(*end)));
      worst = std::max(worst, t.rdma_required ? Status::kFail : Status::kWarn);
      continue;
    }
    states.push_back(
        fmt::format("{} {}", discovery::end_label(*end), provision::to_string(ps->state)));
    no_device = no_device || ps->state == provision::RdmaReadiness::kNoDevice;
    const Status st = rdma_status_of(ps->state, t);
    if (st != Status::kPass && fix.empty()) fix = ps->fix;
    worst = std::max(worst, st);
  }
  const CableTransport transport = worst != Status::kPass ? CableTransport::kNotReady
                                   : no_device            ? CableTransport::kTcpOnly
                                                          : CableTransport::kRdma;
  r.status = worst;
  r.measured = transport == CableTransport::kNotReady  ? "not ready"
               : transport == CableTransport::kTcpOnly ? "TCP only"
                                                       : "ready";
  if (transport == CableTransport::kTcpOnly) {
    r.threshold = "ready, or no device (rdma_required: false)";
  }
  r.detail = fmt::format("{}", fmt::join(states, ", "));
  r.fix = fix;
  return r;
}

}  // namespace

void quick_checks(const discovery::ClusterState& expected, const std::vector<HostOutcome>& outcomes,
                  const Thresholds& t, const std::string& local_version, Report& report,
                  const discovery::FixCommand& fix) {
  report.local_version = local_version;
  const discovery::ClusterState live = live_state(expected, outcomes);
  const provision::RdmaStatus rdma = provision::rdma_status(live, fix);
  const topology::ClusterGraph graph(live);
  std::vector<topology::Finding> mac_findings;
  topology::run_mac_checks(graph, fix, mac_findings);
  const Context ctx{expected, rdma, mac_findings, t, fix};

  std::map<std::string, std::vector<CheckResult>> by_host;
  for (const auto& o : outcomes) by_host[o.host].push_back(reachable_check(o, report, fix));
  version_checks(outcomes, local_version, report, by_host);

  std::vector<double> offsets;
  for (const auto& o : outcomes) {
    if (o.sample && o.sample->clock_offset_s) offsets.push_back(*o.sample->clock_offset_s);
  }
  std::sort(offsets.begin(), offsets.end());
  const double median = offsets.empty() ? 0 : offsets[offsets.size() / 2];
  for (const auto& o : outcomes) {
    if (!o.sample) continue;
    auto more = sampled_host_checks(o, median, ctx);
    auto& out = by_host[o.host];
    out.insert(out.end(), std::make_move_iterator(more.begin()),
               std::make_move_iterator(more.end()));
  }
  for (const auto& o : outcomes) {
    for (auto& r : by_host[o.host]) report.add(std::move(r));
  }

  for (const auto& c : expected.cables) {
    const HostFacts* ha = live.find_host(c.a.host);
    const HostFacts* hb = live.find_host(c.b.host);
    if (ha == nullptr || hb == nullptr) {
      report.add(unprobed_cable_check(c, live));
      continue;
    }
    report.add(link_up_check(c, *ha, *hb));
    report.add(addresses_check(c, *ha, *hb, expected.network, fix));
    if (auto speed = link_speed_check(c, *ha, *hb, t)) report.add(std::move(*speed));
    report.add(cable_rdma_check(c, rdma, t));
  }
}

}  // namespace cc::healthcheck
