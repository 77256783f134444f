#include "topology/graph.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include <fmt/format.h>

namespace cc::topology {

using discovery::CableEnd;
using discovery::HostFacts;
using discovery::Peer;
using discovery::Port;

const Peer* PortNode::host_peer() const {
  for (const auto& p : port->peers) {
    if (p.kind == Peer::Kind::kHost && p.depth == 1) return &p;
  }
  return nullptr;
}

bool PortNode::free() const {
  if (cabled()) return false;
  return std::none_of(port->peers.begin(), port->peers.end(),
                      [](const Peer& p) { return p.depth == 1; });
}

ClusterGraph::ClusterGraph(const discovery::ClusterState& state) : state_(&state) {
  const std::size_t n = state.hosts.size();
  hosts_.reserve(n);
  for (const auto& h : state.hosts) {
    HostNode node{&h, {}};
    node.ports.reserve(h.ports.size());
    for (const auto& p : h.ports) node.ports.push_back(PortNode{discovery::end_of(h, p), &p, {}});
    hosts_.push_back(std::move(node));
  }
  pairs_.assign(n * n, {});
  edges_.reserve(state.cables.size());
  for (std::size_t i = 0; i < state.cables.size(); ++i) {
    const auto& c = state.cables[i];
    CableEdge e;
    e.a_host = host_index(c.a.host);
    e.b_host = host_index(c.b.host);
    if (e.a_host) e.a_port = port_index(*e.a_host, c.a);
    if (e.b_host) e.b_port = port_index(*e.b_host, c.b);
    if (e.a_port) hosts_[*e.a_host].ports[*e.a_port].cables.push_back(i);
    if (e.b_port) hosts_[*e.b_host].ports[*e.b_port].cables.push_back(i);
    if (e.joins_two_hosts()) {
      pairs_[*e.a_host * n + *e.b_host].push_back(i);
      pairs_[*e.b_host * n + *e.a_host].push_back(i);
    }
    edges_.push_back(e);
  }
}

std::optional<std::size_t> ClusterGraph::host_index(std::string_view name) const {
  for (std::size_t i = 0; i < hosts_.size(); ++i) {
    if (hosts_[i].name() == name) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> ClusterGraph::port_index(std::size_t h, const CableEnd& end) const {
  const auto& ports = hosts_.at(h).ports;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const CableEnd& mine = ports[i].end;
    if (!end.interface.empty()) {
      if (mine.interface == end.interface) return i;
    } else if (end.receptacle && mine.receptacle == end.receptacle) {
      return i;
    }
  }
  return std::nullopt;
}

const std::vector<std::size_t>& ClusterGraph::cables_between(std::size_t a, std::size_t b) const {
  if (a >= size() || b >= size()) throw std::out_of_range("ClusterGraph: host index");
  return pairs_[a * size() + b];
}

int ClusterGraph::multiplicity(std::size_t a, std::size_t b) const {
  return static_cast<int>(cables_between(a, b).size());
}

std::vector<std::vector<int>> ClusterGraph::matrix() const {
  const std::size_t n = size();
  std::vector<std::vector<int>> m(n, std::vector<int>(n, 0));
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) m[a][b] = a == b ? 0 : multiplicity(a, b);
  }
  return m;
}

std::vector<std::pair<std::size_t, std::size_t>> ClusterGraph::missing_pairs() const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t a = 0; a < size(); ++a) {
    for (std::size_t b = a + 1; b < size(); ++b) {
      if (multiplicity(a, b) == 0) out.emplace_back(a, b);
    }
  }
  return out;
}

bool is_mac(const HostFacts& h) {
  return h.os.name == "macOS";
}

bool is_mac_studio(const HostFacts& h) {
  static constexpr std::array<std::string_view, 6> kStudioModels = {
      "Mac13,1", "Mac13,2", "Mac14,13", "Mac14,14", "Mac15,14", "Mac16,9"};
  if (std::find(kStudioModels.begin(), kStudioModels.end(), h.model) != kStudioModels.end()) {
    return true;
  }
  return h.model.find("Studio") != std::string::npos || h.cpu.find("Studio") != std::string::npos;
}

bool is_studio_en2(const HostFacts& h, const Port& p) {
  return p.interface && p.interface->name == "en2" && is_mac(h) && is_mac_studio(h);
}

std::string pair_label(const ClusterGraph& g, std::size_t a, std::size_t b) {
  return fmt::format("{}-{}", g.host(a).name(), g.host(b).name());
}

}  // namespace cc::topology
