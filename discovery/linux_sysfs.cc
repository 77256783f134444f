#include "discovery/linux_sysfs.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "discovery/natural_sort.h"
#include "discovery/text.h"

namespace cc::discovery {
namespace {

constexpr std::string_view kThunderboltRoot = "/sys/bus/thunderbolt/devices/";
constexpr std::string_view kInfinibandRoot = "/sys/class/infiniband/";

// One line of a dump: the path below the root, split on '/', and the value.
struct DumpLine {
  std::size_t number = 0;               // 1-based, for error messages
  std::vector<std::string_view> parts;  // at least two: the device and a file below it
  std::string_view value;               // trimmed
};

std::vector<std::string_view> split_path(std::string_view rel) {
  std::vector<std::string_view> parts;
  while (true) {
    std::size_t slash = rel.find('/');
    parts.push_back(rel.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rel.remove_prefix(slash + 1);
  }
  return parts;
}

// Splits `dump` into PATH:VALUE lines under `root`; blank lines are skipped.
util::Result<std::vector<DumpLine>> read_dump(std::string_view command, std::string_view root,
                                              std::string_view dump) {
  std::vector<DumpLine> lines;
  auto all = split_lines(dump);
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::string_view line = all[i];
    if (blank(line)) continue;
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return parse_error(command,
                         fmt::format("line {}: no ':' after the path in {}", i + 1, excerpt(line)));
    }
    std::string_view path = line.substr(0, colon);
    if (!path.starts_with(root)) {
      return parse_error(command,
                         fmt::format("line {}: path {} is outside {}", i + 1, excerpt(path), root));
    }
    DumpLine d;
    d.number = i + 1;
    d.parts = split_path(path.substr(root.size()));
    bool bad = d.parts.size() < 2 || std::any_of(d.parts.begin(), d.parts.end(), [](auto p) {
                 return p.empty() || p == "." || p == "..";
               });
    if (bad) {
      return parse_error(command, fmt::format("line {}: path {} is not a file of a device in {}",
                                              i + 1, excerpt(path), root));
    }
    d.value = trim(line.substr(colon + 1));
    lines.push_back(std::move(d));
  }
  return lines;
}

// Sets `field` from the first line of a file only.
void set_once(std::string& field, std::string_view value) {
  if (field.empty()) field = std::string(value);
}

// ---- Thunderbolt ----

// "N-M" (route M in hex, as the kernel names routers and XDomains: "%u-%llx") and its service
// "N-M.S" ("%s.%d").
struct TbName {
  int domain = 0;
  std::uint64_t route = 0;
  std::string_view router;  // "N-M"
  bool service = false;
};

std::optional<TbName> parse_tb_name(std::string_view name) {
  std::size_t dash = name.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto domain = parse_int(name.substr(0, dash));
  if (!domain) return std::nullopt;
  std::string_view rest = name.substr(dash + 1);
  std::size_t dot = rest.find('.');
  std::string_view route = rest.substr(0, dot);
  if (route.empty() || route.size() > 16) return std::nullopt;
  TbName n;
  n.domain = *domain;
  for (char c : route) {
    int digit = 0;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    n.route = n.route * 16 + static_cast<std::uint64_t>(digit);
  }
  n.router = name.substr(0, dash + 1 + route.size());
  if (dot != std::string_view::npos) {
    if (!parse_int(rest.substr(dot + 1))) return std::nullopt;
    n.service = true;
  }
  return n;
}

struct TbEntry {
  int domain = 0;
  std::uint64_t route = 0;
  std::string unique_id, device_name, vendor_name;
  std::string rx_speed, tx_speed, rx_lanes, tx_lanes, generation;
  bool has_service = false;
  std::string interface;
};

// "40.0 Gb/s" -> 400 (tenths of Gb/s); nullopt when unreadable or absurd.
std::optional<std::int64_t> speed_tenths(std::string_view s) {
  std::size_t i = 0;
  std::int64_t whole = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    whole = whole * 10 + (s[i] - '0');
    if (whole > 100000) return std::nullopt;
    ++i;
  }
  if (i == 0) return std::nullopt;
  std::int64_t tenths = whole * 10;
  if (i < s.size() && s[i] == '.') {
    ++i;
    std::size_t first = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == first) return std::nullopt;
    tenths += s[first] - '0';
  }
  if (trim(s.substr(i)) != "Gb/s") return std::nullopt;
  return tenths;
}

