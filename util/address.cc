#include "util/address.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include <fmt/format.h>

#include "util/host_name.h"
#include "util/text.h"

namespace cc::util {
namespace {

constexpr const char* kWant = "give an IPv4 address (10.0.0.1) or an IPv6 one (2001:db8::1)";

bool is_v4(const std::string& s) {
  in_addr a{};
  return ::inet_pton(AF_INET, s.c_str(), &a) == 1;
}

bool is_v6(const std::string& s) {
  in6_addr a{};
  return ::inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

// An interface name as a scope: "en0", "eth0", "enp3s0f1", "bridge0.10", or an index ("4").
bool is_scope(std::string_view s) {
  return !s.empty() && s.size() < IF_NAMESIZE && std::all_of(s.begin(), s.end(), [](char c) {
    return is_ascii_alnum(c) || c == '.' || c == '_' || c == '-';
  });
}

// Why digits and dots are no IPv4 address ("1.2.3", "10.0.0.300", "10..0.1").
std::string dotted_problem(std::string_view text) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t dot = text.find('.', start);
    parts.push_back(text.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  const std::string shape = "four numbers from 0 to 255 separated by dots";
  if (parts.size() != 4) {
    return fmt::format("is not an IPv4 address: it has {} part{}, and an address is {}",
                       parts.size(), parts.size() == 1 ? "" : "s", shape);
  }
  for (std::string_view p : parts) {
    if (p.empty()) {
      return fmt::format("is not an IPv4 address: it has an empty part, and an address is {}",
                         shape);
    }
    auto n = parse_u64(p);
    if (!n || *n > 255) {
      return fmt::format("is not an IPv4 address: {} is not a number from 0 to 255", p);
    }
    if (p.size() > 1 && p.front() == '0') {
      return fmt::format(
          "is not an IPv4 address: {} has a leading zero (some tools read it "
          "as octal): write {}",
          p, *n);
    }
  }
  return fmt::format("is not an IPv4 address: an address is {}", shape);
}

}  // namespace

std::optional<std::string> host_name_problem(std::string_view name) {
  auto fine = [](char c) { return is_ascii_alnum(c) || c == '.' || c == '_' || c == '-'; };
  std::string what;  // the first character that breaks the rule, whole (utf8_char_length)
  if (name.empty()) {
    what = "it is empty";
  } else if (name.size() > kMaxHostNameLength) {
    what = fmt::format("it has {} characters", name.size());
  } else if (!is_ascii_alnum(name.front()) && fine(name.front())) {
    what = fmt::format("it starts with {}", quote(name.substr(0, 1)));
  } else {
    for (std::size_t i = 0; i < name.size(); i += utf8_char_length(name.substr(i))) {
      if (fine(name[i])) continue;
      const std::string_view c = name.substr(i, utf8_char_length(name.substr(i)));
      what = c == " " ? "it has a space" : fmt::format("it has {}", quote(c));
      break;
    }
  }
  if (what.empty()) return std::nullopt;
  // "h1 " (a blank pasted into a hostfile): the name it was meant to be.
  const std::string_view trimmed = trim(name);
  const bool blanks = trimmed.size() != name.size() && !host_name_problem(trimmed);
  return fmt::format("host name {} is not valid: use letters, digits, '.', '_' and '-', starting "
                     "with a letter or digit, at most {} characters ({}){}",
                     quote(name), kMaxHostNameLength, what,
                     blanks ? fmt::format(" (did you mean {}?)", quote(trimmed)) : std::string());
}

std::optional<std::string> ssh_destination_problem(std::string_view destination) {
  std::string_view host = destination;
  if (const auto at = host.rfind('@'); at != std::string_view::npos) {
    const std::string_view user = host.substr(0, at);
    host.remove_prefix(at + 1);
    // An '@' too: ssh takes all before the last '@' as the user, and a directory service's
    // user is one ("jdoe@corp.example.com@h1"); a doubled '@' that is a typo is named when the
    // login fails (remote/ssh_connect.cc).
    const bool user_ok = !user.empty() && std::all_of(user.begin(), user.end(), [](char c) {
      return is_ascii_alnum(c) || c == '.' || c == '_' || c == '-' || c == '@';
    });
    if (!user_ok) {
      return fmt::format("SSH destination {} is not valid: its user {} may hold letters, digits, "
                         "'.', '_', '-' and '@'",
                         quote(destination), quote(user));
    }
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.find(':') != std::string_view::npos && !address_problem(host)) return std::nullopt;
  // A DNS name that ssh resolves may be longer than a host's own name: up to 253 characters in
  // labels of 1 to 63 (RFC 1035, 2.3.4), each following the host-name rule.
  if (host.size() > kMaxHostNameLength && host.size() <= kMaxDnsNameLength) {
    bool labels_fine = true;
    for (std::string_view rest = host; labels_fine && !rest.empty();) {
      const std::size_t dot = rest.find('.');
      const std::string_view label = rest.substr(0, dot);
      labels_fine = label.size() <= 63 && !host_name_problem(label);
      rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
    }
    if (labels_fine && host.back() != '.') return std::nullopt;
  }
  return host_name_problem(host);
}

std::optional<std::string> address_problem(std::string_view text) {
  if (text.empty()) return fmt::format("is empty: {}", kWant);
  if (std::any_of(text.begin(), text.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == 0x7f; })) {
    return fmt::format("has a space or a control character in it: {}", kWant);
  }
  const std::string s(text);
  if (is_v4(s) || is_v6(s)) return std::nullopt;
  if (text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close != std::string_view::npos && close + 1 < text.size() && text[close + 1] == ':') {
      return fmt::format("has a port ('{}'): give the address alone, {}", text.substr(close + 1),
                         text.substr(1, close - 1));
    }
    if (close == text.size() - 1) {
      return fmt::format(
          "is in brackets: write the address alone, {} (brackets only set an "
          "IPv6 address apart from a port)",
          text.substr(1, close - 1));
    }
    return fmt::format("is not an IP address: {}", kWant);
  }
  if (const std::size_t pct = text.find('%'); pct != std::string_view::npos) {
    const std::string addr(text.substr(0, pct));
    const std::string_view scope = text.substr(pct + 1);
    if (!is_v6(addr)) {
      return fmt::format(
          "is not an IP address: only an IPv6 address takes a %scope "
          "(fe80::1%en0), and {} is not one",
          addr);
    }
    if (!is_scope(scope)) {
      return fmt::format(
          "has {} after '%', which is not an interface name: write the interface "
          "the address is reached through (fe80::1%en0)",
          scope.empty() ? std::string("nothing") : fmt::format("'{}'", scope));
    }
    return std::nullopt;
  }
  if (const std::size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    const std::string_view before = text.substr(0, colon), after = text.substr(colon + 1);
    const bool port = !after.empty() && parse_u64(after).has_value();
    if (port && before.find(':') == std::string_view::npos) {
      return fmt::format("has a port ('{}'): give the address alone, {}", text.substr(colon),
                         before);
    }
    return fmt::format(
        "is not an IPv6 address (eight groups of hex digits separated by ':', "
        "'::' for a run of zeros): {}",
        kWant);
  }
  if (std::all_of(text.begin(), text.end(), [](char c) { return is_ascii_digit(c) || c == '.'; })) {
    return dotted_problem(text);
  }
  return fmt::format("is a host name, not an IP address: {}", kWant);
}

