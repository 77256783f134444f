// What the per-Mac RDMA checks of verify-mesh (mac_checks.cc) and `clusterctl rdma status`
// (provision/rdma_status.h) both need to know about one cabled port: its RDMA device, the host
// at the other end of its cable, whether that peer has RDMA off, and whether the cable is too
// slow to carry RDMA at all. Pure. Facts:
// docs/platform.md#rdma-devices-and-port-states and docs/platform.md#link-speeds.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "discovery/cluster_state.h"
#include "discovery/fix_command.h"
#include "discovery/host_facts.h"
#include "topology/graph.h"

namespace cc::topology {

/// The RDMA device of port `p` of host `f`: the device named by Port::rdma_device, else the one
/// whose netdev is the port's interface; nullptr when none.
const discovery::RdmaDevice* rdma_device_of(const discovery::HostFacts& f,
                                            const discovery::Port& p);

/// A cable below Thunderbolt 5 speed: under 80 Gb/s per direction, or a generation 3/4 link
/// ("Thunderbolt 4/3 links (40 Gb/s) never get RDMA"). Speed 0 is unknown (a lab veth): false.
bool below_tb5(const discovery::Cable& c);

/// True when Mac `f` has Thunderbolt 4 (or 3) hardware only: `rdma_ctl` says enabled, yet
/// ibv_devices lists no RDMA device, and every port with a link runs below Thunderbolt 5 (at
/// least one port has a link). A Mac with Thunderbolt 5 ports lists an rdma_enX device per port
/// once RDMA is enabled, so enabling it again (macOS Recovery) cannot help: RDMA over
/// Thunderbolt needs Thunderbolt 5. Its cables still carry TCP.
bool thunderbolt4_only(const discovery::HostFacts& f);

/// What macOS `system_profiler` says the ports of Mac `f` can do: an idle port's "Up to N Gb/s"
/// (Port::idle_speed_gbps) is the port's own speed, and a link at 80 Gb/s or more proves a
/// Thunderbolt 5 port. A port with a link below 80 Gb/s is in neither list: its label is the
/// negotiated speed, which a Thunderbolt 4 cable or peer lowers as much as a Thunderbolt 4 port
/// does (the fixtures' Thunderbolt 5 MacBook Pro shows "40 Gb/s" with a Thunderbolt 3 dock).
/// Labels "m1 receptacle 1 (en2): Up to 120 Gb/s", in port order.
struct KnownPortSpeeds {
  std::vector<std::string> tb5_linked;  // links at 80 Gb/s or more: in use by another cable
  std::vector<std::string> tb5_free;    // idle, "Up to 80/120 Gb/s": free to take a cable
  std::vector<std::string> below_tb5;   // "Up to 40 Gb/s": cannot
};
KnownPortSpeeds known_port_speeds(const discovery::HostFacts& f);

/// The fix for a Mac cable below Thunderbolt 5 speed between `a` and `b` (verify-mesh's and
/// `rdma status`'s tb4-link): a Mac with Thunderbolt 4 hardware only is named as such;
/// otherwise a Thunderbolt 5 cable between Thunderbolt 5 ports, followed by what
/// known_port_speeds knows of either Mac: the ports that cannot do RDMA over Thunderbolt 5, and
/// the free ones that can (never a port cabled to another Mac: moving this cable there would
/// break that pair). When both Macs show Thunderbolt 5 ports and none below, the cable itself
/// is named as the likelier cause (a Thunderbolt 4 or USB cable links at 40 Gb/s between
/// Thunderbolt 5 ports too): nothing is said of a port system_profiler does not tell about.
std::string tb4_link_fix(const discovery::HostFacts& a, const discovery::HostFacts& b);

/// True when `e` is a Thunderbolt receptacle with no network interface behind it: `networksetup
/// -listallhardwareports` lists no "Thunderbolt N" hardware port for it (macOS has not made one
/// yet), so nothing can address the port and no rdma_enX rides on it
/// (docs/platform.md#discovering-cables-on-macos).
bool lacks_hardware_port(const discovery::CableEnd& e);

/// The one account of such a port, for every command that meets one (verify-mesh's
/// no-interface, `rdma status`'s port state no-interface, `network apply|verify`'s left-out
/// cable): `reason` is "`networksetup -listallhardwareports` on mac1 lists no "Thunderbolt 2"
/// hardware port"; `fix` is "on mac1 run `sudo networksetup -detectnewhardware` (macOS then adds
/// the port), then `clusterctl discover ...`", the rediscovery named by `fix_command`.
struct NoHardwarePort {
  std::string reason;
  std::string fix;
};
NoHardwarePort no_hardware_port(const discovery::CableEnd& e,
                                const discovery::FixCommand& fix_command);

/// The first cable on port `p` of host `h` that joins `h` to another host of the cluster.
struct CabledPeer {
  std::size_t cable = 0;  // index in ClusterState::cables
  std::size_t host = 0;   // the other host's index in the graph
};
std::optional<CabledPeer> cabled_peer(const ClusterGraph& g, std::size_t h, const PortNode& p);

/// True when the peer host `q` has RDMA off: its own `rdma_ctl status` says disabled, or (its
/// own state not known to be enabled) the Thunderbolt item `tb_peer` on our end of the cable
/// does not advertise the "rdma" XDomain service. `tb_peer` may be null.
bool peer_rdma_off(const discovery::HostFacts& q, const discovery::Peer* tb_peer);

}  // namespace cc::topology
