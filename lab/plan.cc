#include "lab/plan.h"

#include <algorithm>
#include <charconv>
#include <map>

#include <arpa/inet.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cc::lab {
namespace {

using util::ExitCode;

constexpr int kSubnetCandidates = 1000;

// FNV-1a, 32 bits: stable across platforms and releases (names, tags and subnets derive from it).
std::uint32_t fnv1a(std::string_view text) {
  std::uint32_t h = 2166136261u;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

// Appends one formatted line to an `ip -batch` script.
template <class... Args>
void add_line(std::string& script, fmt::format_string<Args...> format, Args&&... args) {
  fmt::format_to(std::back_inserter(script), format, std::forward<Args>(args)...);
  script += '\n';
}

}  // namespace

util::Result<std::vector<Ipv4Prefix>> used_prefixes_from_ip_json(std::string_view route_json,
                                                                 std::string_view addr_json) {
  std::vector<Ipv4Prefix> used;
  auto parse = [](std::string_view text, std::string_view what) -> util::Result<nlohmann::json> {
    auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_array()) {
      return util::error(ExitCode::kUsage,
                         fmt::format("cannot read the output of `{}`: not a JSON list", what));
    }
    return j;
  };
  auto routes = parse(route_json, "ip -j -4 route show table all");
  if (!routes) return routes.error();
  for (const auto& r : *routes) {
    auto dst = r.value("dst", std::string());
    if (dst.empty() || dst == "default") continue;
    if (auto p = parse_ipv4_prefix(dst)) used.push_back(*p);  // skips IPv6 and odd entries
  }
  auto links = parse(addr_json, "ip -j -4 addr show");
  if (!links) return links.error();
  for (const auto& link : *links) {
    if (!link.contains("addr_info") || !link["addr_info"].is_array()) continue;
    for (const auto& a : link["addr_info"]) {
      if (a.value("family", std::string()) != "inet") continue;
      auto p = parse_ipv4_prefix(a.value("local", std::string()));
      if (!p) continue;
      p->length = a.value("prefixlen", 32);
      used.push_back(*p);
    }
  }
  return used;
}

std::string lab_tag(std::string_view name) {
  return fmt::format("cc{:06x}", fnv1a(name) & 0xffffffu);
}

std::string netns_name(std::string_view name, int host) {
  return fmt::format("cc-{}-h{}", name, host);
}

std::string bridge_name(std::string_view tag) {
  return fmt::format("{}br", tag);
}

std::string mgmt_link_name(std::string_view tag, int host) {
  return fmt::format("{}m{}", tag, host);
}

bool is_lab_link(std::string_view tag, std::string_view ifname) {
  if (ifname.size() <= tag.size() || ifname.substr(0, tag.size()) != tag) return false;
  auto rest = ifname.substr(tag.size());
  if (rest == "br") return true;
  // A positive decimal without leading zeros, consuming all of `digits`.
  auto number = [](std::string_view digits) {
    int n = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    return !digits.empty() && ec == std::errc() && ptr == digits.data() + digits.size() &&
           digits[0] != '0' && n >= 1;
  };
  if (rest.size() >= 2 && rest[0] == 'm') return number(rest.substr(1));
  if (rest.size() >= 4 && rest[0] == 's') {
    auto p = rest.find('p');
    return p != std::string_view::npos && number(rest.substr(1, p - 1)) &&
           number(rest.substr(p + 1));
  }
  return false;
}

std::string free_port_link_name(std::string_view tag, int host, int port) {
  return fmt::format("{}s{}p{}", tag, host, port);
}

std::string port_name(int receptacle) {
  return fmt::format("tb{}", receptacle);
}

std::string lab_mac(std::string_view tag, int host, int port) {
  // tag = "cc" + 6 hex digits: its bytes are the MAC's bytes 2..4.
  auto t = tag.substr(2);
  return fmt::format("02:{}:{}:{}:{:02x}:{:02x}", t.substr(0, 2), t.substr(2, 2), t.substr(4, 2),
                     host, port);
}

Ipv4Prefix subnet_candidate(std::string_view name, int k) {
  std::uint32_t h = fnv1a(fmt::format("subnet:{}:{}", name, k));
  return Ipv4Prefix{(10u << 24) | (((h >> 8) & 0xffu) << 16) | ((h & 0xffu) << 8), 24};
}

util::Result<Ipv4Prefix> choose_subnet(std::string_view name, const std::vector<Ipv4Prefix>& used) {
  auto collides = [](const Ipv4Prefix& candidate, const auto& prefixes) {
    return std::any_of(std::begin(prefixes), std::end(prefixes),
                       [&](const Ipv4Prefix& u) { return overlaps(candidate, u); });
  };
  for (int k = 0; k < kSubnetCandidates; ++k) {
    const Ipv4Prefix candidate = subnet_candidate(name, k);
    if (!collides(candidate, kReservedPrefixes) && !collides(candidate, used)) return candidate;
  }
  return util::error(ExitCode::kUsage,
                     fmt::format("no free 10.X.Y.0/24 subnet found for lab '{}' after {} tries: "
                                 "this machine's routes cover most of 10.0.0.0/8",
                                 name, kSubnetCandidates));
}

