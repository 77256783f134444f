#include "topology/rdma_port.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "topology/checks.h"

namespace cc::topology {

const discovery::RdmaDevice* rdma_device_of(const discovery::HostFacts& f,
                                            const discovery::Port& p) {
  for (const auto& d : f.rdma.devices) {
    if (p.rdma_device && d.name == *p.rdma_device) return &d;
    if (!p.rdma_device && p.interface && d.netdev == p.interface->name) return &d;
  }
  return nullptr;
}

bool below_tb5(const discovery::Cable& c) {
  if (c.link_speed_gbps <= 0) return false;
  return c.link_speed_gbps < 80 || c.generation == 3 || c.generation == 4;
}

bool thunderbolt4_only(const discovery::HostFacts& f) {
  if (!is_mac(f) || f.rdma.state != discovery::RdmaState::kEnabled || !f.rdma.devices.empty()) {
    return false;
  }
  bool linked = false;
  for (const auto& p : f.ports) {
    if (p.link_speed_gbps <= 0) continue;
    linked = true;
    if (p.link_speed_gbps >= 80 && p.generation != 3 && p.generation != 4) return false;
  }
  return linked;
}

KnownPortSpeeds known_port_speeds(const discovery::HostFacts& f) {
  KnownPortSpeeds out;
  if (!is_mac(f)) return out;
  for (const auto& p : f.ports) {
    const std::string port = discovery::end_label(discovery::end_of(f, p));
    if (p.link_speed_gbps >= 80 && p.generation != 3 && p.generation != 4) {
      out.tb5_linked.push_back(fmt::format("{}: links at {} Gb/s", port, p.link_speed_gbps));
    } else if (p.link_speed_gbps == 0 && p.idle_speed_gbps >= 80) {
      out.tb5_free.push_back(fmt::format("{}: Up to {} Gb/s", port, p.idle_speed_gbps));
    } else if (p.link_speed_gbps == 0 && p.idle_speed_gbps > 0) {
      out.below_tb5.push_back(fmt::format("{}: Up to {} Gb/s", port, p.idle_speed_gbps));
    }
  }
  return out;
}

std::string tb4_link_fix(const discovery::HostFacts& a, const discovery::HostFacts& b) {
  std::vector<std::string> tb4_only;
  for (const discovery::HostFacts* x : {&a, &b}) {
    if (thunderbolt4_only(*x)) tb4_only.push_back(x->host);
  }
  if (!tb4_only.empty()) {
    return fmt::format("{} {} Thunderbolt 4 hardware only (see tb4-only): this cable can carry "
                       "TCP, never RDMA",
                       fmt::join(tb4_only, " and "), tb4_only.size() == 1 ? "has" : "have");
  }
  std::vector<std::string> cannot, free, proof;  // proof: a Thunderbolt 5 port of each Mac
  bool both_tb5 = true;
  for (const discovery::HostFacts* x : {&a, &b}) {
    if (x == &b && a.host == b.host) break;
    KnownPortSpeeds k = known_port_speeds(*x);
    cannot.insert(cannot.end(), k.below_tb5.begin(), k.below_tb5.end());
    free.insert(free.end(), k.tb5_free.begin(), k.tb5_free.end());
    const std::vector<std::string>& tb5 = k.tb5_linked.empty() ? k.tb5_free : k.tb5_linked;
    if (tb5.empty()) both_tb5 = false;
    if (!tb5.empty()) proof.push_back(tb5.front());
  }
  std::string fix;
  if (both_tb5 && cannot.empty()) {
    // Thunderbolt 5 Macs whose Thunderbolt ports system_profiler shows all as Thunderbolt 5:
    // the cable, not the ports, is what links at 40 Gb/s.
    fix = fmt::format("likely the cable: a Thunderbolt 4 or USB cable links at 40 Gb/s even "
                      "between Thunderbolt 5 ports, and {} {} Thunderbolt 5 ports ({}): use a "
                      "Thunderbolt 5 cable (80 Gb/s) on the same ports",
                      a.host == b.host ? a.host : a.host + " and " + b.host,
                      a.host == b.host ? "has" : "have", fmt::join(proof, ", "));
  } else {
    fix = "use a Thunderbolt 5 cable between Thunderbolt 5 ports on both Macs (80 Gb/s)";
  }
  if (!cannot.empty()) {
    fix += fmt::format("; system_profiler shows {} as Thunderbolt 4: {} cannot do RDMA over "
                       "Thunderbolt 5",
                       fmt::join(cannot, ", "), cannot.size() == 1 ? "that port" : "those ports");
  }
  if (!free.empty()) {
    fix += fmt::format("; free Thunderbolt 5 ports (no cable in them; ports cabled to other "
                       "Macs are left out: moving this cable there would break that pair): {}",
                       fmt::join(free, ", "));
  } else if (!cannot.empty() && proof.empty()) {
    fix += "; system_profiler shows no Thunderbolt 5 port on these Macs";
  }
  return fix;
}

bool lacks_hardware_port(const discovery::CableEnd& e) {
  return e.interface.empty() && e.receptacle.has_value();
}

NoHardwarePort no_hardware_port(const discovery::CableEnd& e,
                                const discovery::FixCommand& fix_command) {
  return {fmt::format("`networksetup -listallhardwareports` on {} lists no \"Thunderbolt {}\" "
                      "hardware port",
                      e.host, e.receptacle.value_or(0)),
          fmt::format("on {} run `sudo networksetup -detectnewhardware` (macOS then adds the "
                      "port), then `{}`",
                      e.host, fix_command.rediscover())};
}

std::optional<CabledPeer> cabled_peer(const ClusterGraph& g, std::size_t h, const PortNode& p) {
  for (std::size_t i : p.cables) {
    if (auto q = other_host(g, i, h)) return CabledPeer{i, *q};
  }
  return std::nullopt;
}

bool peer_rdma_off(const discovery::HostFacts& q, const discovery::Peer* tb_peer) {
  using discovery::RdmaState;
  return q.rdma.state == RdmaState::kDisabled ||
         (q.rdma.state != RdmaState::kEnabled && tb_peer != nullptr && !tb_peer->rdma_enabled);
}

}  // namespace cc::topology
