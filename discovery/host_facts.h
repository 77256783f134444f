// The facts discovery gathers about one host, as one JSON-serialisable value: what the probes
// (macOS and Linux, over remote::Executor) fill in from the parsers in this folder, and what
// topology/ and verify-mesh read. Every field has a documented JSON name; units are in the
// name (memory_bytes, link_speed_gbps) or the comment.
//
// JSON shape (field names are stable; absent optionals are written as null):
//   {"host": "studio1", "os": {"name": "macOS", "version": "26.2", "build": "25C56"},
//    "model": "Mac16,9", "cpu": "Apple M3 Ultra", "memory_bytes": 274877906944,
//    "management_address": "10.0.0.11",
//    "machine_id": "5E0F1C2A-7B3D-5A49-9C1E-0D2F3A4B5C6D",   // or null (optional, see below)
//    "ssh_host_key": "SHA256:uZ2yq...",                       // or null (optional)
//    "ports": [ {"receptacle": 2, "domain_uuid": "...", "interface": {...},
//                "rdma_device": "rdma_en6", "link_speed_gbps": 80, "generation": 5,
//                "idle_speed_gbps": 0,     // optional: a state written before it reads as 0
//                "peers": [ {"kind": "host", "name": "MacBook Pro", "model": "Mac17,6",
//                            "vendor": "Apple Inc.", "domain_uuid": "...",
//                            "rdma_enabled": true, "depth": 1} ]} ],
//    "interfaces": [ {"name": "bridge0", "mac": "...", "up": true, "running": true,
//                     "mtu": 1500, "ipv4": [...], "ipv6": [...], "bridge": null,
//                     "members": ["en2"]} ],
//    "rdma": {"state": "enabled", "devices": [ {"name": "rdma_en6", "transport":
//             "Thunderbolt (100)", "node_guid": "...", "netdev": "en6",
//             "ports": [ {"port": 1, "state": "PORT_DOWN", "active": false, "active_mtu": 4096,
//                         "link_layer": "Thunderbolt", "gids": [ {"index": 1,
//                         "gid": "::ffff:169.254.205.255"} ]} ]} ]}}
//
// machine_id and ssh_host_key came later than the rest: a state file written before them (or
// by a probe that found none) lacks them or has null, and reads back as "unknown", never as an
// error. They keep schema "clusterctl.cluster/1": nothing that was valid became invalid.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "util/result.h"

