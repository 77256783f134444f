#include "discovery/cables.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "discovery/command_outcome.h"
#include "discovery/ping.h"

namespace cc::discovery {
namespace {

bool is_macos(const HostFacts& h) {
  return h.os.name == "macOS";
}

// (host index, port index): one end of a cable.
using EndId = std::pair<size_t, size_t>;

struct Observation {
  std::set<CableSource> sources;
  bool seen_from_first = false;
  bool seen_from_second = false;
};

class Merger {
 public:
  explicit Merger(const std::vector<HostFacts>& hosts) : hosts_(hosts) {}

  // `from` saw a cable to `to` through `source`.
  void add(EndId from, EndId to, CableSource source) {
    if (from.first == to.first) return;  // a cable between two ports of one host: not a link
    bool from_is_first = from < to;
    auto key = from_is_first ? std::make_pair(from, to) : std::make_pair(to, from);
    Observation& o = seen_[key];
    o.sources.insert(source);
    (from_is_first ? o.seen_from_first : o.seen_from_second) = true;
  }

  std::vector<Cable> cables() const {
    std::vector<Cable> result;
    for (const auto& [key, o] : seen_) {  // std::map: sorted by (host, port) of both ends
      const Port& pa = port(key.first);
      const Port& pb = port(key.second);
      Cable c;
      c.a = end_of(hosts_[key.first.first], pa);
      c.b = end_of(hosts_[key.second.first], pb);
      c.link_speed_gbps = lower_known(pa.link_speed_gbps, pb.link_speed_gbps);
      c.generation = lower_known(pa.generation, pb.generation);
      c.sources.assign(o.sources.begin(), o.sources.end());
      c.seen_from_a = o.seen_from_first;
      c.seen_from_b = o.seen_from_second;
      result.push_back(std::move(c));
    }
    return result;
  }

 private:
  const Port& port(EndId e) const { return hosts_[e.first].ports[e.second]; }
  static int lower_known(int a, int b) {
    if (a == 0) return b;
    if (b == 0) return a;
    return std::min(a, b);
  }

  const std::vector<HostFacts>& hosts_;
  std::map<std::pair<EndId, EndId>, Observation> seen_;
};

void add_thunderbolt(const std::vector<HostFacts>& hosts, Merger& merger) {
  std::map<std::string, EndId> by_domain;  // port domain UUID -> its end
  for (size_t h = 0; h < hosts.size(); ++h) {
    for (size_t p = 0; p < hosts[h].ports.size(); ++p) {
      const std::string& uuid = hosts[h].ports[p].domain_uuid;
      if (!uuid.empty()) by_domain.emplace(uuid, EndId{h, p});
    }
  }
  for (size_t h = 0; h < hosts.size(); ++h) {
    for (size_t p = 0; p < hosts[h].ports.size(); ++p) {
      for (const Peer& peer : hosts[h].ports[p].peers) {
        if (peer.kind != Peer::Kind::kHost || peer.depth != 1 || !peer.domain_uuid) continue;
        auto it = by_domain.find(*peer.domain_uuid);
        if (it != by_domain.end()) merger.add({h, p}, it->second, CableSource::kThunderbolt);
      }
    }
  }
}

void add_neighbours(const std::vector<HostFacts>& hosts,
                    const std::vector<std::vector<NeighbourAnswers>>& answers, Merger& merger) {
  std::map<std::string, EndId> by_address;  // link-local address of a port -> its end
  for (size_t h = 0; h < hosts.size(); ++h) {
    for (size_t p = 0; p < hosts[h].ports.size(); ++p) {
      if (!hosts[h].ports[p].interface) continue;
      for (const auto& a : hosts[h].ports[p].interface->ipv6) by_address.emplace(a, EndId{h, p});
    }
  }
  for (size_t h = 0; h < hosts.size() && h < answers.size(); ++h) {
    for (const NeighbourAnswers& na : answers[h]) {
      auto port = std::find_if(hosts[h].ports.begin(), hosts[h].ports.end(), [&](const Port& p) {
        return p.interface && p.interface->name == na.interface;
      });
      if (port == hosts[h].ports.end()) continue;
      std::set<EndId> others;
      for (const auto& address : na.addresses) {
        auto it = by_address.find(address);
        if (it != by_address.end() && it->second.first != h) others.insert(it->second);
      }
      std::set<size_t> other_hosts;
      for (const auto& e : others) other_hosts.insert(e.first);
      if (other_hosts.size() != 1) continue;  // none, or a shared segment
      for (const auto& e : others) {
        merger.add({h, static_cast<size_t>(port - hosts[h].ports.begin())}, e,
                   CableSource::kNeighbour);
      }
    }
  }
}

}  // namespace

ProbeCommand neighbour_ping(bool macos, const std::string& interface) {
  std::string target = "ff02::1%" + interface;
  if (macos) return ProbeCommand{"ping6 -c 2 " + target, {"ping6", "-c", "2", target}};
  return ProbeCommand{"ping -6 -n -w 1 -i 0.2 " + target,
                      {"ping", "-6", "-n", "-w", "1", "-i", "0.2", target}};
}

std::vector<ProbeCommand> neighbour_commands(const HostFacts& host) {
  std::vector<ProbeCommand> commands;
  for (const Port& p : host.ports) {
    if (p.interface && p.interface->up && p.interface->running) {
      commands.push_back(neighbour_ping(is_macos(host), p.interface->name));
    }
  }
  return commands;
}

util::Result<std::vector<NeighbourAnswers>> neighbour_answers(const HostFacts& host,
                                                              const ProbeOutputs& outputs) {
  std::vector<NeighbourAnswers> result;
  for (const Port& p : host.ports) {
    if (!p.interface) continue;
    ProbeCommand cmd = neighbour_ping(is_macos(host), p.interface->name);
    const RawOutput* raw = outputs.find(cmd);
    // ping exits 1 when nothing answered, 2 on an error (interface gone): no answers either way.
    if (!raw || raw->exit_status != 0) continue;
    auto addresses = parse_ping_replies(raw->out);
    if (!addresses) return for_host(host.host, addresses.error());
    result.push_back(NeighbourAnswers{p.interface->name, std::move(*addresses)});
  }
  return result;
}

std::vector<Cable> merge_cables(const std::vector<HostFacts>& hosts,
                                const std::vector<std::vector<NeighbourAnswers>>& answers) {
  Merger merger(hosts);
  add_thunderbolt(hosts, merger);
  add_neighbours(hosts, answers, merger);
  return merger.cables();
}

}  // namespace cc::discovery
