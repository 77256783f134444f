#include "discovery/ping.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <optional>

#include "discovery/text.h"

namespace cc::discovery {
namespace {

// `addr` without %scope in canonical form; nullopt when it is not an IPv6 address.
std::optional<std::string> canonical_ipv6(std::string_view addr) {
  addr = addr.substr(0, addr.find('%'));
  if (addr.empty() || addr.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  std::string text(addr);
  std::array<unsigned char, 16> raw{};
  if (inet_pton(AF_INET6, text.c_str(), raw.data()) != 1) return std::nullopt;
  std::array<char, INET6_ADDRSTRLEN> out{};
  if (inet_ntop(AF_INET6, raw.data(), out.data(), out.size()) == nullptr) return std::nullopt;
  return std::string(out.data());
}

// The address of a reply line, as printed (may carry %scope); "" when `line` is not a reply.
std::string_view reply_address(std::string_view line) {
  line = trim(line);
  std::size_t digits = 0;
  while (digits < line.size() && line[digits] >= '0' && line[digits] <= '9') ++digits;
  constexpr std::string_view kFrom = " bytes from ";
  if (digits == 0 || line.substr(digits, kFrom.size()) != kFrom) return {};
  std::string_view rest = line.substr(digits + kFrom.size());
  std::size_t end = rest.find_first_of(" \t");
  std::string_view token = rest.substr(0, end);
  if (end != std::string_view::npos) {
    // "NAME (ADDR): ..." (iputils with name resolution): the address is in parentheses.
    std::string_view after = trim(rest.substr(end));
    if (after.starts_with('(')) {
      std::size_t close = after.find(')');
      if (close != std::string_view::npos) return after.substr(1, close - 1);
    }
  }
  // "ADDR: icmp_seq=..." (Linux) or "ADDR, icmp_seq=..." (macOS): drop the one separator.
  if (!token.empty() && (token.back() == ':' || token.back() == ',')) token.remove_suffix(1);
  return token;
}

}  // namespace

util::Result<std::vector<std::string>> parse_ping_replies(std::string_view out) {
  std::vector<std::string> addresses;
  for (std::string_view line : split_lines(out)) {
    std::string_view printed = reply_address(line);
    if (printed.empty()) continue;
    auto addr = canonical_ipv6(printed);
    if (!addr) continue;
    if (std::find(addresses.begin(), addresses.end(), *addr) == addresses.end()) {
      addresses.push_back(std::move(*addr));
    }
  }
  return addresses;
}

}  // namespace cc::discovery
