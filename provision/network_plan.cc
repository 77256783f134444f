#include "provision/network_plan.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "topology/checks.h"
#include "topology/rdma_port.h"

namespace cc::provision {
namespace {

using discovery::Cable;
using discovery::CableEnd;
using discovery::ClusterState;
using discovery::LinkAddress;
using util::ExitCode;
using util::Ipv4Prefix;

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

std::string end_id(const CableEnd& e) {
  return e.host + ":" + (e.interface.empty() && e.receptacle
                             ? fmt::format("receptacle{}", *e.receptacle)
                             : e.interface);
}

bool is_linux(const ClusterState& state, const std::string& host) {
  const auto* h = state.find_host(host);
  return h != nullptr && h->os.name != "macOS";
}

bool same_end(const CableEnd& x, const CableEnd& y) {
  return x.host == y.host && x.interface == y.interface && x.receptacle == y.receptacle;
}

// Addresses some host holds on an interface that is not one of the cable's two ends.
struct Held {
  std::uint32_t address;
  std::string host;
  std::string interface;
};

std::vector<Held> held_addresses(const ClusterState& state) {
  std::vector<Held> held;
  auto add = [&](const std::string& host, const discovery::NetInterface& i) {
    for (const auto& a : i.ipv4) {
      if (auto p = util::parse_ipv4_prefix(a)) held.push_back({p->address, host, i.name});
    }
  };
  for (const auto& h : state.hosts) {
    for (const auto& i : h.interfaces) add(h.host, i);
    for (const auto& p : h.ports) {
      if (p.interface) add(h.host, *p.interface);
    }
    if (auto m = util::parse_ipv4_prefix(h.management_address)) {
      held.push_back({m->address, h.host, "(management address)"});
    }
  }
  return held;
}

}  // namespace

util::Result<std::vector<LinkAddress>> plan_network(const ClusterState& state,
                                                    const NetworkPlanOptions& opts) {
  const Ipv4Prefix base{opts.base.address & util::prefix_mask(opts.base.length), opts.base.length};
  if (base.length < 8 || base.length > 29) {
    return util::error(ExitCode::kUsage,
                       fmt::format("--base {}: give a prefix between /8 and /29 (each cable takes "
                                   "a /30)",
                                   util::format_prefix(base)));
  }
  if (overlaps(base, Ipv4Prefix{(192u << 24) | (168u << 16), 24})) {
    return util::error(ExitCode::kUsage,
                       fmt::format("--base {} overlaps 192.168.0.0/24, the subnet of most home "
                                   "and office LANs: choose another (default {})",
                                   util::format_prefix(base), kDefaultNetworkBase));
  }
  std::vector<Held> held = held_addresses(state);
  for (const auto& h : state.hosts) {
    auto m = util::parse_ipv4_prefix(h.management_address);
    if (m && overlaps(base, Ipv4Prefix{m->address, 32})) {
      return util::error(ExitCode::kUsage,
                         fmt::format("--base {} contains {}'s management address {}: choose a "
                                     "base outside the management network",
                                     util::format_prefix(base), h.host, h.management_address));
    }
  }

  const std::uint32_t slots = std::uint32_t{1} << (30 - base.length);
  if (state.cables.size() > slots) {
    return util::error(ExitCode::kUsage,
                       fmt::format("--base {} has {} /30 subnets but the cluster has {} cables: "
                                   "give a larger base",
                                   util::format_prefix(base), slots, state.cables.size()));
  }
  // Placement order: by cable identity, so the plan does not depend on discovery's order.
  std::vector<size_t> order(state.cables.size());
  std::vector<std::string> ids(state.cables.size());
  for (size_t i = 0; i < state.cables.size(); ++i) {
    order[i] = i;
    std::string a = end_id(state.cables[i].a), b = end_id(state.cables[i].b);
    ids[i] = a < b ? a + "|" + b : b + "|" + a;
  }
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return ids[x] < ids[y]; });

  std::vector<LinkAddress> plan(state.cables.size());
  std::set<std::uint32_t> used_slots;
  for (size_t i : order) {
    const auto& cable = state.cables[i];
    auto taken = [&](std::uint32_t slot) {
      if (used_slots.count(slot) != 0) return true;
      Ipv4Prefix subnet{base.address + slot * 4, 30};
      return std::any_of(held.begin(), held.end(), [&](const Held& h) {
        bool own_end = (h.host == cable.a.host && h.interface == cable.a.interface) ||
                       (h.host == cable.b.host && h.interface == cable.b.interface);
        return !own_end && overlaps(subnet, Ipv4Prefix{h.address, 32});
      });
    };
    auto slot = static_cast<std::uint32_t>(fnv1a(ids[i]) % slots);
    std::uint32_t tries = 0;
    while (taken(slot)) {
      slot = (slot + 1) % slots;
      if (++tries == slots) {
        return util::error(ExitCode::kUsage,
                           fmt::format("--base {} has no free /30 left for {}: give a larger base",
                                       util::format_prefix(base), ids[i]));
      }
    }
    used_slots.insert(slot);
    const std::uint32_t net = base.address + slot * 4;
    const bool p2p31 = is_linux(state, cable.a.host) && is_linux(state, cable.b.host);
    LinkAddress link;
    link.a = cable.a;
    link.b = cable.b;
    link.prefix_length = p2p31 ? 31 : 30;
    link.subnet = util::format_prefix(Ipv4Prefix{net, link.prefix_length});
    link.a_address = util::format_ipv4(p2p31 ? net : net + 1);
    link.b_address = util::format_ipv4(p2p31 ? net + 1 : net + 2);
    plan[i] = std::move(link);
  }
  return plan;
}

