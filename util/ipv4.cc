#include "util/ipv4.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace cc::util {

std::uint32_t prefix_mask(int length) {
  return length <= 0 ? 0u : ~std::uint32_t{0} << (32 - length);
}

util::Result<Ipv4Prefix> parse_ipv4_prefix(std::string_view text) {
  auto bad = [&] {
    return util::error(ExitCode::kUsage, fmt::format("'{}' is not an IPv4 prefix", text));
  };
  Ipv4Prefix p;
  std::string_view addr = text;
  if (auto slash = text.find('/'); slash != std::string_view::npos) {
    addr = text.substr(0, slash);
    auto len = text.substr(slash + 1);
    auto [ptr, ec] = std::from_chars(len.data(), len.data() + len.size(), p.length);
    if (ec != std::errc() || ptr != len.data() + len.size() || p.length < 0 || p.length > 32) {
      return bad();
    }
  }
  in_addr a{};
  if (::inet_pton(AF_INET, std::string(addr).c_str(), &a) != 1) return bad();
  p.address = ntohl(a.s_addr);
  return p;
}

std::string format_ipv4(std::uint32_t address) {
  return fmt::format("{}.{}.{}.{}", address >> 24, (address >> 16) & 0xffu, (address >> 8) & 0xffu,
                     address & 0xffu);
}

std::string format_prefix(const Ipv4Prefix& p) {
  return fmt::format("{}/{}", format_ipv4(p.address), p.length);
}

bool overlaps(const Ipv4Prefix& a, const Ipv4Prefix& b) {
  std::uint32_t mask = prefix_mask(std::min(a.length, b.length));
  return (a.address & mask) == (b.address & mask);
}

}  // namespace cc::util