// Per-direction link speed in Gb/s from a per-lane speed and a lane count; 0 when unknown.
int link_gbps(std::string_view speed, std::string_view lanes) {
  auto tenths = speed_tenths(speed);
  auto n = parse_int(lanes);
  if (!tenths || !n || *n > 64) return 0;
  return static_cast<int>((*tenths * *n + 5) / 10);
}

int link_generation(int gbps, int host_generation) {
  int g = gbps >= 80 ? 5 : gbps >= 40 ? 4 : gbps > 0 ? 3 : 0;
  if (g > 0 && host_generation >= 1 && host_generation <= 3) g = std::min(g, host_generation);
  return g;
}

// ---- InfiniBand ----

// "4: ACTIVE" -> "ACTIVE"; a value without "N: " is kept as is.
std::string_view after_number(std::string_view v) {
  std::size_t colon = v.find(':');
  if (colon == std::string_view::npos || !parse_int(trim(v.substr(0, colon)))) return v;
  return trim(v.substr(colon + 1));
}

// node_type "1: CA" -> the transport ibv_devinfo prints for it (libibverbs maps the node type
// to enum ibv_transport_type and prints "NAME (VALUE)").
std::string transport_of(std::string_view node_type) {
  std::size_t colon = node_type.find(':');
  auto n = parse_int(trim(node_type.substr(0, colon)));
  if (colon == std::string_view::npos || !n) return "";
  switch (*n) {
    case 1:  // CA
    case 2:  // switch
    case 3:  // router
      return "InfiniBand (0)";
    case 4:
      return "iWARP (1)";
    case 5:
      return "usNIC (2)";
    case 6:
      return "usNIC UDP (3)";
    case 7:
      return "unspecified (4)";
    default:
      return "";
  }
}

// A GID as sysfs prints it (eight groups of four hex digits) in compressed IPv6 form; "" for
// the unused all-zero GID; nullopt when it is not an IPv6 address.
std::optional<std::string> format_gid(std::string_view gid) {
  if (gid.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  std::string text(gid);
  std::array<unsigned char, 16> raw{};
  if (inet_pton(AF_INET6, text.c_str(), raw.data()) != 1) return std::nullopt;
  if (std::all_of(raw.begin(), raw.end(), [](unsigned char b) { return b == 0; })) return "";
  std::array<char, INET6_ADDRSTRLEN> out{};
  if (inet_ntop(AF_INET6, raw.data(), out.data(), out.size()) == nullptr) return std::nullopt;
  return std::string(out.data());
}

struct IbPort {
  std::string state, link_layer;
  std::map<int, std::string> gids;   // index -> raw value
  std::map<int, std::string> ndevs;  // index -> netdev
};

struct IbDevice {
  std::string node_guid, node_type;
  std::map<int, IbPort> ports;
};

}  // namespace

util::Result<LinuxThunderbolt> parse_sysfs_thunderbolt(std::string_view dump) {
  auto lines = read_dump(kSysfsThunderboltCommand, kThunderboltRoot, dump);
  if (!lines) return lines.error();
  std::map<std::string, TbEntry, std::less<>> entries;  // by router name "N-M"
  for (const DumpLine& l : *lines) {
    auto name = parse_tb_name(l.parts[0]);
    if (!name) continue;  // domainN, or anything the globs should not have matched
    auto [it, added] = entries.try_emplace(std::string(name->router));
    TbEntry& e = it->second;
    if (added) {
      e.domain = name->domain;
      e.route = name->route;
    }
    const auto& p = l.parts;
    if (name->service) {
      if (p.size() == 2 && p[1] == "key") {
        e.has_service = true;
      } else if (p.size() == 4 && p[1] == "net" && p[3] == "ifindex") {
        e.has_service = true;
        set_once(e.interface, p[2]);
      }
      continue;
    }
    if (p.size() != 2) continue;
    if (p[1] == "unique_id") set_once(e.unique_id, l.value);
    if (p[1] == "device_name") set_once(e.device_name, l.value);
    if (p[1] == "vendor_name") set_once(e.vendor_name, l.value);
    if (p[1] == "rx_speed") set_once(e.rx_speed, l.value);
    if (p[1] == "tx_speed") set_once(e.tx_speed, l.value);
    if (p[1] == "rx_lanes") set_once(e.rx_lanes, l.value);
    if (p[1] == "tx_lanes") set_once(e.tx_lanes, l.value);
    if (p[1] == "generation") set_once(e.generation, l.value);
  }

  LinuxThunderbolt tb;
  std::map<int, int> host_generation;  // domain -> generation of its host router
  for (const auto& [name, e] : entries) {
    if (e.route != 0) continue;
    if (!e.unique_id.empty()) tb.host_uuids.emplace_back(e.domain, e.unique_id);
    host_generation[e.domain] = parse_int(e.generation).value_or(0);
  }
  std::sort(tb.host_uuids.begin(), tb.host_uuids.end());
  for (const auto& [name, e] : entries) {
    if (e.route == 0 || e.unique_id.empty()) continue;
    bool link_files =
        !e.rx_speed.empty() || !e.tx_speed.empty() || !e.rx_lanes.empty() || !e.tx_lanes.empty();
    bool xdomain = e.has_service || (e.generation.empty() && link_files);
    if (!xdomain) continue;
    ThunderboltXDomain x;
    x.device = name;
    x.domain = e.domain;
    x.unique_id = e.unique_id;
    x.device_name = e.device_name;
    x.vendor_name = e.vendor_name;
    x.link_speed_gbps = link_gbps(e.rx_speed, e.rx_lanes);
    if (x.link_speed_gbps == 0) x.link_speed_gbps = link_gbps(e.tx_speed, e.tx_lanes);
    auto host = host_generation.find(e.domain);
    x.generation =
        link_generation(x.link_speed_gbps, host == host_generation.end() ? 0 : host->second);
    x.interface = e.interface;
    tb.xdomains.push_back(std::move(x));
  }
  std::stable_sort(tb.xdomains.begin(), tb.xdomains.end(),
                   [](const ThunderboltXDomain& a, const ThunderboltXDomain& b) {
                     return natural_less(a.device, b.device);
                   });
  return tb;
}

