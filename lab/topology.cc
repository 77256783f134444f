#include "lab/topology.h"

#include <algorithm>
#include <charconv>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "util/atomic_file.h"
#include "util/suggest.h"

namespace cc::lab {
namespace {

using util::Error;
using util::ExitCode;

Error usage(std::string message) {
  return util::error(ExitCode::kUsage, std::move(message));
}

std::string host_range(int hosts) {
  return hosts == 1 ? std::string("h1") : fmt::format("h1..h{}", hosts);
}

// "FILE:LINE: message" for a YAML node (yaml-cpp lines are 0-based).
Error at(std::string_view source, const YAML::Mark& mark, std::string_view message) {
  if (mark.is_null()) return usage(fmt::format("{}: {}", source, message));
  return usage(fmt::format("{}:{}: {}", source, mark.line + 1, message));
}

}  // namespace

util::Result<int> parse_host_name(std::string_view name, int hosts) {
  int n = 0;
  if (name.size() >= 2 && name[0] == 'h' && name[1] != '0') {
    const char* first = name.data() + 1;
    const char* last = name.data() + name.size();
    auto [ptr, ec] = std::from_chars(first, last, n);
    if (ec != std::errc() || ptr != last) n = 0;
  }
  if (n < 1 || n > hosts) {
    return usage(
        fmt::format("unknown host '{}': this lab's hosts are {}", name, host_range(hosts)));
  }
  return n;
}

util::Result<CablePair> parse_cable_pair(std::string_view text, int hosts) {
  auto dash = text.find('-');
  if (dash == std::string_view::npos || text.find('-', dash + 1) != std::string_view::npos) {
    return usage(fmt::format("'{}' is not a cable: write it as hA-hB, e.g. h1-h2", text));
  }
  auto a = parse_host_name(text.substr(0, dash), hosts);
  if (!a) return a.error();
  auto b = parse_host_name(text.substr(dash + 1), hosts);
  if (!b) return b.error();
  if (*a == *b) return usage(fmt::format("cable '{}' connects a host to itself", text));
  return CablePair{*a, *b};
}

std::vector<CablePair> mesh_cables(int hosts) {
  std::vector<CablePair> cables;
  for (int i = 1; i <= hosts; ++i) {
    for (int j = i + 1; j <= hosts; ++j) cables.push_back({i, j});
  }
  return cables;
}

std::vector<CablePair> ring_cables(int hosts) {
  std::vector<CablePair> cables;
  if (hosts < 2) return cables;
  for (int i = 1; i < hosts; ++i) cables.push_back({i, i + 1});
  cables.push_back({hosts, 1});
  return cables;
}

util::Result<Topology> parse_topology_file(std::string_view text, std::string_view source,
                                           int hosts, bool hosts_given) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::ParserException& e) {
    return at(source, e.mark, fmt::format("not valid YAML: {}", e.msg));
  }
  if (!root.IsMap()) {
    return at(source, root.Mark(), "expected a mapping with a 'cables' list (see --help)");
  }
  const std::vector<std::string> keys{"hosts", "cables"};
  for (const auto& kv : root) {
    auto key = kv.first.as<std::string>("");
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      return at(source, kv.first.Mark(),
                fmt::format("unknown key '{}'{}; expected 'hosts' or 'cables'", key,
                            util::did_you_mean(key, keys)));
    }
  }
  Topology topo;
  topo.kind = fmt::format("file:{}", source);
  topo.hosts = hosts;
  if (auto h = root["hosts"]) {
    int file_hosts = 0;
    try {
      file_hosts = h.as<int>();
    } catch (const YAML::Exception&) {
      return at(source, h.Mark(), "'hosts' must be a number");
    }
    if (file_hosts < kMinHosts || file_hosts > kMaxHosts) {
      return at(source, h.Mark(),
                fmt::format("hosts: {} is out of range {}..{}", file_hosts, kMinHosts, kMaxHosts));
    }
    if (hosts_given && file_hosts != hosts) {
      return at(source, h.Mark(),
                fmt::format("hosts: {} disagrees with --hosts {}", file_hosts, hosts));
    }
    topo.hosts = file_hosts;
  }
  auto cables = root["cables"];
  if (!cables) return at(source, root.Mark(), "missing 'cables' (a list of [hA, hB] pairs)");
  if (cables.IsNull()) return topo;  // "cables:" with nothing: hosts without cables
  if (!cables.IsSequence()) {
    return at(source, cables.Mark(), "'cables' must be a list of [hA, hB] pairs");
  }
  for (const auto& c : cables) {
    if (!c.IsSequence() || c.size() != 2 || !c[0].IsScalar() || !c[1].IsScalar()) {
      return at(source, c.Mark(), "each cable must be a pair of host names, e.g. [h1, h2]");
    }
    auto a = parse_host_name(c[0].Scalar(), topo.hosts);
    if (!a) return at(source, c[0].Mark(), a.error().message);
    auto b = parse_host_name(c[1].Scalar(), topo.hosts);
    if (!b) return at(source, c[1].Mark(), b.error().message);
    if (*a == *b) {
      return at(source, c.Mark(),
                fmt::format("cable [{0}, {0}] connects a host to itself", c[0].Scalar()));
    }
    topo.cables.push_back({*a, *b});
  }
  return topo;
}

util::Result<Topology> resolve_topology(const TopologyRequest& request) {
  auto out_of_range = [](int n) {
    return usage(fmt::format("--hosts {} is out of range: a lab has {} to {} hosts", n, kMinHosts,
                             kMaxHosts));
  };
  if (request.hosts < kMinHosts || request.hosts > kMaxHosts) return out_of_range(request.hosts);
  Topology topo;
  if (request.topology == "mesh") {
    topo = {request.hosts, "mesh", mesh_cables(request.hosts)};
  } else if (request.topology == "ring") {
    topo = {request.hosts, "ring", ring_cables(request.hosts)};
  } else {
    auto text = util::read_file(request.topology);
    if (!text) {
      return usage(fmt::format("--topology {}: not 'mesh', 'ring' or a readable file ({})",
                               request.topology, text.error().message));
    }
    auto parsed = parse_topology_file(*text, request.topology, request.hosts, request.hosts_given);
    if (!parsed) return parsed.error();
    topo = std::move(*parsed);
  }
  topo.receptacles = request.receptacles;
  for (const auto& text : request.omit) {
    auto pair = parse_cable_pair(text, topo.hosts);
    if (!pair) return usage(fmt::format("--omit {}: {}", text, pair.error().message));
    auto it = std::find_if(topo.cables.begin(), topo.cables.end(), [&](const CablePair& c) {
      return (c.a == pair->a && c.b == pair->b) || (c.a == pair->b && c.b == pair->a);
    });
    if (it == topo.cables.end()) {
      return usage(
          fmt::format("--omit {}: no such cable is left in the {} topology", text, topo.kind));
    }
    topo.cables.erase(it);
  }
  for (const auto& text : request.extra) {
    auto pair = parse_cable_pair(text, topo.hosts);
    if (!pair) return usage(fmt::format("--extra {}: {}", text, pair.error().message));
    topo.cables.push_back(*pair);
  }
  // The label says what the operator changed: "mesh without h1-h3, plus h1-h2".
  if (!request.omit.empty()) topo.kind += fmt::format(" without {}", fmt::join(request.omit, ", "));
  if (!request.extra.empty()) {
    topo.kind += fmt::format("{} plus {}", request.omit.empty() ? "" : ",",
                             fmt::join(request.extra, ", "));
  }
  return topo;
}

}  // namespace cc::lab
