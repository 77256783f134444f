#include "discovery/macos_thunderbolt.h"

#include <algorithm>

#include <fmt/format.h>

#include "discovery/json_util.h"
#include "discovery/text.h"

namespace cc::discovery {

using nlohmann::json;

namespace {

constexpr int kMaxItemDepth = 8;

bool advertises_rdma(const json& item) {
  const json* services = get_array(item, "services_title");
  if (services == nullptr) return false;
  return std::any_of(services->begin(), services->end(), [](const json& s) {
    return get_int(s, "protocol_id_key") == kRdmaProtocolId;
  });
}

void collect_items(const json& parent, int depth, std::vector<Peer>& out, bool& tb3) {
  if (depth > kMaxItemDepth) return;
  const json* items = get_array(parent, "_items");
  if (items == nullptr) return;
  for (const json& item : *items) {
    if (!item.is_object()) continue;
    Peer p;
    p.depth = depth;
    p.name = get_string(item, "_name").value_or("");
    p.model = get_string(item, "device_name_key").value_or("");
    p.vendor = get_string(item, "vendor_name_key").value_or("");
    p.domain_uuid = get_string(item, "domain_uuid_key");
    if (p.domain_uuid && p.domain_uuid->empty()) p.domain_uuid.reset();
    p.kind = p.domain_uuid ? Peer::Kind::kHost : Peer::Kind::kDevice;
    p.rdma_enabled = advertises_rdma(item);
    if (depth == 1 && get_string(item, "mode_key") == "thunderbolt_three") tb3 = true;
    out.push_back(std::move(p));
    collect_items(item, depth + 1, out, tb3);
  }
}

}  // namespace

std::optional<int> parse_thunderbolt_speed(std::string_view label, int* max) {
  std::string_view s = trim(label);
  bool idle = false;
  if (s.substr(0, 6) == "Up to ") {
    idle = true;
    s.remove_prefix(6);
  }
  std::size_t unit = s.find(" Gb/s");
  if (unit == std::string_view::npos || unit + 5 != s.size()) return std::nullopt;
  std::string_view number = s.substr(0, unit);
  std::size_t dot = number.find('.');  // "40.0 Gb/s": whole Gb/s are enough
  if (dot != std::string_view::npos) {
    if (!parse_u64(number.substr(dot + 1))) return std::nullopt;
    number = number.substr(0, dot);
  }
  auto v = parse_int(number);
  if (!v) return std::nullopt;
  if (max != nullptr) *max = *v;
  return idle ? 0 : *v;
}

util::Result<std::vector<ThunderboltBus>> parse_system_profiler_thunderbolt(std::string_view out) {
  auto parsed = parse_json_output(kSystemProfilerCommand, out);
  if (!parsed) return parsed.error();
  const json& root = *parsed;
  const json* buses = get_array(root, "SPThunderboltDataType");
  if (buses == nullptr) {
    return parse_error(kSystemProfilerCommand, "no \"SPThunderboltDataType\" array at the top");
  }
  std::vector<ThunderboltBus> result;
  for (std::size_t i = 0; i < buses->size(); ++i) {
    const json& b = (*buses)[i];
    if (!b.is_object()) {
      return parse_error(kSystemProfilerCommand,
                         fmt::format("SPThunderboltDataType[{}] is not an object", i));
    }
    ThunderboltBus bus;
    bus.bus = get_string(b, "_name").value_or("");
    bus.domain_uuid = get_string(b, "domain_uuid_key").value_or("");
    if (const json* tag = get_object(b, "receptacle_1_tag")) {
      bus.receptacle = get_int(*tag, "receptacle_id_key");
      bus.speed_label = get_string(*tag, "current_speed_key").value_or("");
      int max = 0;
      bus.link_speed_gbps = parse_thunderbolt_speed(bus.speed_label, &max).value_or(0);
      bus.max_speed_gbps = max;
      bus.connected = get_string(*tag, "receptacle_status_key") == "receptacle_connected";
    }
    bool tb3 = false;
    collect_items(b, 1, bus.peers, tb3);
    if (bus.link_speed_gbps >= 80) {
      bus.generation = 5;
    } else if (bus.link_speed_gbps >= 40) {
      bus.generation = tb3 ? 3 : 4;
    } else if (bus.link_speed_gbps > 0) {
      bus.generation = 3;  // 20 Gb/s and below: Thunderbolt 3 at most
    }
    result.push_back(std::move(bus));
  }
  std::stable_sort(result.begin(), result.end(),
                   [](const ThunderboltBus& x, const ThunderboltBus& y) {
                     if (x.receptacle.has_value() != y.receptacle.has_value()) {
                       return x.receptacle.has_value();
                     }
                     return x.receptacle.value_or(0) < y.receptacle.value_or(0);
                   });
  return result;
}

const Peer* direct_host_peer(const ThunderboltBus& bus) {
  for (const Peer& p : bus.peers) {
    if (p.depth == 1 && p.kind == Peer::Kind::kHost) return &p;
  }
  return nullptr;
}

}  // namespace cc::discovery