util::Result<std::vector<RdmaDevice>> parse_sysfs_infiniband(std::string_view dump) {
  auto lines = read_dump(kSysfsInfinibandCommand, kInfinibandRoot, dump);
  if (!lines) return lines.error();
  std::map<std::string, IbDevice, std::less<>> devices;
  for (const DumpLine& l : *lines) {
    const auto& p = l.parts;
    IbDevice& d = devices[std::string(p[0])];
    if (p.size() == 2) {
      if (p[1] == "node_guid") set_once(d.node_guid, l.value);
      if (p[1] == "node_type") set_once(d.node_type, l.value);
      continue;
    }
    if (p[1] != "ports") continue;
    auto port = parse_int(p[2]);
    if (!port) {
      return parse_error(kSysfsInfinibandCommand,
                         fmt::format("line {}: port {} is not a number", l.number, excerpt(p[2])));
    }
    IbPort& pt = d.ports[*port];
    // ports/N/gids/I or ports/N/gid_attrs/ndevs/I: the GID index is the last part.
    bool gid = p.size() == 5 && p[3] == "gids";
    bool ndev = p.size() == 6 && p[3] == "gid_attrs" && p[4] == "ndevs";
    if (gid || ndev) {
      auto index = parse_int(p.back());
      if (!index) {
        return parse_error(
            kSysfsInfinibandCommand,
            fmt::format("line {}: GID index {} is not a number", l.number, excerpt(p.back())));
      }
      auto& table = gid ? pt.gids : pt.ndevs;
      table.try_emplace(*index, l.value);
      continue;
    }
    if (p.size() != 4) continue;
    if (p[3] == "state") set_once(pt.state, after_number(l.value));
    if (p[3] == "link_layer") set_once(pt.link_layer, l.value);
  }

  std::vector<RdmaDevice> result;
  for (const auto& [name, d] : devices) {
    RdmaDevice dev;
    dev.name = name;
    dev.node_guid = d.node_guid;
    dev.transport = transport_of(d.node_type);
    for (const auto& [number, pt] : d.ports) {
      RdmaPort port;
      port.port = number;
      port.state = pt.state;
      port.active = pt.state == "ACTIVE";
      port.link_layer = pt.link_layer;
      for (const auto& [index, raw] : pt.gids) {
        auto gid = format_gid(raw);
        if (!gid || gid->empty()) continue;
        port.gids.push_back(Gid{index, std::move(*gid)});
      }
      if (!dev.netdev && !pt.ndevs.empty()) dev.netdev = pt.ndevs.begin()->second;
      dev.ports.push_back(std::move(port));
    }
    result.push_back(std::move(dev));
  }
  std::stable_sort(result.begin(), result.end(), [](const RdmaDevice& a, const RdmaDevice& b) {
    return natural_less(a.name, b.name);
  });
  return result;
}

}  // namespace cc::discovery
