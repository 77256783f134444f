#include "topology/test_states.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <vector>
#include <utility>

#include <fmt/format.h>

namespace cc::topology::testing {

using discovery::Cable;
using discovery::CableSource;
using discovery::ClusterState;
using discovery::HostFacts;
using discovery::NetInterface;
using discovery::Peer;
using discovery::Port;
using discovery::RdmaState;

HostFacts& host(ClusterState& s, const std::string& name) {
  for (auto& h : s.hosts) {
    if (h.host == name) return h;
  }
  throw std::out_of_range("no host " + name);
}

Port& port(ClusterState& s, const std::string& name, const std::string& itf) {
  for (auto& p : host(s, name).ports) {
    if (p.interface && p.interface->name == itf) return p;
  }
  throw std::out_of_range("no port " + name + " " + itf);
}

HostFacts lab_host(const std::string& name, int ports) {
  HostFacts h;
  h.host = name;
  h.os = {"Debian GNU/Linux", "12", ""};
  h.management_address = "10.77.0." + name.substr(1);
  h.rdma.state = RdmaState::kUnsupported;
  for (int i = 1; i <= ports; ++i) {
    Port p;
    NetInterface itf;
    itf.name = fmt::format("tb{}", i);
    itf.up = true;
    itf.mtu = 1500;
    itf.kind = "veth";
    p.interface = itf;
    h.ports.push_back(p);
  }
  return h;
}

void sort_cables(ClusterState& s) {
  // Keys computed once per cable (hash lookups), so tests with 1,000 hosts stay fast.
  std::unordered_map<std::string, std::size_t> host_at;
  for (std::size_t i = 0; i < s.hosts.size(); ++i) host_at.emplace(s.hosts[i].host, i);
  auto host_index = [&](const std::string& n) {
    auto it = host_at.find(n);
    return it == host_at.end() ? s.hosts.size() : it->second;
  };
  auto port_index = [&](const discovery::CableEnd& e) {
    const std::size_t hi = host_index(e.host);
    const auto* h = hi < s.hosts.size() ? &s.hosts[hi] : nullptr;
    for (std::size_t i = 0; h != nullptr && i < h->ports.size(); ++i) {
      if (discovery::end_of(*h, h->ports[i]) == e) return i;
    }
    return std::size_t{999};
  };
  using Key = std::tuple<std::size_t, std::size_t, std::size_t, std::size_t>;
  std::vector<std::pair<Key, Cable>> keyed;
  keyed.reserve(s.cables.size());
  for (auto& c : s.cables) {
    Key k{host_index(c.a.host), port_index(c.a), host_index(c.b.host), port_index(c.b)};
    keyed.emplace_back(k, std::move(c));
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  s.cables.clear();
  for (auto& [k, c] : keyed) s.cables.push_back(std::move(c));
}

ClusterState lab_mesh(int n, const std::vector<std::pair<int, int>>& omit,
                      const std::vector<std::pair<int, int>>& extra, int min_ports) {
  std::vector<std::pair<int, int>> pairs;
  for (int a = 1; a <= n; ++a) {
    for (int b = a + 1; b <= n; ++b) {
      if (std::find(omit.begin(), omit.end(), std::pair(a, b)) == omit.end()) {
        pairs.emplace_back(a, b);
      }
    }
  }
  pairs.insert(pairs.end(), extra.begin(), extra.end());
  std::vector<int> used(static_cast<std::size_t>(n) + 1, 0);
  for (auto [a, b] : pairs) {
    ++used[static_cast<std::size_t>(a)];
    ++used[static_cast<std::size_t>(b)];
  }
  ClusterState s;
  s.created_at = "2026-11-30T18:00:00Z";
  for (int i = 1; i <= n; ++i) {
    s.hosts.push_back(lab_host(fmt::format("h{}", i), std::max(used[static_cast<std::size_t>(i)],
                                                               min_ports > 0 ? min_ports : n - 1)));
  }
  std::fill(used.begin(), used.end(), 0);
  for (auto [a, b] : pairs) {
    Cable c;
    int pa = ++used[static_cast<std::size_t>(a)];
    int pb = ++used[static_cast<std::size_t>(b)];
    c.a = {fmt::format("h{}", a), fmt::format("tb{}", pa), std::nullopt, std::nullopt};
    c.b = {fmt::format("h{}", b), fmt::format("tb{}", pb), std::nullopt, std::nullopt};
    c.sources = {CableSource::kNeighbour};
    c.seen_from_a = c.seen_from_b = true;
    port(s, c.a.host, c.a.interface).interface->running = true;
    port(s, c.b.host, c.b.interface).interface->running = true;
    s.cables.push_back(c);
  }
  sort_cables(s);
  return s;
}

HostFacts mac_host(const std::string& name, int ports, const std::string& model) {
  HostFacts h;
  h.host = name;
  h.os = {"macOS", "26.2", "25C56"};
  h.model = model;
  h.cpu = "Apple M4 Pro";
  h.memory_bytes = 64ULL << 30;
  h.rdma.state = RdmaState::kEnabled;
  for (int r = 1; r <= ports; ++r) {
    Port p;
    p.receptacle = r;
    p.domain_uuid = fmt::format("{}-domain-{}", name, r);
    NetInterface itf;
    itf.name = fmt::format("en{}", r + 1);
    itf.up = true;
    itf.mtu = 1500;
    itf.ipv4 = {fmt::format("169.254.{}.{}", name.size(), r)};
    itf.bridge = "bridge0";
    p.interface = itf;
    p.rdma_device = fmt::format("rdma_en{}", r + 1);
    h.ports.push_back(p);
    discovery::RdmaDevice d;
    d.name = *p.rdma_device;
    d.transport = "Thunderbolt (100)";
    d.netdev = itf.name;
    d.ports.push_back({1, "PORT_DOWN", false, 4096, "Thunderbolt", {}});
    h.rdma.devices.push_back(d);
  }
  NetInterface bridge;
  bridge.name = "bridge0";
  bridge.up = false;
  for (const auto& p : h.ports) bridge.members.push_back(p.interface->name);
  h.interfaces.push_back(bridge);
  return h;
}

namespace {

Port& receptacle(ClusterState& s, const std::string& name, int r) {
  for (auto& p : host(s, name).ports) {
    if (p.receptacle == r) return p;
  }
  throw std::out_of_range(fmt::format("no receptacle {} on {}", r, name));
}

discovery::RdmaPort* rdma_port(HostFacts& h, const Port& p) {
  for (auto& d : h.rdma.devices) {
    if (p.rdma_device && d.name == *p.rdma_device && !d.ports.empty()) return &d.ports.front();
  }
  return nullptr;
}

}  // namespace

void cable_macs(ClusterState& s, const std::string& a, int ra, const std::string& b, int rb,
                int speed_gbps, int generation) {
  Port& pa = receptacle(s, a, ra);
  Port& pb = receptacle(s, b, rb);
  HostFacts& ha = host(s, a);
  HostFacts& hb = host(s, b);
  const bool both = ha.rdma.state == RdmaState::kEnabled && hb.rdma.state == RdmaState::kEnabled;
  auto peer_of = [](const HostFacts& h, const Port& p) {
    Peer peer;
    peer.kind = Peer::Kind::kHost;
    peer.name = "Mac";
    peer.model = h.model;
    peer.vendor = "Apple Inc.";
    peer.domain_uuid = p.domain_uuid;
    peer.rdma_enabled = h.rdma.state == RdmaState::kEnabled;
    return peer;
  };
  pa.peers = {peer_of(hb, pb)};
  pb.peers = {peer_of(ha, pa)};
  for (auto [h, p] : {std::pair<HostFacts*, Port*>{&ha, &pa}, {&hb, &pb}}) {
    p->link_speed_gbps = speed_gbps;
    p->generation = generation;
    p->interface->running = true;
    if (auto* rp = rdma_port(*h, *p); rp != nullptr && both && speed_gbps >= 80) {
      rp->state = "PORT_ACTIVE";
      rp->active = true;
    }
  }
  Cable c;
  c.a = discovery::end_of(ha, pa);
  c.b = discovery::end_of(hb, pb);
  c.link_speed_gbps = speed_gbps;
  c.generation = generation;
  c.sources = {CableSource::kThunderbolt};
  c.seen_from_a = c.seen_from_b = true;
  s.cables.push_back(c);
  sort_cables(s);
}

ClusterState mac_mesh(int n, int ports) {
  ClusterState s;
  s.created_at = "2026-11-30T18:00:00Z";
  for (int i = 1; i <= n; ++i) s.hosts.push_back(mac_host(fmt::format("m{}", i), ports));
  std::vector<int> next(static_cast<std::size_t>(n) + 1, 1);
  for (int a = 1; a <= n; ++a) {
    for (int b = a + 1; b <= n; ++b) {
      cable_macs(s, fmt::format("m{}", a), next[static_cast<std::size_t>(a)]++,
                 fmt::format("m{}", b), next[static_cast<std::size_t>(b)]++);
    }
  }
  return s;
}

void disable_rdma(ClusterState& s, const std::string& name) {
  HostFacts& h = host(s, name);
  h.rdma.state = RdmaState::kDisabled;
  h.rdma.devices.clear();
  for (auto& p : h.ports) p.rdma_device.reset();
  std::vector<std::string> domains;
  for (const auto& p : h.ports) domains.push_back(p.domain_uuid);
  for (auto& other : s.hosts) {
    for (auto& p : other.ports) {
      for (auto& peer : p.peers) {
        if (!peer.domain_uuid ||
            std::find(domains.begin(), domains.end(), *peer.domain_uuid) == domains.end()) {
          continue;
        }
        peer.rdma_enabled = false;
        if (auto* rp = rdma_port(other, p)) {
          rp->state = "PORT_DOWN";
          rp->active = false;
        }
      }
    }
  }
  for (auto& c : s.cables) {
    if (c.a.host == name) c.a.rdma_device.reset();
    if (c.b.host == name) c.b.rdma_device.reset();
  }
}

void drop_hardware_port(ClusterState& s, const std::string& name, int r) {
  HostFacts& h = host(s, name);
  auto p = std::find_if(h.ports.begin(), h.ports.end(),
                        [&](const Port& x) { return x.receptacle == r; });
  if (p == h.ports.end()) throw std::out_of_range(fmt::format("{}: no receptacle {}", name, r));
  const std::string dev = p->rdma_device.value_or("");
  p->interface.reset();
  p->rdma_device.reset();
  std::erase_if(h.rdma.devices, [&](const discovery::RdmaDevice& d) { return d.name == dev; });
  for (auto& c : s.cables) {
    c.sources = {CableSource::kThunderbolt, CableSource::kNeighbour};
    for (auto* e : {&c.a, &c.b}) {
      if (e->host != name || e->receptacle != r) continue;
      e->interface.clear();
      e->rdma_device.reset();
      c.sources = {CableSource::kThunderbolt};
    }
  }
}

ClusterState tb4_only_pair() {
  ClusterState s;
  s.created_at = "2026-11-30T18:00:00Z";
  s.hosts = {mac_host("m1", 1, "Mac14,2"), mac_host("m2", 1)};
  cable_macs(s, "m1", 1, "m2", 1, 40, 4);
  disable_rdma(s, "m1");  // no devices, as on Thunderbolt 4 hardware ...
  host(s, "m1").rdma.state = RdmaState::kEnabled;  // ... although rdma_ctl says enabled
  return s;
}

void through_dock(ClusterState& s, std::size_t i) {
  Cable& c = s.cables.at(i);
  for (const auto* end : {&c.a, &c.b}) {
    Port& p = port(s, end->host, end->interface);
    Peer dock;
    dock.name = "SB-XTM5";
    dock.vendor = "Sabrent";
    std::vector<Peer> peers{dock};
    for (Peer q : p.peers) {
      q.depth = 2;
      peers.push_back(q);
    }
    p.peers = peers;
  }
  c.sources = {CableSource::kNeighbour};
}

std::vector<Finding> of_check(const std::vector<Finding>& all, const std::string& check) {
  std::vector<Finding> out;
  for (const auto& f : all) {
    if (f.check == check) out.push_back(f);
  }
  return out;
}

std::vector<std::string> check_ids(const std::vector<Finding>& all) {
  std::vector<std::string> out;
  for (const auto& f : all) out.push_back(f.check);
  return out;
}

}  // namespace cc::topology::testing
