// Parsers for what identifies a machine itself, whatever names it is reached by (one machine
// listed twice is refused by same_machines, cluster_state.h):
//  - Linux: /etc/machine-id (machine-id(5): "a single newline-terminated, hexadecimal,
//    32-character, lowercase ID"; "uninitialized" during a first boot), and the older
//    /var/lib/dbus/machine-id (D-Bus's copy, same format) when /etc/machine-id is missing or
//    unusable. Cloned VM images share it until it is regenerated.
//  - macOS: the hardware UUID, the IOPlatformUUID property of the IOPlatformExpertDevice
//    (`ioreg -rd1 -c IOPlatformExpertDevice` prints the entry's properties one per line:
//    `    "IOPlatformUUID" = "7C9A2D1E-5B4F-4E3A-9C8D-1F2E3D4C5B6A"`); System Information
//    shows the same value as "Hardware UUID".
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"

namespace cc::discovery {

inline constexpr std::string_view kMachineIdCommand = "cat /etc/machine-id";
inline constexpr std::string_view kDbusMachineIdCommand = "cat /var/lib/dbus/machine-id";
inline constexpr std::string_view kIoregPlatformCommand = "ioreg -rd1 -c IOPlatformExpertDevice";

/// The machine ID in `out` (the file's text): 32 hex digits on the first line, surrounding
/// blanks ignored, returned in lower case. Errors (parse_error naming `command`): empty,
/// "uninitialized", anything but 32 hex digits, all zeros (systemd's null ID).
util::Result<std::string> parse_machine_id(std::string_view out,
                                           std::string_view command = kMachineIdCommand);

/// The IOPlatformUUID from `ioreg -rd1 -c IOPlatformExpertDevice`: the value of the line
/// `"IOPlatformUUID" = "..."`, a UUID (8-4-4-4-12 hex digits), returned in upper case as macOS
/// prints it. Errors (parse_error): no such line, a value that is not a UUID.
util::Result<std::string> parse_ioreg_platform_uuid(std::string_view out);

}  // namespace cc::discovery