const LinkAddress* find_link(const std::vector<LinkAddress>& plan, const CableEnd& a,
                             const CableEnd& b) {
  for (const auto& l : plan) {
    if ((same_end(l.a, a) && same_end(l.b, b)) || (same_end(l.a, b) && same_end(l.b, a))) {
      return &l;
    }
  }
  return nullptr;
}

KeptPlan keep_plan(const std::vector<LinkAddress>& plan, const ClusterState& now) {
  KeptPlan out;
  // The first problem of an end: its host not probed, or its port gone.
  auto end_problem = [&](const CableEnd& e) -> std::optional<DroppedLink> {
    const discovery::HostFacts* h = now.find_host(e.host);
    if (h == nullptr) {
      const bool listed =
          std::any_of(now.problems.begin(), now.problems.end(),
                      [&](const discovery::HostProblem& p) { return p.host == e.host; });
      return DroppedLink{{},
                         Unseen::kNotProbed,
                         listed ? fmt::format("{} was not probed", e.host)
                                : fmt::format("{} is not one of the hosts discovered", e.host),
                         {}};
    }
    const bool has = std::any_of(h->ports.begin(), h->ports.end(), [&](const discovery::Port& p) {
      return e.interface.empty() ? p.receptacle == e.receptacle
                                 : p.interface && p.interface->name == e.interface;
    });
    if (has) return std::nullopt;
    return DroppedLink{{},
                       Unseen::kNoPort,
                       fmt::format("{} has no port {} now", e.host, discovery::port_label(e)),
                       {}};
  };
  for (const LinkAddress& l : plan) {
    const bool seen = std::any_of(now.cables.begin(), now.cables.end(), [&](const Cable& c) {
      return find_link({l}, c.a, c.b) != nullptr;
    });
    if (seen) {
      out.kept.push_back(l);
      continue;
    }
    std::optional<DroppedLink> d = end_problem(l.a);
    if (!d) d = end_problem(l.b);
    if (!d) {
      // Both ports are there: the one judgement of their link (topology::cable_link) says
      // which end is down and how to bring it up, as health and verify-mesh say it.
      const topology::CableLink link =
          topology::cable_link(l.a, l.b, now.find_host(l.a.host), now.find_host(l.b.host));
      d = link.up
              ? DroppedLink{{},
                            Unseen::kNotSeen,
                            "the cable is not seen now (a port down, a cable loose or pulled)",
                            {}}
              : DroppedLink{{},
                            Unseen::kNotSeen,
                            fmt::format("the cable is not seen now: {}", fmt::join(link.bad, "; ")),
                            link.fix};
    }
    d->link = l;
    out.dropped.push_back(std::move(*d));
  }
  return out;
}

const CableEnd* end_without_interface(const LinkAddress& l) {
  if (l.a.interface.empty()) return &l.a;
  if (l.b.interface.empty()) return &l.b;
  return nullptr;
}

std::vector<DroppedLink> take_links_without_interface(std::vector<LinkAddress>& plan) {
  std::vector<DroppedLink> out;
  std::vector<LinkAddress> keep;
  for (LinkAddress& l : plan) {
    const CableEnd* e = end_without_interface(l);
    if (e == nullptr) {
      keep.push_back(std::move(l));
      continue;
    }
    std::string reason =
        topology::lacks_hardware_port(*e)
            ? fmt::format("{} has no network interface: {}", discovery::end_label(*e),
                          topology::no_hardware_port(*e, {}).reason)
            : fmt::format("{} has no network interface", discovery::end_label(*e));
    out.push_back({std::move(l), Unseen::kNoInterface, std::move(reason), {}});
  }
  plan = std::move(keep);
  return out;
}

std::vector<Cable> unplanned_cables(const std::vector<Cable>& cables,
                                    const std::vector<LinkAddress>& plan) {
  std::vector<Cable> out;
  for (const Cable& c : cables) {
    if (find_link(plan, c.a, c.b) == nullptr) out.push_back(c);
  }
  return out;
}

std::vector<EndAddress> addresses_of(const std::vector<LinkAddress>& plan,
                                     const std::string& host) {
  std::vector<EndAddress> out;
  for (const auto& l : plan) {
    if (l.a.host == host) {
      out.push_back({l.a.interface, l.a_address, l.prefix_length, discovery::end_label(l.b)});
    }
    if (l.b.host == host) {
      out.push_back({l.b.interface, l.b_address, l.prefix_length, discovery::end_label(l.a)});
    }
  }
  return out;
}

}  // namespace cc::provision
