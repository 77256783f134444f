#include "topology/checks.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "remote/quote.h"
#include "topology/rdma_port.h"
#include "topology/rdma_readiness.h"
#include "util/address.h"
#include "util/interrupt.h"
#include "util/ipv4.h"
#include "util/text.h"

namespace cc::topology {
namespace {

using discovery::Cable;
using discovery::CableSource;
using discovery::Peer;

// "Mac Studio (Mac16,9)", "MacBook Pro", "a host"
std::string peer_label(const Peer& p) {
  std::string name =
      p.name.empty() ? std::string(p.kind == Peer::Kind::kHost ? "a host" : "a device") : p.name;
  if (!p.model.empty() && p.model != p.name) return fmt::format("{} ({})", name, p.model);
  if (!p.vendor.empty()) return fmt::format("{} ({})", name, p.vendor);
  return name;
}

void check_problems(const ClusterGraph& g, std::vector<Finding>& out) {
  for (const auto& p : g.state().problems) {
    // A refused destination is fixed where the host is named, not on the host: its message
    // (remote's) says how, and the fix says where.
    out.push_back({p.unreachable()       ? "unreachable"
                   : p.bad_destination() ? "bad-destination"
                                         : "probe-failed",
                   Severity::kFail,
                   {p.host},
                   {},
                   p.message,
                   p.bad_destination()
                       ? fmt::format("fix how {} is named (--hosts, the inventory's `ssh:` or the "
                                     "SSH config's HostName), as the message says",
                                     p.host)
                       : ""});
  }
}

void check_host_count(const ClusterGraph& g, const CheckOptions& opts, std::vector<Finding>& out) {
  if (!opts.expect_hosts) return;
  std::vector<std::string> names;
  for (const auto& h : g.hosts()) names.push_back(h.name());
  for (const auto& p : g.state().problems) {
    if (std::find(names.begin(), names.end(), p.host) == names.end()) names.push_back(p.host);
  }
  const auto expected = static_cast<std::size_t>(std::max(0, *opts.expect_hosts));
  if (names.size() == expected) return;
  out.push_back({"host-count",
                 Severity::kFail,
                 names,
                 {},
                 names.size() <= 8 ? fmt::format("expected {}, the cluster has {}: {}",
                                                 util::plural(expected, "host", "hosts"), names.size(),
                                                 fmt::join(names, ", "))
                                   : fmt::format("expected {}, the cluster has {}",
                                                 util::plural(expected, "host", "hosts"), names.size()),
                 "check the host list (--hosts, --inventory, --hostfile or the cluster state "
                 "file), or --expect-hosts"});
}

void check_port_counts(const ClusterGraph& g, std::vector<Finding>& out) {
  const std::size_t n = g.size();
  if (n < 2) return;
  for (const auto& h : g.hosts()) {
    if (h.ports.size() >= n - 1) continue;
    out.push_back(
        {"too-few-ports",
         Severity::kFail,
         {h.name()},
         {},
         fmt::format("{} has {}; a full mesh of {} hosts needs {} per host, so {} can "
                     "never be in it",
                     h.name(), util::plural(h.ports.size(), "port", "ports"), n, n - 1, h.name()),
         fmt::format("use a host with at least {} Thunderbolt 5 ports (Mac Studio M3 "
                     "Ultra: 6, Mac Studio M4 Max: 4, Mac mini M4 Pro: 3), or a smaller "
                     "cluster",
                     n - 1)});
  }
}

// The finding for missing pair (a, b), at most kListedPairs of them: port-down when down_pairs
// gives it down ports, else missing-cable.
Finding pair_finding(const ClusterGraph& g, std::size_t a, std::size_t b, const DownPair* down) {
  const std::string& ha = g.host(a).name();
  const std::string& hb = g.host(b).name();
  if (down == nullptr) {
    return {"missing-cable",
            Severity::kFail,
            {ha, hb},
            {},
            fmt::format("{} and {} have no direct cable (RDMA cannot route: every pair of a mesh "
                        "needs its own cable)",
                        ha, hb),
            fmt::format("cable {} to {} (see the cabling plan)", ha, hb)};
  }
  std::vector<std::string> names, commands, records;
  std::vector<discovery::CableEnd> ends;
  for (const DownEnd& d : down->ends) {
    const HostNode& h = g.host(d.host);
    const PortNode& p = h.ports[d.port];
    names.push_back(discovery::end_label(p.end));
    commands.push_back(
        fmt::format("on {} `{}`", h.name(), link_up_command(*h.facts, p.port->interface->name)));
    if (d.recorded_peer) {
      records.push_back(fmt::format("{} faced {}", discovery::end_label(p.end),
                                    discovery::end_label(*d.recorded_peer)));
    }
    ends.push_back(p.end);
  }
  const std::string evidence =
      down->recorded()
          ? fmt::format(" (the network plan of the cluster state records it: {})",
                        fmt::join(records, ", "))
          : fmt::format(" (that {} this pair's is a guess: nothing records the host {} faced, "
                        "so down ports are matched to missing pairs in pair order)",
                        names.size() == 1 ? "its cable is" : "their cables are",
                        names.size() == 1 ? "it" : "they");
  return {"port-down",
          Severity::kFail,
          {ha, hb},
          ends,
          fmt::format("{} and {} have no cable that answers, and {} {} administratively down: a "
                      "cable plugged into a port that is down is not seen{}",
                      ha, hb, fmt::join(names, " and "), names.size() == 1 ? "is" : "are",
                      evidence),
          fmt::format("bring {} up: {}; do not move its cable. Then check again: if {} and {} "
                      "still have no cable, the cabling plan then says where to plug one",
                      names.size() == 1 ? "it" : "them", fmt::join(commands, ", "), ha, hb)};
}

// missing-cable and port-down.
void check_missing_pairs(const ClusterGraph& g, std::vector<Finding>& out) {
  const auto missing = g.missing_pairs();
  const auto down = down_pairs(g);
  for (std::size_t i = 0; i < missing.size() && i < kListedPairs; ++i) {
    const auto [a, b] = missing[i];
    const auto d = down.find(a * g.size() + b);
    out.push_back(pair_finding(g, a, b, d == down.end() ? nullptr : &d->second));
  }
  if (missing.size() > kListedPairs) {
    const std::size_t n = g.size();
    out.push_back(
        {"missing-cable",
         Severity::kFail,
         {},
         {},
         fmt::format("{} more pairs have no direct cable ({} of {} pairs missing; the "
                     "first {} are listed)",
                     missing.size() - kListedPairs, missing.size(), n * (n - 1) / 2, kListedPairs),
         "cable every pair, or use fewer hosts: a full mesh of n hosts needs n - 1 "
         "ports per host"});
  }
}

void check_self_cables(const ClusterGraph& g, std::vector<Finding>& out) {
  for (std::size_t i = 0; i < g.edges().size(); ++i) {
    const auto& e = g.edges()[i];
    if (!e.a_host || e.a_host != e.b_host) continue;
    const Cable& c = g.cable(i);
    out.push_back({"self-cable",
                   Severity::kFail,
                   {c.a.host},
                   {c.a, c.b},
                   fmt::format("{} is cabled to {}, on the same host", discovery::end_label(c.a),
                               discovery::end_label(c.b)),
                   "unplug it; the two ports can then serve missing pairs"});
  }
}

void check_multi_rail(const ClusterGraph& g, std::vector<Finding>& out) {
  for (std::size_t a = 0; a < g.size(); ++a) {
    for (std::size_t b = a + 1; b < g.size(); ++b) {
      const auto& cables = g.cables_between(a, b);
      if (cables.size() < 2) continue;
      std::vector<discovery::CableEnd> ports;
      std::vector<std::string> labels;
      for (std::size_t i : cables) {
        ports.push_back(g.cable(i).a);
        ports.push_back(g.cable(i).b);
        labels.push_back(cable_label(g, i));
      }
      out.push_back(
          {"multi-rail",
           Severity::kInfo,
           {g.host(a).name(), g.host(b).name()},
           ports,
           fmt::format("{} and {} are joined by {} cables (multi-rail): {}", g.host(a).name(),
                       g.host(b).name(), cables.size(), fmt::join(labels, ", ")),
           ""});
    }
  }
}

// True when the port at one end of the cable reports its Thunderbolt domain UUID.
bool has_identity(const ClusterGraph& g, std::optional<std::size_t> h,
                  std::optional<std::size_t> p) {
  return h && p && !g.host(*h).ports[*p].port->domain_uuid.empty();
}

void check_sightings(const ClusterGraph& g, const discovery::FixCommand& fix,
                     std::vector<Finding>& out) {
  std::set<CableSource> used;
  for (const auto& c : g.state().cables) used.insert(c.sources.begin(), c.sources.end());
  for (std::size_t i = 0; i < g.edges().size(); ++i) {
    const auto& e = g.edges()[i];
    if (!e.joins_two_hosts()) continue;
    const Cable& c = g.cable(i);
    if (c.seen_from_a != c.seen_from_b) {
      const auto& seer = c.seen_from_a ? c.a : c.b;
      const auto& blind = c.seen_from_a ? c.b : c.a;
      out.push_back({"one-sided-cable",
                     Severity::kWarn,
                     {c.a.host, c.b.host},
                     {c.a, c.b},
                     fmt::format("{} was seen from {} only", cable_label(g, i), seer.host),
                     fmt::format("check that {} is up with carrier, then run `{}` again; "
                                 "reseat the cable if it persists",
                                 discovery::end_label(blind), fix.rediscover())});
    }
    if (c.sources.size() != 1) continue;
    const CableSource seen = c.sources.front();
    const CableSource other =
        seen == CableSource::kThunderbolt ? CableSource::kNeighbour : CableSource::kThunderbolt;
    if (!used.count(other)) continue;
    if (!has_identity(g, e.a_host, e.a_port) || !has_identity(g, e.b_host, e.b_port)) continue;
    // An end without a hardware port answers nothing over IP: no-interface says why and what
    // to do (mac_checks.cc), and "check that both interfaces are up" would be wrong.
    const bool no_hw_port = lacks_hardware_port(c.a) || lacks_hardware_port(c.b);
    if (seen == CableSource::kThunderbolt && no_hw_port) continue;
    out.push_back(
        {"one-source-cable",
         Severity::kWarn,
         {c.a.host, c.b.host},
         {c.a, c.b},
         fmt::format("{} was seen by {} only, not by {}", cable_label(g, i),
                     seen == CableSource::kThunderbolt ? "Thunderbolt" : "neighbour probing",
                     other == CableSource::kThunderbolt ? "Thunderbolt" : "neighbour probing"),
         seen == CableSource::kThunderbolt
             ? fmt::format("the cable is there but nothing answered over IP: check that both "
                           "interfaces are up (`{}`)",
                           fix.command("network apply"))
             : "IP answers over it but Thunderbolt does not name the peer: check that the cable "
               "is direct (no hub or dock)"});
  }
}

// True when port `p` reaches a host only through a hub or dock.
bool hub_port(const PortNode& p) {
  if (p.host_peer() != nullptr) return false;
  return std::any_of(p.port->peers.begin(), p.port->peers.end(),
                     [](const Peer& q) { return q.kind == Peer::Kind::kHost && q.depth >= 2; });
}

// The peers on the port's cable, "SB-XTM5 (Sabrent), MacBook Pro (Mac17,6)".
std::string chain_label(const PortNode& p) {
  std::vector<std::string> names;
  for (const auto& q : p.port->peers) names.push_back(peer_label(q));
  return fmt::format("{}", fmt::join(names, ", "));
}

void check_hub_cables(const ClusterGraph& g, const discovery::FixCommand& fix,
                      std::vector<Finding>& out) {
  for (std::size_t i = 0; i < g.edges().size(); ++i) {
    if (!through_hub(g, i)) continue;
    const auto& e = g.edges()[i];
    const Cable& c = g.cable(i);
    const PortNode& pa = g.host(*e.a_host).ports[*e.a_port];
    const PortNode& pb = g.host(*e.b_host).ports[*e.b_port];
    const PortNode& seen = hub_port(pa) ? pa : pb;
    out.push_back(
        {"behind-hub",
         Severity::kFail,
         {c.a.host, c.b.host},
         {c.a, c.b},
         fmt::format("{} runs through a hub or dock ({} sees {}): it is not a direct link, and "
                     "hub-mediated links do not carry RDMA",
                     cable_label(g, i), discovery::end_label(seen.end), chain_label(seen)),
         fmt::format("plug {} directly into {} (no hub or dock between them), then run "
                     "`{}` again",
                     discovery::end_label(c.a), discovery::end_label(c.b), fix.rediscover())});
  }
}

void check_peers(const ClusterGraph& g, std::vector<Finding>& out) {
  std::set<std::string> domains;
  for (const auto& h : g.hosts()) {
    for (const auto& p : h.ports) {
      if (!p.port->domain_uuid.empty()) domains.insert(p.port->domain_uuid);
    }
  }
  for (const auto& h : g.hosts()) {
    for (const auto& p : h.ports) {
      for (const auto& peer : p.port->peers) {
        const std::string where = discovery::end_label(p.end);
        if (peer.kind == Peer::Kind::kHost && peer.depth == 1) {
          if (!peer.domain_uuid || domains.count(*peer.domain_uuid) || p.cabled()) continue;
          out.push_back({"foreign-host",
                         Severity::kWarn,
                         {h.name()},
                         {p.end},
                         fmt::format("{} is cabled to a host outside the cluster: {}", where,
                                     peer_label(peer)),
                         "add that host to the host list, or unplug the cable to free the port"});
        } else if (peer.kind == Peer::Kind::kHost) {
          const bool hub_cable = std::any_of(p.cables.begin(), p.cables.end(),
                                             [&](std::size_t i) { return through_hub(g, i); });
          if (hub_cable) continue;  // check_hub_cables: one fail per cable
          out.push_back({"behind-hub",
                         Severity::kWarn,
                         {h.name()},
                         {p.end},
                         fmt::format("{} reaches {} through a hub or dock (depth {}): "
                                     "hub-mediated links do not carry RDMA",
                                     where, peer_label(peer), peer.depth),
                         "cable the two hosts directly"});
        } else if (peer.depth == 1) {
          out.push_back({"device-port",
                         Severity::kInfo,
                         {h.name()},
                         {p.end},
                         fmt::format("{} has a device on its cable: {}; the port is not free",
                                     where, peer_label(peer)),
                         ""});
        }
      }
    }
  }
}

void check_linux_rdma(const ClusterGraph& g, const discovery::FixCommand& fix,
                      std::vector<Finding>& out) {
  const std::string enable = fix.command("rdma enable", "--soft-roce");
  for (const auto& h : g.hosts()) {
    if (is_mac(*h.facts) || !h.facts->rdma.devices.empty()) continue;
    out.push_back({"no-rdma",
                   Severity::kWarn,
                   {h.name()},
                   {},
                   // the word `rdma status` and `discover` print for it (rdma_readiness.h)
                   fmt::format("{} has no RDMA device (rdma status: {}): collectives fall back "
                               "to TCP",
                               h.name(), to_string(host_rdma_readiness(*h.facts))),
                   h.facts->rdma.state == discovery::RdmaState::kUnsupported
                       ? fmt::format("no RDMA subsystem in its kernel: boot one with the rdma_rxe "
                                     "module, then `{}`",
                                     enable)
                       : fmt::format("`{}` adds Soft-RoCE devices (rdma_rxe)", enable)});
  }
}

// The two ends of a cable with different MTUs: frames longer than the smaller one, sent from
// the other end, are dropped by the receiving port. TCP hides it (each side announces an MSS
// from its own MTU), but a large ping, UDP and an RDMA queue pair whose two ends disagree
// stall or fail; NCCL hung on exactly this (NVIDIA/nccl#1524). Ends that report no MTU (0)
// are not judged.
void check_mtu(const ClusterGraph& g, std::vector<Finding>& out) {
  for (std::size_t i = 0; i < g.edges().size(); ++i) {
    const auto& e = g.edges()[i];
    if (!e.joins_two_hosts() || !e.a_port || !e.b_port) continue;
    const HostNode& ha = g.host(*e.a_host);
    const HostNode& hb = g.host(*e.b_host);
    const PortNode& pa = ha.ports[*e.a_port];
    const PortNode& pb = hb.ports[*e.b_port];
    if (!pa.port->interface || !pb.port->interface) continue;
    const int ma = pa.port->interface->mtu, mb = pb.port->interface->mtu;
    if (ma <= 0 || mb <= 0 || ma == mb) continue;
    // Lower the larger one: the smaller MTU always works on both ends.
    const bool lower_a = ma > mb;
    const HostNode& big = lower_a ? ha : hb;
    const std::string& itf = (lower_a ? pa : pb).port->interface->name;
    const int target = std::min(ma, mb);
    const Cable& c = g.cable(i);
    const std::vector<std::string> set_mtu =
        is_mac(*big.facts)
            ? std::vector<std::string>{"networksetup", "-setMTU", itf, std::to_string(target)}
            : std::vector<std::string>{"ip", "link", "set", "dev", itf, "mtu", std::to_string(target)};
    out.push_back(
        {"mtu-mismatch",
         Severity::kFail,
         {c.a.host, c.b.host},
         {c.a, c.b},
         fmt::format("{}: MTU {} on {} but {} on {}: frames longer than {} bytes from {} are "
                     "dropped (large pings, UDP and RDMA stall; TCP hides it)",
                     cable_label(g, i), ma, discovery::end_label(c.a), mb,
                     discovery::end_label(c.b), target, big.name()),
         fmt::format("give both ends one MTU: on {} `sudo {}` (or raise the other end to {})",
                     big.name(), remote::shell_quote(set_mtu), std::max(ma, mb))});
  }
}


// One IPv4 address on two interfaces of a host, a cabled port among them, or on cabled ports of
// two hosts. A host sends to a subnet out of one interface only (its first route), so with
// 10.0.0.1/31 on tb1 and tb2 the cable on the other port is never used: ranks routed over it
// wait for their connect timeout, while a ping that names its interface (`network verify`)
// still answers. Two hosts that both claim an address answer for it in turn. An address on no
// cabled port is not judged (en0 and Wi-Fi on one LAN is routine); loopback, 0.0.0.0 and
// self-assigned 169.254/16 addresses are ignored (link-local: unique per link only, RFC 3927, so
// two cables may each carry one).
// The far end's port of the first cable on port `p` of host `h`, or nullptr.
const PortNode* far_port(const ClusterGraph& g, std::size_t h, const PortNode& p) {
  if (p.cables.empty()) return nullptr;
  const auto& e = g.edges().at(p.cables.front());
  if (!e.joins_two_hosts() || !e.a_port || !e.b_port) return nullptr;
  const bool a_side = *e.a_host == h && &g.host(h).ports[*e.a_port] == &p;
  return a_side ? &g.host(*e.b_host).ports[*e.b_port] : &g.host(*e.a_host).ports[*e.a_port];
}

// Whether two IPv4 addresses lie in one aligned /30 (a /31 or /30 point-to-point subnet).
bool same_slash30(const std::string& a, const std::string& b) {
  const auto x = util::parse_ipv4_prefix(a), y = util::parse_ipv4_prefix(b);
  return x && y && (x->address >> 2) == (y->address >> 2);
}

void check_duplicate_addresses(const ClusterGraph& g, std::vector<Finding>& out) {
  struct Holder {
    std::size_t host;
    std::string itf;
    const PortNode* port;  // a cabled port, else nullptr
  };
  std::map<std::string, std::vector<Holder>> by_address;
  for (std::size_t h = 0; h < g.size(); ++h) {
    const HostNode& host = g.host(h);
    for (const PortNode& p : host.ports) {
      if (!p.port->interface) continue;
      for (const auto& a : p.port->interface->ipv4) {
        by_address[a].push_back({h, p.port->interface->name, p.cabled() ? &p : nullptr});
      }
    }
    for (const auto& itf : host.facts->interfaces) {
      for (const auto& a : itf.ipv4) by_address[a].push_back({h, itf.name, nullptr});
    }
  }
  for (const auto& entry : by_address) {
    const std::string& address = entry.first;  // no structured binding: a lambda captures it
    const std::vector<Holder>& holders = entry.second;
    if (address.starts_with("127.") || util::self_assigned_ipv4(address) || address == "0.0.0.0" ||
        holders.size() < 2) {
      continue;
    }
    // The holder the address belongs to: the cabled port whose cable's far end has an address
    // of the same point-to-point subnet, when exactly one has.
    const Holder* keep = nullptr;
    int matches = 0;
    for (const Holder& x : holders) {
      const PortNode* far = x.port != nullptr ? far_port(g, x.host, *x.port) : nullptr;
      if (far == nullptr || !far->port->interface) continue;
      const auto& theirs = far->port->interface->ipv4;
      if (std::any_of(theirs.begin(), theirs.end(), [&address](const std::string& t) {
            return t != address && same_slash30(t, address);
          })) {
        keep = &x;
        ++matches;
      }
    }
    if (matches != 1) keep = nullptr;
    if (std::none_of(holders.begin(), holders.end(),
                     [](const Holder& x) { return x.port != nullptr; })) {
      continue;
    }
    std::vector<std::string> hosts, places, removes;
    std::vector<discovery::CableEnd> ports;
    for (const Holder& x : holders) {
      const HostNode& hn = g.host(x.host);
      if (std::find(hosts.begin(), hosts.end(), hn.name()) == hosts.end()) {
        hosts.push_back(hn.name());
      }
      places.push_back(hn.name() + " " + x.itf);
      if (x.port != nullptr) ports.push_back(discovery::end_of(*hn.facts, *x.port->port));
      if (&x == keep) continue;
      removes.push_back(fmt::format(
          "on {} `sudo {}`", hn.name(),
          is_mac(*hn.facts)
              ? remote::shell_quote({"ifconfig", x.itf, "-alias", address})
              : fmt::format("ip addr del {}/PREFIX dev {}", address, remote::shell_quote({x.itf}))));
    }
    std::string fix;
    if (keep != nullptr) {
      const PortNode* far = far_port(g, keep->host, *keep->port);
      fix = fmt::format("keep {} on {} {} alone (its cable's other end, {}, is in its subnet): "
                        "remove it from {} ({}; PREFIX as `ip -br addr` shows it)",
                        address, g.host(keep->host).name(), keep->itf,
                        discovery::end_label(far->end),
                        removes.size() == 1 ? "the other" : "the others",
                        fmt::join(removes, ", "));
    } else {
      fix = fmt::format("keep {} only on the port of the cable it addresses, and remove it "
                        "from the rest ({}; PREFIX as `ip -br addr` shows it), or give each "
                        "cable a subnet of its own (`clusterctl network plan`, then `network "
                        "apply`)",
                        address, fmt::join(removes, " or "));
    }
    out.push_back(
        {"duplicate-address",
         Severity::kFail,
         hosts,
         ports,
         hosts.size() == 1
             ? fmt::format("{} has {} on {} interfaces, {}: it sends to that subnet out of one "
                           "of them only, so the other cable is not used (a ping that names its "
                           "interface still answers)",
                           hosts.front(), address, holders.size(), fmt::join(places, ", "))
             : fmt::format("{} is on {}: hosts that share an address answer for it in turn, so "
                           "a connection to it may reach either",
                           address, fmt::join(places, ", ")),
         fix});
  }
}
}  // namespace

bool DownPair::recorded() const {
  return std::any_of(ends.begin(), ends.end(), [](const DownEnd& e) { return e.recorded_peer; });
}

std::unordered_map<std::size_t, DownPair> down_pairs(const ClusterGraph& g) {
  const std::size_t n = g.size();
  std::unordered_map<std::size_t, DownPair> out;
  std::vector<std::vector<bool>> taken(n);
  std::size_t left = 0;  // down ports not taken yet
  for (std::size_t h = 0; h < n; ++h) {
    taken[h].assign(g.host(h).ports.size(), false);
    for (const auto& p : g.host(h).ports) left += p.down() ? std::size_t{1} : std::size_t{0};
  }
  if (left == 0) return out;
  auto take = [&](std::size_t a, std::size_t b, DownEnd e) {
    taken[e.host][e.port] = true;
    --left;
    if (g.multiplicity(a, b) > 0) return;  // the pair is cabled: the port explains nothing
    const std::size_t lo = std::min(a, b), hi = std::max(a, b);
    DownPair& d = out[lo * n + hi];
    d.a = lo;
    d.b = hi;
    d.ends.push_back(std::move(e));
  };
  // Evidence: a plan entry not seen now, with an end on a down port.
  for (const discovery::LinkAddress& l : g.state().network) {
    const auto ha = g.host_index(l.a.host), hb = g.host_index(l.b.host);
    if (!ha || !hb || *ha == *hb) continue;
    const auto pa = g.port_index(*ha, l.a), pb = g.port_index(*hb, l.b);
    for (const auto& [h, p, peer, other] :
         {std::tuple{*ha, pa, l.b, *hb}, std::tuple{*hb, pb, l.a, *ha}}) {
      if (!p || taken[h][*p] || !g.host(h).ports[*p].down()) continue;
      take(h, other, DownEnd{h, *p, peer});
    }
  }
  // The guess, in pair order, for the down ports left.
  std::vector<std::size_t> next(n, 0);
  auto next_down = [&](std::size_t h) -> std::optional<std::size_t> {
    const auto& ports = g.host(h).ports;
    while (next[h] < ports.size() && (taken[h][next[h]] || !ports[next[h]].down())) ++next[h];
    if (next[h] == ports.size()) return std::nullopt;
    return next[h];
  };
  const auto missing = g.missing_pairs();
  for (std::size_t i = 0; i < missing.size() && left > 0; ++i) {
    if (i % 4096 == 0 && util::interrupted()) break;  // the caller reports the interruption
    const auto [a, b] = missing[i];
    if (out.count(a * n + b) != 0) continue;  // explained by the evidence
    for (std::size_t h : {a, b}) {
      if (auto p = next_down(h)) take(a, b, DownEnd{h, *p, std::nullopt});
    }
  }
  return out;
}

std::vector<Finding> pair_checks(const ClusterGraph& g) {
  std::vector<Finding> out;
  check_missing_pairs(g, out);
  return out;
}

std::string link_up_command(const discovery::HostFacts& h, const std::string& itf) {
  return remote::shell_quote(is_mac(h)
                                 ? std::vector<std::string>{"sudo", "ifconfig", itf, "up"}
                                 : std::vector<std::string>{"sudo", "ip", "link", "set", "dev",
                                                            itf, "up"});
}

CableLink cable_link(const discovery::CableEnd& a, const discovery::CableEnd& b,
                     const discovery::HostFacts* ha, const discovery::HostFacts* hb) {
  CableLink out;
  for (auto [end, h] : {std::pair{&a, ha}, std::pair{&b, hb}}) {
    if (h == nullptr) continue;
    const std::string name = discovery::end_label(*end);
    const discovery::Port* p = nullptr;
    for (const auto& q : h->ports) {
      const bool match =
          !end->interface.empty() ? q.interface && q.interface->name == end->interface : end->receptacle && q.receptacle == end->receptacle;
      if (match) {
        p = &q;
        break;
      }
    }
    if (p == nullptr || !p->interface) {
      out.bad.push_back(fmt::format("{}: port missing", name));
    } else if (!p->interface->up) {
      out.bad.push_back(fmt::format("{}: administratively down", name));
      out.bring_up.push_back(
          fmt::format("on {} `{}`", h->host, link_up_command(*h, p->interface->name)));
    } else if (!p->interface->running) {
      out.bad.push_back(fmt::format("{}: no carrier", name));
    }
  }
  out.up = out.bad.empty();
  if (out.up) return out;
  // A port that is down is brought up by a command; the other end then has carrier again
  // (no carrier there is what a port down at the far end looks like). Reseating comes after.
  out.fix =
      out.bring_up.empty()
          ? fmt::format("reseat the cable between {} and {} and bring both interfaces up",
                        discovery::end_label(a), discovery::end_label(b))
          : fmt::format(
                "bring the {} up: {}; if the cable still has no carrier then, "
                "reseat the cable between {} and {}",
                out.bring_up.size() == 1 ? "port that is down" : "ports that are down",
                fmt::join(out.bring_up, ", "), discovery::end_label(a), discovery::end_label(b));
  return out;
}

std::string cable_down_line(const discovery::CableEnd& a, const discovery::CableEnd& b,
                            const CableLink& link) {
  auto label = [](const discovery::CableEnd& e) {
    return e.interface.empty() && !e.receptacle ? e.host : discovery::end_label(e);
  };
  return fmt::format("cable {} - {} is down: {}; fix: {}", label(a), label(b),
                     fmt::join(link.bad, "; "), link.fix);
}

std::string cable_label(const ClusterGraph& g, std::size_t i) {
  const Cable& c = g.cable(i);
  return fmt::format("{} - {}", discovery::end_label(c.a), discovery::end_label(c.b));
}

bool through_hub(const ClusterGraph& g, std::size_t i) {
  const auto& e = g.edges().at(i);
  if (!e.joins_two_hosts() || !e.a_port || !e.b_port) return false;
  return hub_port(g.host(*e.a_host).ports[*e.a_port]) ||
         hub_port(g.host(*e.b_host).ports[*e.b_port]);
}

std::optional<std::size_t> other_host(const ClusterGraph& g, std::size_t i, std::size_t h) {
  const auto& e = g.edges().at(i);
  if (!e.joins_two_hosts()) return std::nullopt;
  if (e.a_host == h) return e.b_host;
  if (e.b_host == h) return e.a_host;
  return std::nullopt;
}

std::vector<Finding> run_checks(const ClusterGraph& g, const CheckOptions& opts) {
  std::vector<Finding> out;
  check_problems(g, out);
  check_host_count(g, opts, out);
  check_port_counts(g, out);
  check_missing_pairs(g, out);
  check_self_cables(g, out);
  check_sightings(g, opts.fix, out);
  check_hub_cables(g, opts.fix, out);
  check_peers(g, out);
  check_linux_rdma(g, opts.fix, out);
  check_multi_rail(g, out);
  check_mtu(g, out);
  check_duplicate_addresses(g, out);
  run_mac_checks(g, opts.fix, out);
  return out;
}

}  // namespace cc::topology