std::optional<std::string> local_only_problem(std::string_view address) {
  std::string text(address.substr(0, address.find('%')));
  in_addr v4{};
  in6_addr v6{};
  bool unspecified = false, loopback = false;
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    const uint32_t host_order = ntohl(v4.s_addr);
    unspecified = host_order == 0;
    loopback = (host_order >> 24) == 127;
  } else if (::inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    unspecified = IN6_IS_ADDR_UNSPECIFIED(&v6);
    loopback = IN6_IS_ADDR_LOOPBACK(&v6);
  }
  if (unspecified) {
    return std::string(
        "is the unspecified address: it means every address to a listener, but a host "
        "connecting to it reaches itself");
  }
  if (loopback) {
    return std::string("is a loopback address: on every host it names that host itself");
  }
  return std::nullopt;
}

std::optional<std::string> rank_address_problem(std::string_view address) {
  if (auto local = local_only_problem(address)) return local;
  if (self_assigned_ipv4(address)) {
    return std::string(
        "is a self-assigned IPv4 address (169.254/16): a host routes all of 169.254/16 out of "
        "one interface, so a connection to it leaves by whichever port holds that route, not "
        "the one it is on (docs/platform.md#self-assigned-addresses)");
  }
  if (link_local_ipv6(address)) {
    return std::string(
        "is a link-local IPv6 address (fe80::/10): it is reached only through an interface of "
        "each connecting host's own, and a %scope names an interface of one machine only");
  }
  return std::nullopt;
}

bool self_assigned_ipv4(std::string_view address) {
  in_addr v4{};
  const std::string text(address);
  return ::inet_pton(AF_INET, text.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 16) == 0xa9fe;
}

bool link_local_ipv6(std::string_view address) {
  in6_addr v6{};
  const std::string text(address.substr(0, address.find('%')));
  return ::inet_pton(AF_INET6, text.c_str(), &v6) == 1 && IN6_IS_ADDR_LINKLOCAL(&v6);
}

std::string host_port(std::string_view host, int port) {
  const bool bracket = host.find(':') != std::string_view::npos && !host.starts_with('[');
  return bracket ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

std::string host_key(std::string_view name) {
  if (name.size() > 1 && name.back() == '.') name.remove_suffix(1);
  std::string out(name);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return out;
}

bool same_host_name(std::string_view a, std::string_view b) {
  return host_key(a) == host_key(b);
}

std::optional<std::pair<std::size_t, std::size_t>> same_host(
    const std::vector<std::string>& names) {
  std::unordered_map<std::string, std::size_t> first;
  first.reserve(names.size());
  for (std::size_t j = 0; j < names.size(); ++j) {
    auto [it, fresh] = first.emplace(host_key(names[j]), j);
    if (!fresh) return std::make_pair(it->second, j);
  }
  return std::nullopt;
}

std::string same_host_note(std::string_view a, std::string_view b) {
  return a == b ? std::string() : std::string(" (host names ignore case and a final dot)");
}

}  // namespace cc::util
