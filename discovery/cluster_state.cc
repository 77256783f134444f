#include "discovery/cluster_state.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "discovery/json_fields.h"
#include "discovery/json_util.h"
#include "util/atomic_file.h"

namespace cc::discovery {

using detail::BadField;
using detail::opt;
using detail::read;
using nlohmann::json;

const HostFacts* ClusterState::find_host(const std::string& name) const {
  for (const auto& h : hosts) {
    if (h.host == name) return &h;
  }
  return nullptr;
}

const char* to_string(CableSource s) {
  return s == CableSource::kThunderbolt ? "thunderbolt" : "neighbour";
}

std::string port_label(const CableEnd& end) {
  if (end.receptacle && !end.interface.empty()) {
    return fmt::format("receptacle {} ({})", *end.receptacle, end.interface);
  }
  if (end.receptacle) return fmt::format("receptacle {}", *end.receptacle);
  return end.interface.empty() ? std::string("unknown port") : end.interface;
}

std::string end_label(const CableEnd& end) {
  return fmt::format("{} {}", end.host, port_label(end));
}

CableEnd end_of(const HostFacts& host, const Port& port) {
  CableEnd e;
  e.host = host.host;
  if (port.interface) e.interface = port.interface->name;
  e.receptacle = port.receptacle;
  e.rdma_device = port.rdma_device;
  return e;
}

void to_json(json& j, const CableEnd& v) {
  j = json{{"host", v.host},
           {"interface", v.interface},
           {"receptacle", opt(v.receptacle)},
           {"rdma_device", opt(v.rdma_device)}};
}
static void from_json(const json& j, CableEnd& v) {
  read(j, "host", v.host);
  read(j, "interface", v.interface);
  read(j, "receptacle", v.receptacle);
  read(j, "rdma_device", v.rdma_device);
}

static void from_json(const json& j, CableSource& v) {
  std::string s = j.get<std::string>();
  if (s == "thunderbolt") {
    v = CableSource::kThunderbolt;
  } else if (s == "neighbour") {
    v = CableSource::kNeighbour;
  } else {
    throw BadField(fmt::format("\"{}\" is neither \"thunderbolt\" nor \"neighbour\"", s));
  }
}

void to_json(json& j, const Cable& v) {
  json sources = json::array();
  for (auto s : v.sources) sources.push_back(to_string(s));
  j = json{{"a", v.a},
           {"b", v.b},
           {"link_speed_gbps", v.link_speed_gbps},
           {"generation", v.generation},
           {"sources", sources},
           {"seen_from_a", v.seen_from_a},
           {"seen_from_b", v.seen_from_b}};
}
static void from_json(const json& j, Cable& v) {
  read(j, "a", v.a);
  read(j, "b", v.b);
  read(j, "link_speed_gbps", v.link_speed_gbps);
  read(j, "generation", v.generation);
  read(j, "sources", v.sources);
  read(j, "seen_from_a", v.seen_from_a);
  read(j, "seen_from_b", v.seen_from_b);
}

void to_json(json& j, const HostProblem& v) {
  j = json{{"host", v.host}, {"exit_code", v.exit_code}, {"message", v.message}};
}
static void from_json(const json& j, HostProblem& v) {
  read(j, "host", v.host);
  read(j, "exit_code", v.exit_code);
  read(j, "message", v.message);
}

void to_json(json& j, const LinkAddress& v) {
  j = json{{"a", v.a},
           {"b", v.b},
           {"subnet", v.subnet},
           {"a_address", v.a_address},
           {"b_address", v.b_address},
           {"prefix_length", v.prefix_length}};
}
static void from_json(const json& j, LinkAddress& v) {
  read(j, "a", v.a);
  read(j, "b", v.b);
  read(j, "subnet", v.subnet);
  read(j, "a_address", v.a_address);
  read(j, "b_address", v.b_address);
  read(j, "prefix_length", v.prefix_length);
}

void to_json(json& j, const ClusterState& v) {
  j = json{{"schema", kClusterSchema},
           {"created_at", v.created_at},
           {"hosts", v.hosts},
           {"cables", v.cables},
           {"problems", v.problems},
           {"network", v.network}};
}

util::Result<ClusterState> cluster_state_from_json(const json& j) {
  if (!j.is_object()) {
    return util::error(util::ExitCode::kUsage, "cluster state: expected a JSON object");
  }
  std::string schema;
  if (auto s = get_string(j, "schema")) schema = *s;
  if (schema != kClusterSchema) {
    return util::error(util::ExitCode::kUsage,
                       fmt::format("cluster state: schema is \"{}\", expected \"{}\"", schema,
                                   kClusterSchema));
  }
  try {
    ClusterState state;
    read(j, "created_at", state.created_at);
    read(j, "hosts", state.hosts);
    read(j, "cables", state.cables);
    read(j, "problems", state.problems);
    read(j, "network", state.network);
    return state;
  } catch (const json::exception& e) {
    return util::error(util::ExitCode::kUsage,
                       fmt::format("cluster state: {}", json_error_text(e)));
  } catch (const BadField& e) {
    return util::error(util::ExitCode::kUsage, fmt::format("cluster state: {}", e.what()));
  }
}

util::Result<ClusterState> load_cluster_state(const std::string& path) {
  auto text = util::read_file(path);
  if (!text) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) return text.error();  // there, but not a state file
    return util::error(util::ExitCode::kUsage,
                       fmt::format("{} (make one with `clusterctl discover -o {}`)",
                                   text.error().message, path));
  }
  auto j = parse_json_output(path, *text);
  if (!j) return util::error(util::ExitCode::kUsage, j.error().message);
  auto state = cluster_state_from_json(*j);
  if (!state) {
    return util::error(util::ExitCode::kUsage,
                       fmt::format("{}: {} (write it again with `clusterctl discover -o {}`)",
                                   path, state.error().message, path));
  }
  return state;
}

util::Status save_cluster_state(const ClusterState& state, const std::string& path) {
  return util::write_file_atomic(path, json(state).dump(2) + "\n");
}

}  // namespace cc::discovery
