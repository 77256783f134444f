// Parser of the neighbour pings' output (cables.h): the addresses that answered an IPv6 ping
// to the all-nodes group ff02::1%IF. Reply lines, one per answer (duplicates included):
//   Linux iputils (`ping -6 -n`, recorded in tests/data/fixtures/linux/ping-6-ff02-1.txt):
//     64 bytes from fe80::fc:ff:fe00:1%eth0: icmp_seq=1 ttl=64 time=0.087 ms
//     64 bytes from fe80::2:3ff:fe04:501%tb1: icmp_seq=1 ttl=64 time=0.095 ms (DUP!)
//   iputils without -n, when the address has a name:
//     64 bytes from peer.example (fe80::1%tb1): icmp_seq=1 ttl=64 time=0.045 ms
//   BusyBox ping:   64 bytes from fe80::1%tb1: seq=0 ttl=64 time=0.123 ms
//   macOS ping6 (ping6.c's pr_pack format; tests/data/fixtures/macos/ping6-ff02-1.txt):
//     16 bytes from fe80::1021:1bac:fe1:b5e3%en6, icmp_seq=0 hlim=64 time=0.326 ms
//     16 bytes from fe80::8c4:3aff:fe1b:2c5d%en6, icmp_seq=0 hlim=64 time=1.108 ms(DUP!)
// Every other line (the PING/PING6 header, statistics, "From ... Destination unreachable")
// is ignored. The host's own address is among the answers (multicast is looped back).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace cc::discovery {

/// The addresses in the reply lines ("N bytes from ADDR..." as above): without %scope, in
/// canonical lower-case IPv6 form (inet_pton + inet_ntop: "fe80::1021:1bac:fe1:b5e3"),
/// unique, in order of first appearance. A reply whose address is not an IPv6 address is
/// skipped. Empty output (nothing answered) -> no addresses. Never an error today; a Result
/// so that callers treat it like every other parser.
util::Result<std::vector<std::string>> parse_ping_replies(std::string_view out);

}  // namespace cc::discovery
