#include "discovery/macos_networksetup.h"

#include <fmt/format.h>

#include "discovery/text.h"

namespace cc::discovery {

namespace {

// "Key: value" -> value when line starts with key; nullopt otherwise.
std::optional<std::string_view> field(std::string_view line, std::string_view key) {
  line = trim(line);
  if (line.substr(0, key.size()) != key) return std::nullopt;
  return trim(line.substr(key.size()));
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

util::Result<std::vector<HardwarePort>> parse_networksetup_hardware_ports(std::string_view out) {
  if (blank(out)) return parse_error(kNetworksetupCommand, "empty output");
  std::vector<HardwarePort> ports;
  std::optional<HardwarePort> cur;
  bool seen_block = false;
  auto flush = [&] {
    if (cur && !cur->device.empty()) ports.push_back(std::move(*cur));
    cur.reset();
  };
  auto lines = split_lines(out);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (auto name = field(line, "Hardware Port:")) {
      flush();
      seen_block = true;
      HardwarePort p;
      p.name = std::string(*name);
      constexpr std::string_view kTb = "Thunderbolt ";
      if (p.name == "Thunderbolt Bridge") {
        p.kind = HardwarePort::Kind::kThunderboltBridge;
      } else if (name->substr(0, kTb.size()) == kTb && all_digits(name->substr(kTb.size()))) {
        p.receptacle = parse_int(name->substr(kTb.size()));
        if (!p.receptacle) {
          return parse_error(kNetworksetupCommand,
                             fmt::format("line {}: receptacle number in {} is out of range", i + 1,
                                         excerpt(*name)));
        }
        p.kind = HardwarePort::Kind::kThunderbolt;
      }
      cur = std::move(p);
    } else if (auto dev = field(line, "Device:")) {
      if (cur) cur->device = std::string(*dev);
    } else if (auto mac = field(line, "Ethernet Address:")) {
      if (cur && *mac != "N/A") cur->mac = std::string(*mac);
    } else if (trim(line) == "VLAN Configurations") {
      flush();
      break;
    }
  }
  flush();
  if (!seen_block) {
    return parse_error(kNetworksetupCommand,
                       fmt::format("no \"Hardware Port:\" line in {}", excerpt(trim(out))));
  }
  return ports;
}

std::optional<std::string> interface_for_receptacle(const std::vector<HardwarePort>& ports, int n) {
  for (const HardwarePort& p : ports) {
    if (p.kind == HardwarePort::Kind::kThunderbolt && p.receptacle == n) return p.device;
  }
  return std::nullopt;
}

}  // namespace cc::discovery
