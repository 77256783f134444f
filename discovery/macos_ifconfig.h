// Parser for `ifconfig -a` (macOS; BSD format). An interface block starts at column 0:
//   en2: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500
//       ether 36:4d:04:ea:4e:40
//       inet6 fe80::1021:1bac:fe1:b5e3%en2 prefixlen 64 secured scopeid 0xb
//       inet 169.254.205.255 netmask 0xffff0000 broadcast 169.254.255.255
//       member: en2 flags=3<LEARNING,DISCOVER>        <- bridges (bridge0) only
//       status: active
// Unknown lines (options, media, nd6, "..." elisions) are skipped. Sources: TN3205's
// `ifconfig en2` and `ifconfig bridge0` (tests/data/fixtures/macos).
#pragma once

#include <string_view>
#include <vector>

#include "discovery/host_facts.h"
#include "util/result.h"

namespace cc::discovery {

inline constexpr std::string_view kIfconfigCommand = "ifconfig -a";

/// Every interface in output order; `running` = RUNNING flag and, when a "status:" line is
/// present, status active. Bridge members come back in natural order, and each member listed
/// by a bridge gets `bridge` set when it appears in the same output.
/// Errors (parse_error): empty output, no interface header line, an mtu that is not a number.
util::Result<std::vector<NetInterface>> parse_ifconfig(std::string_view out);

}  // namespace cc::discovery
