#include "discovery/host_facts.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "discovery/json_fields.h"
#include "discovery/json_util.h"

namespace cc::discovery {

using nlohmann::json;

using detail::BadField;
using detail::opt;
using detail::read;

const char* to_string(RdmaState s) {
  switch (s) {
    case RdmaState::kUnknown:
      return "unknown";
    case RdmaState::kUnsupported:
      return "unsupported";
    case RdmaState::kDisabled:
      return "disabled";
    case RdmaState::kEnabled:
      return "enabled";
  }
  return "unknown";
}

const char* to_string(Peer::Kind k) {
  return k == Peer::Kind::kHost ? "host" : "device";
}

void to_json(json& j, const OsInfo& v) {
  j = json{{"name", v.name}, {"version", v.version}, {"build", v.build}};
}
void from_json(const json& j, OsInfo& v) {
  read(j, "name", v.name);
  read(j, "version", v.version);
  read(j, "build", v.build);
}

void to_json(json& j, const NetInterface& v) {
  j = json{{"name", v.name},      {"mac", v.mac},   {"up", v.up},     {"running", v.running},
           {"mtu", v.mtu},        {"ipv4", v.ipv4}, {"ipv6", v.ipv6}, {"bridge", opt(v.bridge)},
           {"members", v.members}, {"kind", v.kind}};
}
void from_json(const json& j, NetInterface& v) {
  read(j, "name", v.name);
  read(j, "mac", v.mac);
  read(j, "up", v.up);
  read(j, "running", v.running);
  read(j, "mtu", v.mtu);
  read(j, "ipv4", v.ipv4);
  read(j, "ipv6", v.ipv6);
  read(j, "bridge", v.bridge);
  read(j, "members", v.members);
  read(j, "kind", v.kind);
}

void to_json(json& j, const Peer& v) {
  j = json{{"kind", to_string(v.kind)},
           {"name", v.name},
           {"model", v.model},
           {"vendor", v.vendor},
           {"domain_uuid", opt(v.domain_uuid)},
           {"rdma_enabled", v.rdma_enabled},
           {"depth", v.depth}};
}
void from_json(const json& j, Peer& v) {
  std::string kind = "device";
  read(j, "kind", kind);
  if (kind == "host") {
    v.kind = Peer::Kind::kHost;
  } else if (kind == "device") {
    v.kind = Peer::Kind::kDevice;
  } else {
    throw BadField(fmt::format("kind: \"{}\" is neither \"host\" nor \"device\"", kind));
  }
  read(j, "name", v.name);
  read(j, "model", v.model);
  read(j, "vendor", v.vendor);
  read(j, "domain_uuid", v.domain_uuid);
  read(j, "rdma_enabled", v.rdma_enabled);
  read(j, "depth", v.depth);
}

void to_json(json& j, const Port& v) {
  j = json{{"receptacle", opt(v.receptacle)},
           {"domain_uuid", v.domain_uuid},
           {"interface", v.interface ? json(*v.interface) : json(nullptr)},
           {"rdma_device", opt(v.rdma_device)},
           {"link_speed_gbps", v.link_speed_gbps},
           {"generation", v.generation},
           {"idle_speed_gbps", v.idle_speed_gbps},
           {"peers", v.peers}};
}
void from_json(const json& j, Port& v) {
  read(j, "receptacle", v.receptacle);
  read(j, "domain_uuid", v.domain_uuid);
  read(j, "interface", v.interface);
  read(j, "rdma_device", v.rdma_device);
  read(j, "link_speed_gbps", v.link_speed_gbps);
  read(j, "generation", v.generation);
  read(j, "idle_speed_gbps", v.idle_speed_gbps);
  read(j, "peers", v.peers);
}

void to_json(json& j, const Gid& v) {
  j = json{{"index", v.index}, {"gid", v.gid}};
}
void from_json(const json& j, Gid& v) {
  read(j, "index", v.index);
  read(j, "gid", v.gid);
}

void to_json(json& j, const RdmaPort& v) {
  j = json{{"port", v.port},
           {"state", v.state},
           {"active", v.active},
           {"active_mtu", v.active_mtu},
           {"link_layer", v.link_layer},
           {"gids", v.gids}};
}
void from_json(const json& j, RdmaPort& v) {
  read(j, "port", v.port);
  read(j, "state", v.state);
  read(j, "active", v.active);
  read(j, "active_mtu", v.active_mtu);
  read(j, "link_layer", v.link_layer);
  read(j, "gids", v.gids);
}

void to_json(json& j, const RdmaDevice& v) {
  j = json{{"name", v.name},
           {"transport", v.transport},
           {"node_guid", v.node_guid},
           {"netdev", opt(v.netdev)},
           {"ports", v.ports}};
}
void from_json(const json& j, RdmaDevice& v) {
  read(j, "name", v.name);
  read(j, "transport", v.transport);
  read(j, "node_guid", v.node_guid);
  read(j, "netdev", v.netdev);
  read(j, "ports", v.ports);
}

void to_json(json& j, const RdmaFacts& v) {
  j = json{{"state", to_string(v.state)}, {"devices", v.devices}};
}
void from_json(const json& j, RdmaFacts& v) {
  std::string state = "unknown";
  read(j, "state", state);
  bool found = false;
  for (RdmaState s :
       {RdmaState::kUnknown, RdmaState::kUnsupported, RdmaState::kDisabled, RdmaState::kEnabled}) {
    if (state == to_string(s)) {
      v.state = s;
      found = true;
    }
  }
  if (!found) {
    throw BadField(
        fmt::format("state: \"{}\" is not one of unknown, unsupported, disabled, enabled", state));
  }
  read(j, "devices", v.devices);
}

void to_json(json& j, const HostFacts& v) {
  j = json{{"host", v.host},
           {"os", v.os},
           {"model", v.model},
           {"cpu", v.cpu},
           {"memory_bytes", v.memory_bytes},
           {"management_address", v.management_address},
           {"machine_id", opt(v.machine_id)},
           {"ssh_host_key", opt(v.ssh_host_key)},
           {"ports", v.ports},
           {"interfaces", v.interfaces},
           {"rdma", v.rdma}};
}
void from_json(const json& j, HostFacts& v) {
  read(j, "host", v.host);
  read(j, "os", v.os);
  read(j, "model", v.model);
  read(j, "cpu", v.cpu);
  read(j, "memory_bytes", v.memory_bytes);
  read(j, "management_address", v.management_address);
  read(j, "machine_id", v.machine_id);
  read(j, "ssh_host_key", v.ssh_host_key);
  read(j, "ports", v.ports);
  read(j, "interfaces", v.interfaces);
  read(j, "rdma", v.rdma);
}

util::Result<HostFacts> host_facts_from_json(const json& j) {
  if (!j.is_object()) {
    return util::error(util::ExitCode::kUsage, "host facts: expected a JSON object");
  }
  try {
    HostFacts f;
    from_json(j, f);
    return f;
  } catch (const json::exception& e) {
    return util::error(util::ExitCode::kUsage, fmt::format("host facts: {}", json_error_text(e)));
  } catch (const BadField& e) {
    return util::error(util::ExitCode::kUsage, fmt::format("host facts: {}", e.what()));
  }
}

}  // namespace cc::discovery
