// Parser for `networksetup -listallhardwareports` (macOS): blocks of
//   Hardware Port: Thunderbolt 2
//   Device: en6
//   Ethernet Address: 02:00:00:00:00:02
// "Thunderbolt N" is receptacle N, whose IP interface is the Device (N is not X: on the
// fixtures' MacBook Pro, Thunderbolt 2 -> en6). "Thunderbolt Bridge" is bridge0. Dock NICs
// ("Thunderbolt Ethernet Slot N") are not peer ports
// (docs/platform.md#discovering-cables-on-macos). The trailing "VLAN Configurations" section is
// ignored.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace cc::discovery {

inline constexpr std::string_view kNetworksetupCommand = "networksetup -listallhardwareports";

struct HardwarePort {
  enum class Kind {
    kThunderbolt,        // "Thunderbolt N": a Thunderbolt port's IP interface
    kThunderboltBridge,  // "Thunderbolt Bridge" (bridge0)
    kOther,              // Wi-Fi, Ethernet, dock NICs ("Thunderbolt Ethernet Slot 0"), ...
  };
  std::string name;    // "Thunderbolt 2"
  std::string device;  // "en6"
  std::string mac;     // "Ethernet Address"; "" when absent or "N/A"
  Kind kind = Kind::kOther;
  std::optional<int> receptacle;  // N of "Thunderbolt N"
};

/// Every hardware port with a Device, in output order. Errors (parse_error): empty output,
/// no "Hardware Port:" block at all, a "Thunderbolt N" whose N does not fit an int.
util::Result<std::vector<HardwarePort>> parse_networksetup_hardware_ports(std::string_view out);

/// The IP interface of receptacle `n` ("en6"), or nullopt.
std::optional<std::string> interface_for_receptacle(const std::vector<HardwarePort>& ports, int n);

}  // namespace cc::discovery
