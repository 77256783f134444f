#include "topology/rdma_port.h"

#include <fmt/format.h>

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
