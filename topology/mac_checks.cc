// The per-Mac checks of checks.h: RDMA state and port states, link speed, the Thunderbolt
// Bridge, IPv4 on cabled ports, the Mac Studio's en2, macOS builds (docs/platform.md: from
// #rdma-devices-and-port-states to #ports-per-mac-model).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "discovery/natural_sort.h"
#include "topology/checks.h"
#include "topology/rdma_port.h"
#include "topology/rdma_readiness.h"

namespace cc::topology {
namespace {

using discovery::HostFacts;
using discovery::NetInterface;
using discovery::RdmaDevice;
using discovery::RdmaState;

void check_rdma_state(const HostNode& h, const discovery::FixCommand& fix,
                      std::vector<Finding>& out) {
  const HostFacts& f = *h.facts;
  switch (f.rdma.state) {
    case RdmaState::kEnabled:
      if (thunderbolt4_only(f)) {
        out.push_back(
            {"tb4-only",
             Severity::kFail,
             {h.name()},
             {},
             fmt::format("{}: Thunderbolt 4 hardware only: RDMA is enabled, but there is no RDMA "
                         "device and every Thunderbolt link is below 80 Gb/s; RDMA over "
                         "Thunderbolt needs Thunderbolt 5 ports (enabling it again cannot help)",
                         h.name()),
             fmt::format("{} can use TCP over its cables (`{}` addresses them); for RDMA, use "
                         "a Mac with Thunderbolt 5 ports",
                         h.name(), fix.command("network apply"))});
      }
      return;
    case RdmaState::kDisabled:
      out.push_back({"rdma-disabled",
                     Severity::kFail,
                     {h.name()},
                     {},
                     fmt::format("{}: RDMA is disabled (rdma_ctl status: disabled)", h.name()),
                     fmt::format("enable it once from macOS Recovery (it cannot be done over "
                                 "SSH): `{}` walks you through it",
                                 fix.command("rdma enable"))});
      return;
    case RdmaState::kUnsupported:
      out.push_back(
          {"rdma-unsupported",
           Severity::kFail,
           {h.name()},
           {},
           fmt::format("{}: no RDMA support (no rdma_ctl; macOS {} {}): RDMA over Thunderbolt "
                       "needs Apple silicon, macOS 26.2 or later and Thunderbolt 5",
                       h.name(), f.os.version, f.os.build),
           "update macOS to 26.2 or later, then enable RDMA"});
      return;
    case RdmaState::kUnknown:
      out.push_back({"rdma-unknown",
                     Severity::kWarn,
                     {h.name()},
                     {},
                     fmt::format("{}: RDMA state unknown (rdma_ctl status was not read)", h.name()),
                     fmt::format("run `{}` again", fix.rediscover())});
      return;
  }
}

// A cabled port of an RDMA-enabled Mac whose device is down, with the reason when known.
void check_port_states(const ClusterGraph& g, std::size_t hi, const discovery::FixCommand& again,
                       std::vector<Finding>& out) {
  const HostNode& h = g.host(hi);
  if (h.facts->rdma.state != RdmaState::kEnabled || thunderbolt4_only(*h.facts)) return;
  for (const auto& p : h.ports) {
    const auto peer = cabled_peer(g, hi, p);
    if (!peer || below_tb5(g.cable(peer->cable))) continue;  // tb4-link explains a slow one
    const std::size_t cable = peer->cable, qi = peer->host;
    const HostFacts& q = *g.host(qi).facts;
    const bool peer_disabled = peer_rdma_off(q, p.host_peer());
    const RdmaDevice* dev = rdma_device_of(*h.facts, *p.port);
    const bool down = dev != nullptr && !dev->ports.empty() && !dev->ports.front().active;
    const std::string port_state =
        dev != nullptr && !dev->ports.empty() && !dev->ports.front().state.empty()
            ? dev->ports.front().state
            : std::string("PORT_DOWN");
    std::string message;
    std::string fix;
    if (down && peer_disabled) {
      message = fmt::format("{} {} is {} because its peer {} has RDMA disabled", h.name(),
                            dev->name, port_state, q.host);
      fix = fmt::format("enable RDMA on {} (see rdma-disabled)", q.host);
    } else if (dev == nullptr && peer_disabled) {
      message = fmt::format("{}: its peer {} has RDMA disabled, so this cable carries no RDMA",
                            discovery::end_label(p.end), q.host);
      fix = fmt::format("enable RDMA on {} (see rdma-disabled)", q.host);
    } else if (down) {
      message = fmt::format("{} {} is {} although its peer {}'s RDMA is {}", h.name(), dev->name,
                            port_state, q.host, to_string(host_rdma_readiness(q)));
      fix = fmt::format("reseat the cable {}, then run `{}` again", cable_label(g, cable),
                        again.rediscover());
    } else {
      continue;
    }
    std::vector<std::string> hosts = {h.name(), q.host};  // cluster order
    if (qi < hi) std::swap(hosts[0], hosts[1]);
    out.push_back({"rdma-port-down", Severity::kFail, hosts, {p.end}, message, fix});
  }
}

void check_links(const ClusterGraph& g, std::vector<Finding>& out) {
  for (std::size_t i = 0; i < g.edges().size(); ++i) {
    const auto& e = g.edges()[i];
    if (!e.joins_two_hosts()) continue;
    if (!is_mac(*g.host(*e.a_host).facts) && !is_mac(*g.host(*e.b_host).facts)) continue;
    const auto& c = g.cable(i);
    if (!below_tb5(c)) continue;
    std::string detail = fmt::format("{} Gb/s", c.link_speed_gbps);
    if (c.generation > 0) detail += fmt::format(", Thunderbolt {}", c.generation);
    out.push_back({"tb4-link",
                   Severity::kFail,
                   {c.a.host, c.b.host},
                   {c.a, c.b},
                   fmt::format("{}: TB4 link, RDMA impossible ({})", cable_label(g, i), detail),
                   tb4_link_fix(*g.host(*e.a_host).facts, *g.host(*e.b_host).facts)});
  }
}

void check_bridge(const ClusterGraph& g, std::size_t hi, const discovery::FixCommand& fix,
                  std::vector<Finding>& out) {
  const auto bridged = bridged_cabled_ports(g, hi);
  if (bridged.empty()) return;
  const HostNode& h = g.host(hi);
  std::vector<discovery::CableEnd> ports;
  std::vector<std::string> bridges;
  std::vector<std::string> names;
  for (const auto& b : bridged) {
    ports.push_back(b.end);
    names.push_back(b.interface);
    if (std::find(bridges.begin(), bridges.end(), b.bridge) == bridges.end()) {
      bridges.push_back(b.bridge);
    }
  }
  discovery::natural_sort(names);
  const std::string which = bridges == std::vector<std::string>{"bridge0"}
                                ? std::string("the Thunderbolt Bridge (bridge0) is")
                                : fmt::format("{} {}", fmt::join(bridges, ", "),
                                              bridges.size() == 1 ? "is" : "are");
  out.push_back(
      {"thunderbolt-bridge",
       Severity::kFail,
       {h.name()},
       ports,
       fmt::format("{}: {} active with {} as {}: frames loop between the Macs of a mesh", h.name(),
                   which, fmt::join(names, ", "), names.size() == 1 ? "a member" : "members"),
       fmt::format("run `{}` (it takes {} out of the bridge), or make the bridge "
                   "inactive (System Settings > Network > Thunderbolt Bridge > Make "
                   "Inactive)",
                   fix.command("network apply"), fmt::join(names, ", "))});
}

void check_ports(const ClusterGraph& g, std::size_t hi, const discovery::FixCommand& fix,
                 std::vector<Finding>& out) {
  const HostNode& h = g.host(hi);
  for (const auto& p : h.ports) {
    const bool cabled_to_host = std::any_of(p.cables.begin(), p.cables.end(), [&](std::size_t i) {
      return other_host(g, i, hi).has_value();
    });
    if (!cabled_to_host) continue;
    const auto& itf = p.port->interface;
    if (lacks_hardware_port(p.end)) {
      const NoHardwarePort why = no_hardware_port(p.end, fix);
      out.push_back({"no-interface",
                     Severity::kFail,
                     {h.name()},
                     {p.end},
                     fmt::format("{} is cabled but has no network interface: {}, so the port can "
                                 "get no address and no RDMA device",
                                 discovery::end_label(p.end), why.reason),
                     why.fix});
    } else if (!itf || itf->ipv4.empty()) {
      out.push_back(
          {"no-ipv4",
           Severity::kFail,
           {h.name()},
           {p.end},
           fmt::format("{} has no IPv4 address: no IPv4-mapped GID, so RDMA queue pairs fail "
                       "(errno 22 moving to RTR)",
                       discovery::end_label(p.end)),
           fmt::format("`{}` addresses every cabled port", fix.command("network apply"))});
    }
    if (is_studio_en2(*h.facts, *p.port)) {
      out.push_back({"studio-en2",
                     Severity::kWarn,
                     {h.name()},
                     {p.end},
                     fmt::format("{} is cabled: on a Mac Studio the Thunderbolt 5 port next to "
                                 "Ethernet (en2) does not carry RDMA (reported by exo)",
                                 discovery::end_label(p.end)),
                     "move the cable to another Thunderbolt 5 port"});
    }
  }
}

void check_builds(const ClusterGraph& g, std::vector<Finding>& out) {
  std::vector<std::pair<std::string, std::vector<std::string>>> builds;  // first-seen order
  std::vector<std::string> macs;
  for (const auto& h : g.hosts()) {
    if (!is_mac(*h.facts) || h.facts->os.build.empty()) continue;
    macs.push_back(h.name());
    auto it = std::find_if(builds.begin(), builds.end(),
                           [&](const auto& b) { return b.first == h.facts->os.build; });
    if (it == builds.end()) {
      builds.push_back({h.facts->os.build, {h.name()}});
    } else {
      it->second.push_back(h.name());
    }
  }
  if (builds.size() < 2) return;
  std::vector<std::string> parts;
  for (const auto& [build, hosts] : builds) {
    parts.push_back(fmt::format("{} on {}", build, fmt::join(hosts, ", ")));
  }
  out.push_back({"macos-build",
                 Severity::kWarn,
                 macs,
                 {},
                 fmt::format("macOS builds differ: {}", fmt::join(parts, "; ")),
                 "update every Mac to the same macOS build (mismatched builds are a common "
                 "cause of failures)"});
}

}  // namespace

std::vector<BridgedPort> bridged_cabled_ports(const ClusterGraph& g, std::size_t hi) {
  std::vector<BridgedPort> out;
  const HostNode& h = g.host(hi);
  if (!is_mac(*h.facts)) return out;
  for (const auto& p : h.ports) {
    if (!p.cabled() || !p.port->interface) continue;
    const std::string& name = p.port->interface->name;
    for (const NetInterface& i : h.facts->interfaces) {
      if (!i.up || std::find(i.members.begin(), i.members.end(), name) == i.members.end()) {
        continue;
      }
      out.push_back({i.name, name, p.end});
    }
  }
  return out;
}

void run_mac_checks(const ClusterGraph& g, const discovery::FixCommand& fix,
                    std::vector<Finding>& out) {
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (is_mac(*g.host(i).facts)) check_rdma_state(g.host(i), fix, out);
  }
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (is_mac(*g.host(i).facts)) check_port_states(g, i, fix, out);
  }
  check_links(g, out);
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (!is_mac(*g.host(i).facts)) continue;
    check_bridge(g, i, fix, out);
    check_ports(g, i, fix, out);
  }
  check_builds(g, out);
}

}  // namespace cc::topology
