// Parser for `system_profiler SPThunderboltDataType -json` (macOS): one element per
// Thunderbolt bus, which on Apple silicon is one per port
// (docs/platform.md#discovering-cables-on-macos). Shape of the input, every key possibly missing:
//   {"SPThunderboltDataType": [
//     {"_name": "thunderboltusb4_bus_1", "domain_uuid_key": "<this port's domain>",
//      "receptacle_1_tag": {"receptacle_id_key": "2", "current_speed_key": "80 Gb/s",
//                           "receptacle_status_key": "receptacle_connected"},
//      "_items": [ {"_name": "MacBook Pro", "device_name_key": "Mac17,6",
//                   "domain_uuid_key": "<peer's domain>",          <- only other computers
//                   "services_title": [ {"protocol_id_key": 1}, {"protocol_id_key": 64087} ],
//                   "_items": [ ... ]} ]} ]}                       <- behind a hub or dock
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/host_facts.h"
#include "util/result.h"

namespace cc::discovery {

inline constexpr std::string_view kSystemProfilerCommand =
    "system_profiler SPThunderboltDataType -json";

/// XDomain protocol id that a Mac with RDMA enabled advertises ("rdma";
/// docs/platform.md#rdma-devices-and-port-states).
inline constexpr int kRdmaProtocolId = 64087;

/// One Thunderbolt bus (= one port) of this Mac.
struct ThunderboltBus {
  std::string bus;                // "_name": "thunderboltusb4_bus_1"
  std::string domain_uuid;        // this port's domain; "" when missing
  std::optional<int> receptacle;  // receptacle_1_tag.receptacle_id_key ("2" -> 2)
  std::string speed_label;        // current_speed_key as printed ("80 Gb/s", "Up to 120 Gb/s")
  int link_speed_gbps = 0;        // "80 Gb/s" -> 80; 0 for "Up to ..." (idle) or missing
  int max_speed_gbps = 0;         // "Up to 120 Gb/s" -> 120 (TB5 idle label); else = link speed
  bool connected = false;         // receptacle_status_key == "receptacle_connected"
  std::vector<Peer> peers;        // every item on the cable, depth first; depth 1 = on the cable
  int generation = 0;             // of the link: 5 (80 Gb/s and up), 4 (40 Gb/s), 3 when the
                                  // device's mode_key is "thunderbolt_three"; 0 without a link
};

/// Parses the whole output. Buses come back sorted by receptacle (buses without one last).
/// Never throws. Errors (parse_error): empty output, invalid JSON, no "SPThunderboltDataType"
/// array, a bus that is not an object. Missing keys are not errors: the fields stay empty.
/// Items nest at most 8 levels; deeper ones are ignored.
util::Result<std::vector<ThunderboltBus>> parse_system_profiler_thunderbolt(std::string_view out);

/// "80 Gb/s" -> 80, "40 Gb/s" -> 40, "Up to 120 Gb/s" -> 0 (idle); nullopt when unreadable.
/// `max` receives the "Up to" figure (or the link speed).
std::optional<int> parse_thunderbolt_speed(std::string_view label, int* max = nullptr);

/// The host peer directly on this bus's cable (kind kHost, depth 1), or nullptr.
const Peer* direct_host_peer(const ThunderboltBus& bus);

}  // namespace cc::discovery
