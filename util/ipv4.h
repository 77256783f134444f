// IPv4 addresses and prefixes as plain numbers (host byte order): parsing, formatting and
// overlap tests, shared by the lab (its management subnet) and provisioning (per-cable subnets).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.h"

namespace cc::util {

/// An IPv4 prefix; `address` in host byte order, `length` 0..32.
struct Ipv4Prefix {
  std::uint32_t address = 0;
  int length = 32;
  friend bool operator==(const Ipv4Prefix&, const Ipv4Prefix&) = default;
};

/// "10.1.2.0/24" or "10.1.2.3" (a /32). Errors (kUsage) quote the text.
Result<Ipv4Prefix> parse_ipv4_prefix(std::string_view text);
/// Dotted quad of an address (host byte order).
std::string format_ipv4(std::uint32_t address);
/// "10.1.2.0/24".
std::string format_prefix(const Ipv4Prefix& p);
/// The netmask of a prefix length: 24 -> 0xffffff00; 0 -> 0.
std::uint32_t prefix_mask(int length);
/// True when the two prefixes share at least one address.
bool overlaps(const Ipv4Prefix& a, const Ipv4Prefix& b);

}  // namespace cc::util
