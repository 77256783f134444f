// Parsers for iproute2's JSON output on Linux: `ip -j addr` and `ip -j link`. Both are an
// array of objects, one per interface:
//   {"ifindex": 4, "ifname": "eth0", "flags": ["BROADCAST","MULTICAST","UP","LOWER_UP"],
//    "mtu": 1400, "operstate": "UP", "master": "br0", "link_type": "ether",
//    "address": "02:fc:00:00:00:01",
//    "addr_info": [{"family": "inet", "local": "192.0.2.2", "prefixlen": 24}, ...]}  <- addr only
// Bridge membership comes from "master"; a bridge's members are filled in from the other
// interfaces naming it. Recorded: tests/data/fixtures/linux/ip-j-{addr,link}.json.
#pragma once

#include <string_view>
#include <vector>

#include "discovery/host_facts.h"
#include "util/result.h"

namespace cc::discovery {

inline constexpr std::string_view kIpAddrCommand = "ip -j addr";
inline constexpr std::string_view kIpLinkCommand = "ip -j link";

/// Interfaces in output order: name, mac ("address" of link_type ether), up (flag UP), running
/// (flag LOWER_UP), mtu, IPv4/IPv6 addresses (addr only), bridge ("master"), members.
/// Elements without "ifname" are skipped. Errors (parse_error naming the command): empty
/// output, invalid JSON, not an array.
/// With `-d` (`ip -j -d addr`), kind is linkinfo's info_kind ("veth", "bridge"); without
/// linkinfo, kind is "loopback" for link_type loopback and "" otherwise. `command` names the
/// command line in error messages.
util::Result<std::vector<NetInterface>> parse_ip_addr(std::string_view out,
                                                      std::string_view command = kIpAddrCommand);
util::Result<std::vector<NetInterface>> parse_ip_link(std::string_view out);

}  // namespace cc::discovery
