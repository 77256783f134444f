// `clusterctl rdma status`: is RDMA usable on every host and every cabled port, and if not,
// why and what to do. Pure: input is a discovery::ClusterState. Facts:
// docs/platform.md#rdma-devices-and-port-states, #link-speeds and
// docs/platform.md#thunderbolt-and-rdma-on-linux; the per-port reasoning is shared with
// verify-mesh's per-Mac checks through topology/rdma_port.h.
//
// One state per host, then one per cabled port (a port with a cable to another host of the
// cluster), in cluster and port order:
//   host (Mac)     ready                   rdma_ctl says enabled and ibv_devices lists devices
//                  disabled                `rdma_ctl status` says disabled: `rdma enable`
//                  enabled-but-no-devices  enabled, but ibv_devices lists nothing: reboot
//                  tb4-only                enabled, no devices, every link below 80 Gb/s: the
//                                          Mac has Thunderbolt 4 hardware only; RDMA needs
//                                          Thunderbolt 5 (TCP over the cables still works)
//                  os-too-old              macOS before 26.2 (RDMA needs 26.2 or later)
//                  unsupported             no rdma_ctl on macOS 26.2+ (not Apple silicon/TB5)
//                  unknown                 the RDMA state was not probed
//   host (Linux)   ready                   at least one RDMA device
//                  no-device               no RDMA device (or no RDMA subsystem): --soft-roce
//                  unknown                 the RDMA state was not probed
//   host (either)  unreachable             not probed: ClusterState::problems with exit_code 3
//                  bad-destination         not probed: its SSH destination was refused
//                                          before any connection (exit_code 2): fix how the
//                                          host is named, as the detail says
//                  probe-failed            not probed: any other problem
//   port           ready                   PORT_ACTIVE / ACTIVE with an IPv4-mapped GID
//                  tb4-link                Mac cable under 80 Gb/s or generation 3/4: RDMA is
//                                          impossible on this cable (checked first: enabling
//                                          RDMA never fixes it)
//                  no-interface            Mac receptacle with no "Thunderbolt N" hardware
//                                          port (no interface, so no address and no RDMA
//                                          device): `sudo networksetup -detectnewhardware`
//                                          (topology::no_hardware_port; before the host state,
//                                          which enabling RDMA would not fix for this port)
//                  (host state)            the host's own state when it is not ready
//                  waiting-for-peer        down (or no device) because the peer host has RDMA
//                                          off; `peer` names it
//                  no-device               no RDMA device rides on this port's interface
//                  port-down               down although the peer has RDMA: reseat the cable
//                  no-ipv4                 no IPv4-mapped GID ::ffff:a.b.c.d (when the GID
//                                          table was not read: no IPv4 on the interface):
//                                          `clusterctl network apply`
//
// Exit code (exit_code()): 3 when a host was unreachable; else 2 when a host is bad-destination;
// else 0 only when every host and every cabled port is ready; else 1.
//
// JSON (schema "clusterctl.rdma-status/1"; field names are stable, absent values are null):
//   {"schema": "clusterctl.rdma-status/1", "ready": false, "exit_code": 1,
//    "hosts": [{"host": "b", "platform": "macos",   // "macos", "linux", null when not probed
//               "os": {"name": "macOS", "version": "26.2", "build": "25C56"},  // or null
//               "state": "ready", "detail": "rdma_ctl status: enabled; 3 devices",
//               "fix": null, "devices": ["rdma_en1", "rdma_en2", "rdma_en6"],
//               "ports": [{"interface": "en6", "receptacle": 2, "rdma_device": "rdma_en6",
//                          "peer": {"host": "a", "interface": "en6", "receptacle": 2,
//                                   "rdma_device": null},
//                          "link_speed_gbps": 80, "port_state": "PORT_DOWN", "gid": null,
//                          "state": "waiting-for-peer", "waiting_for": "a",
//                          "detail": "PORT_DOWN: its peer a has RDMA disabled",
//                          "fix": "enable RDMA on a: `clusterctl rdma enable`"}]}]}
// "gid" is the IPv4-mapped GID as read from the GID table (null when the table was not read).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "discovery/cluster_state.h"
#include "discovery/fix_command.h"
#include "topology/rdma_readiness.h"
#include "util/exit_code.h"
#include "util/term.h"

namespace cc::provision {

inline constexpr const char* kRdmaStatusSchema = "clusterctl.rdma-status/1";

/// One state, for a host or a port (the header comment says which apply where), and its word:
/// topology/rdma_readiness.h, so that every command prints one word for one state.
using topology::RdmaReadiness;
using topology::to_string;
using topology::macos_at_least;

struct PortRdmaStatus {
  discovery::CableEnd end;                 // this port (host, interface, receptacle, RDMA device)
  discovery::CableEnd peer;                // the other end of its cable
  int link_speed_gbps = 0;                 // the cable's, per direction; 0 = unknown
  std::optional<std::string> rdma_device;  // the device riding on this port, if any
  std::string port_state;                  // "PORT_ACTIVE", "PORT_DOWN", "ACTIVE"; "" if none
  std::optional<std::string> gid;          // "::ffff:10.231.0.5" as read from the GID table
  RdmaReadiness state = RdmaReadiness::kUnknown;
  std::optional<std::string> waiting_for;  // kWaitingForPeer: the peer host
  std::string detail;                      // why, one line
  std::string fix;                         // what to do; "" when ready
};

struct HostRdmaStatus {
  std::string host;
  std::optional<bool> macos;  // nullopt when not probed
  std::optional<discovery::OsInfo> os;
  RdmaReadiness state = RdmaReadiness::kUnknown;
  std::string detail;
  std::string fix;
  std::vector<std::string> devices;   // RDMA device names, natural order
  std::vector<PortRdmaStatus> ports;  // cabled ports, port order
};

struct RdmaStatus {
  std::vector<HostRdmaStatus> hosts;  // probed hosts in cluster order, then the problems
};

/// The status of every host and cabled port (header comment). Never fails: missing facts give
/// "unknown", not errors. The fixes' commands name the cluster as `fix` says (fix_command.h).
RdmaStatus rdma_status(const discovery::ClusterState& state, const discovery::FixCommand& fix = {});

/// 3 when a host was unreachable; else 2 when a host is bad-destination; else 0 when every host
/// and cabled port is ready; else 1.
util::ExitCode exit_code(const RdmaStatus& s);

/// A table, one row per host and per cabled port, then what to do (each fix once).
std::string render_text(const RdmaStatus& s, const util::OutputStyle& style);

/// The JSON document above (pretty-printed, final newline).
std::string render_json(const RdmaStatus& s);
void to_json(nlohmann::json& j, const RdmaStatus& s);

}  // namespace cc::provision