namespace cc::discovery {

/// Operating system. macOS: `sw_vers` (ProductName, ProductVersion, BuildVersion);
/// Linux: /etc/os-release (NAME, VERSION_ID; build empty).
struct OsInfo {
  std::string name;     // "macOS", "Debian GNU/Linux"
  std::string version;  // "26.2", "12"
  std::string build;    // "25C56"; "" when the OS has none
};

/// One network interface as `ifconfig -a` (macOS) or `ip -j addr` / `ip -j link` (Linux)
/// report it.
struct NetInterface {
  std::string name;               // "en6", "bridge0", "thunderbolt0"
  std::string mac;                // "36:4d:04:ea:4e:40"; "" when none is reported
  bool up = false;                // administratively up (flag UP)
  bool running = false;           // carrier: RUNNING + "status: active" (macOS), LOWER_UP (Linux)
  int mtu = 0;                    // bytes; 0 when not reported
  std::vector<std::string> ipv4;  // addresses without prefix length: "169.254.205.255"
  std::vector<std::string> ipv6;  // without prefix length or %scope: "fe80::1021:1bac:fe1:b5e3"
  std::optional<std::string> bridge;  // the bridge this interface is a member of ("bridge0")
  std::vector<std::string> members;   // for a bridge: its member interfaces, natural order
  std::string kind;  // Linux link kind from `ip -d` linkinfo ("veth", "bridge", "vlan");
                     // "" for a physical interface and on macOS
};

/// What is at the other end of a Thunderbolt cable.
struct Peer {
  enum class Kind {
    kHost,
    kDevice
  };  // kHost: another computer (it has a domain UUID);
      // kDevice: dock, hub, display, drive (none)
  Kind kind = Kind::kDevice;
  std::string name;                        // "MacBook Pro", "SB-XTM5"
  std::string model;                       // device_name_key: "Mac17,6" for a Mac
  std::string vendor;                      // "Apple Inc.", "Sabrent"
  std::optional<std::string> domain_uuid;  // the peer's port domain (macOS domain_uuid_key,
                                           // Linux XDomain unique_id); hosts only
  bool rdma_enabled = false;  // the peer advertises XDomain service protocol_id_key 64087
                              // ("rdma"; docs/platform.md#rdma-devices-and-port-states)
  int depth = 1;              // 1 = on the cable itself; 2+ = behind a hub or dock
                              // (no RDMA through a hub: docs/platform.md#link-speeds)
};

/// A port as a triplet: Thunderbolt receptacle / network interface / RDMA device.
struct Port {
  std::optional<int> receptacle;  // receptacle number printed on the case ("1".."n" on macOS)
  std::string domain_uuid;        // this port's own Thunderbolt domain ("" when unknown)
  std::optional<NetInterface> interface;   // "Thunderbolt N" -> enX (networksetup) on macOS
  std::optional<std::string> rdma_device;  // "rdma_enX" when ibv_devices lists it
  int link_speed_gbps = 0;  // negotiated, per direction: 80 (TB5), 40 (TB3/TB4); 0 = no link
  int generation = 0;       // Thunderbolt generation of the link: 5, 4 or 3; 0 = no link
  int idle_speed_gbps = 0;  // an idle port's "Up to N Gb/s" (macOS system_profiler): what the
                            // port can do, 120 or 80 (Thunderbolt 5), 40 (Thunderbolt 4); 0 when
                            // it has a link (the label is then the negotiated speed) or unknown
  std::vector<Peer> peers;  // devices on the cable; at most one kHost at depth 1
};

/// One port of an RDMA device (`ibv_devinfo -v`, `rdma -j link`).
struct Gid {
  int index = 0;    // GID[index]
  std::string gid;  // "fe80::344d:4ff:feea:4e40", "::ffff:169.254.205.255"
};
struct RdmaPort {
  int port = 1;            // always 1 on macOS (docs/platform.md#rdma-devices-and-port-states)
  std::string state;       // "PORT_ACTIVE", "PORT_DOWN" (ibv) or "ACTIVE", "DOWN" (rdma link)
  bool active = false;     // state is PORT_ACTIVE / ACTIVE
  int active_mtu = 0;      // bytes; 0 when not reported
  std::string link_layer;  // "Thunderbolt", "InfiniBand", "Ethernet"
  std::vector<Gid> gids;   // GID table in index order (only with `ibv_devinfo -v`)
};
struct RdmaDevice {
  std::string name;                   // "rdma_en6", "mlx5_0", "rxe_0"
  std::string transport;              // "Thunderbolt (100)", "InfiniBand (0)"
  std::string node_guid;              // as printed
  std::optional<std::string> netdev;  // the IP interface it rides on ("en6", "p1p1")
  std::vector<RdmaPort> ports;
};

/// RDMA on a host.
enum class RdmaState {
  kUnknown,      // not probed, or the probe failed
  kUnsupported,  // no RDMA here: rdma_ctl missing (older macOS), no RDMA subsystem (Linux)
  kDisabled,     // `rdma_ctl status` prints "disabled"
  kEnabled,      // `rdma_ctl status` prints "enabled"; Linux: at least one RDMA device
};
struct RdmaFacts {
  RdmaState state = RdmaState::kUnknown;
  std::vector<RdmaDevice> devices;  // natural order of name
};

struct HostFacts {
  std::string host;  // the name the operator gave (SSH alias, lab host)
  OsInfo os;
  std::string model;                     // hw.model ("Mac16,9"); Linux: DMI product name or ""
  std::string cpu;                       // machdep.cpu.brand_string / model name; "" when unknown
  std::uint64_t memory_bytes = 0;        // hw.memsize; Linux MemTotal x 1024
  std::string management_address;        // the address the probe reached the host on
  /// What identifies the machine itself, whatever it is called (machine_id.h): on macOS its
  /// hardware UUID (IOPlatformUUID, "5E0F1C2A-7B3D-5A49-9C1E-0D2F3A4B5C6D", upper case), on
  /// Linux /etc/machine-id (else /var/lib/dbus/machine-id; 32 lower-case hex digits). nullopt
  /// when the probe found none (a container without one, a bundle recorded before).
  std::optional<std::string> machine_id;
  /// The SHA256 fingerprint of the host key the SSH connection authenticated ("SHA256:" and
  /// unpadded base64, as `ssh-keygen -l` prints it; remote::Executor::host_key_fingerprint).
  /// nullopt for the local host and for bundles without a recording of it.
  std::optional<std::string> ssh_host_key;
  std::vector<Port> ports;               // Thunderbolt / cable ports, receptacle order
  std::vector<NetInterface> interfaces;  // every other interface (bridges, Wi-Fi, Ethernet)
  RdmaFacts rdma;
};

const char* to_string(RdmaState s);   // "unknown", "unsupported", "disabled", "enabled"
const char* to_string(Peer::Kind k);  // "host", "device"

void to_json(nlohmann::json& j, const OsInfo& v);
void to_json(nlohmann::json& j, const NetInterface& v);
void to_json(nlohmann::json& j, const Peer& v);
void to_json(nlohmann::json& j, const Port& v);
void to_json(nlohmann::json& j, const Gid& v);
void to_json(nlohmann::json& j, const RdmaPort& v);
void to_json(nlohmann::json& j, const RdmaDevice& v);
void to_json(nlohmann::json& j, const RdmaFacts& v);
void to_json(nlohmann::json& j, const HostFacts& v);

// from_json throws nlohmann::json::exception (or std::runtime_error for a bad enum string);
// callers outside this file use host_facts_from_json, which never throws.
void from_json(const nlohmann::json& j, OsInfo& v);
void from_json(const nlohmann::json& j, NetInterface& v);
void from_json(const nlohmann::json& j, Peer& v);
void from_json(const nlohmann::json& j, Port& v);
void from_json(const nlohmann::json& j, Gid& v);
void from_json(const nlohmann::json& j, RdmaPort& v);
void from_json(const nlohmann::json& j, RdmaDevice& v);
void from_json(const nlohmann::json& j, RdmaFacts& v);
void from_json(const nlohmann::json& j, HostFacts& v);

/// HostFacts back from the JSON above (a cluster state file, a `--json` output). Unknown
/// fields are ignored, missing ones keep their defaults. Errors (kUsage): not an object, a
/// field of the wrong type, an unknown enum string; the message names the field path
/// ("ports.interface.mtu: type must be number, but is string").
util::Result<HostFacts> host_facts_from_json(const nlohmann::json& j);

}  // namespace cc::discovery