std::vector<Cable> number_ports(std::string_view tag, int hosts,
                                const std::vector<CablePair>& cables) {
  // Per host, its cable ends as (peer, cable index, which end): sorting gives receptacle order.
  struct End {
    int peer;
    std::size_t cable;
    bool is_a;
  };
  std::vector<std::vector<End>> ends(static_cast<std::size_t>(hosts) + 1);
  for (std::size_t i = 0; i < cables.size(); ++i) {
    ends[static_cast<std::size_t>(cables[i].a)].push_back({cables[i].b, i, true});
    ends[static_cast<std::size_t>(cables[i].b)].push_back({cables[i].a, i, false});
  }
  std::vector<Cable> out(cables.size());
  for (int host = 1; host <= hosts; ++host) {
    auto& list = ends[static_cast<std::size_t>(host)];
    std::stable_sort(list.begin(), list.end(), [](const End& x, const End& y) {
      return x.peer != y.peer ? x.peer < y.peer : x.cable < y.cable;
    });
    int port = 0;
    for (const auto& e : list) {
      ++port;
      PortEnd& end = e.is_a ? out[e.cable].a : out[e.cable].b;
      end = PortEnd{host, port, lab_mac(tag, host, port)};
    }
  }
  return out;
}

util::Result<LabPlan> make_plan(std::string_view name, const Topology& topology,
                                const std::vector<Ipv4Prefix>& used) {
  if (auto s = validate_lab_name(name); !s) return s.error();
  LabPlan plan;
  plan.name = std::string(name);
  plan.tag = lab_tag(name);
  plan.topology = topology.kind;
  auto subnet = choose_subnet(name, used);
  if (!subnet) return subnet.error();
  plan.subnet = *subnet;
  plan.bridge = bridge_name(plan.tag);
  plan.bridge_address = format_ipv4(plan.subnet.address + 254);
  plan.cables = number_ports(plan.tag, topology.hosts, topology.cables);
  std::map<int, int> ports;
  for (const auto& c : plan.cables) {
    ++ports[c.a.host];
    ++ports[c.b.host];
  }
  const int wanted = topology.receptacles > 0 ? topology.receptacles : topology.hosts - 1;
  for (int i = 1; i <= topology.hosts; ++i) {
    if (topology.receptacles > 0 && ports[i] > topology.receptacles) {
      return util::error(ExitCode::kUsage,
                         fmt::format("--receptacles {}: h{} has {} cables; give at least {}",
                                     topology.receptacles, i, ports[i], ports[i]));
    }
    plan.hosts.push_back(HostPlan{fmt::format("h{}", i), netns_name(name, i),
                                  format_ipv4(plan.subnet.address + static_cast<std::uint32_t>(i)),
                                  mgmt_link_name(plan.tag, i), lab_mac(plan.tag, i, 0), ports[i],
                                  std::max(ports[i], wanted)});
  }
  return plan;
}

std::string root_batch(const LabPlan& plan) {
  std::string s;
  for (const auto& h : plan.hosts) add_line(s, "netns add {}", h.netns);
  add_line(s, "link add {} type bridge", plan.bridge);
  add_line(s, "link set {} alias clusterctl-lab:{}", plan.bridge, plan.name);
  add_line(s, "addr add {}/{} dev {}", plan.bridge_address, plan.subnet.length, plan.bridge);
  add_line(s, "link set {} up", plan.bridge);
  for (const auto& h : plan.hosts) {
    add_line(s, "link add {} type veth peer name {} address {} netns {}", h.mgmt_link,
             kMgmtInterface, h.mgmt_mac, h.netns);
    add_line(s, "link set {} master {} up", h.mgmt_link, plan.bridge);
  }
  for (const auto& c : plan.cables) {
    const auto& a = plan.hosts[static_cast<std::size_t>(c.a.host - 1)];
    const auto& b = plan.hosts[static_cast<std::size_t>(c.b.host - 1)];
    add_line(s, "link add {} address {} netns {} type veth peer name {} address {} netns {}",
             port_name(c.a.port), c.a.mac, a.netns, port_name(c.b.port), c.b.mac, b.netns);
  }
  for (size_t i = 0; i < plan.hosts.size(); ++i) {
    const auto& h = plan.hosts[i];
    int host = static_cast<int>(i) + 1;
    for (int p = h.ports + 1; p <= h.receptacles; ++p) {
      add_line(s, "link add {} address {} netns {} type veth peer name {}", port_name(p),
               lab_mac(plan.tag, host, p), h.netns, free_port_link_name(plan.tag, host, p));
    }
  }
  return s;
}

std::vector<std::string> dad_off_command(const LabPlan& /*plan*/, const HostPlan& host) {
  std::vector<std::string> argv{"ip", "netns", "exec", host.netns, "sysctl", "-q", "-w"};
  std::vector<std::string> names{"all", "default", std::string(kMgmtInterface)};
  for (int p = 1; p <= host.receptacles; ++p) names.push_back(port_name(p));
  for (const auto& n : names) argv.push_back(fmt::format("net.ipv6.conf.{}.accept_dad=0", n));
  return argv;
}

std::string host_batch(const LabPlan& plan, const HostPlan& host) {
  std::string s;
  add_line(s, "link set lo up");
  add_line(s, "addr add {}/{} dev {}", host.address, plan.subnet.length, kMgmtInterface);
  add_line(s, "link set {} up", kMgmtInterface);
  for (int p = 1; p <= host.receptacles; ++p) add_line(s, "link set {} up", port_name(p));
  return s;
}

}  // namespace cc::lab
