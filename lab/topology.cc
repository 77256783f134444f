#include "lab/topology.h"

#include <algorithm>
#include <charconv>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/atomic_file.h"
#include "util/suggest.h"
#include "util/yaml_reader.h"

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
  const util::YamlReader r{std::string(source), "the topology file"};
  auto doc = r.load(text);
  if (!doc) return doc.error();
  if (!doc->IsMap()) {
    return r.error(doc->Mark(), fmt::format("expected a mapping with a 'cables' list (see "
                                            "--help), got {}",
                                            util::YamlReader::kind(*doc)));
  }
  std::vector<util::Error> errors;  // every mistake of the file at once
  auto fields = r.mapping(util::YamlReader::root(*doc), {"hosts", "cables"}, errors);
  if (!fields) return fields.error();
  Topology topo;
  topo.kind = fmt::format("file:{}", source);
  topo.hosts = hosts;
  // hosts first: the cables' host names are checked against it.
  for (const util::Field& f : *fields) {
    if (f.key != "hosts") continue;
    auto n = r.integer(f, kMinHosts, kMaxHosts, "a number of hosts");
    if (!n) {
      errors.push_back(n.error());
    } else if (hosts_given && *n != hosts) {
      errors.push_back(r.error(f.mark(), fmt::format("'hosts': {} disagrees with --hosts {}; "
                                                     "give one of them, or the same number",
                                                     *n, hosts)));
    } else {
      topo.hosts = static_cast<int>(*n);
    }
  }
  bool has_cables = false;
  for (const util::Field& f : *fields) {
    if (f.key != "cables") continue;
    has_cables = true;
    if (f.value.IsNull()) continue;  // "cables:" with nothing: hosts without cables
    auto cables = r.list(f, "a list of [hA, hB] pairs");
    if (!cables) {
      errors.push_back(cables.error());
      continue;
    }
    for (const util::Field& c : *cables) {
      auto ends = c.value.IsSequence() && c.value.size() == 2
                      ? r.strings(c)
                      : util::Result<std::vector<std::string>>(
                            r.error(c.mark(), fmt::format("'{}': each cable must be a pair of host "
                                                          "names, e.g. [h1, h2]",
                                                          c.path)));
      if (!ends) {
        errors.push_back(ends.error());
        continue;
      }
      // Both ends are checked: a cable's two unknown hosts are two mistakes.
      auto a = parse_host_name((*ends)[0], topo.hosts);
      auto b = parse_host_name((*ends)[1], topo.hosts);
      for (const auto* end : {&a, &b}) {
        if (!*end) {
          errors.push_back(
              r.error(c.mark(), fmt::format("'{}': {}", c.path, end->error().message)));
        }
      }
      if (!a || !b) {
        continue;
      } else if (*a == *b) {
        errors.push_back(r.error(c.mark(), fmt::format("'{}': cable [{}, {}] connects a host to "
                                                       "itself",
                                                       c.path, (*ends)[0], (*ends)[1])));
      } else {
        topo.cables.push_back({*a, *b});
      }
    }
  }
  errors = r.in_file_order(std::move(errors));
  if (!has_cables) {
    errors.push_back(r.error(doc->Mark(), "missing 'cables' (a list of [hA, hB] pairs)"));
  }
  if (!errors.empty()) return util::YamlReader::all(errors);
  return topo;
}

std::vector<std::string> topology_names() {
  return {"mesh", "ring"};
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
      return usage(fmt::format("--topology {}: not 'mesh', 'ring' or a readable file ({}){}",
                               request.topology, text.error().message,
                               util::did_you_mean(request.topology, topology_names())));
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
    topo.kind +=
        fmt::format("{} plus {}", request.omit.empty() ? "" : ",", fmt::join(request.extra, ", "));
  }
  return topo;
}

}  // namespace cc::lab
