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

bool PortNode::down() const {
  return !cabled() && port->interface && !port->interface->up;
}

ClusterGraph::ClusterGraph(const discovery::ClusterState& state) : state_(&state) {
  const std::size_t n = state.hosts.size();
  hosts_.reserve(n);
  port_at_.resize(n);
  host_at_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& h = state.hosts[i];
    host_at_.emplace(h.host, i);
    HostNode node{&h, {}};
    node.ports.reserve(h.ports.size());
    for (const auto& p : h.ports) {
      PortNode pn{discovery::end_of(h, p), &p, {}};
      const std::size_t k = node.ports.size();
      if (!pn.end.interface.empty()) port_at_[i].by_interface.emplace(pn.end.interface, k);
      if (pn.end.receptacle) port_at_[i].by_receptacle.emplace(*pn.end.receptacle, k);
      node.ports.push_back(std::move(pn));
    }
    hosts_.push_back(std::move(node));
  }
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
  auto it = host_at_.find(std::string(name));
  if (it == host_at_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::size_t> ClusterGraph::port_index(std::size_t h, const CableEnd& end) const {
  const PortIndex& idx = port_at_.at(h);
  if (!end.interface.empty()) {
    auto it = idx.by_interface.find(end.interface);
    if (it != idx.by_interface.end()) return it->second;
  } else if (end.receptacle) {
    auto it = idx.by_receptacle.find(*end.receptacle);
    if (it != idx.by_receptacle.end()) return it->second;
  }
  return std::nullopt;
}

const std::vector<std::size_t>& ClusterGraph::cables_between(std::size_t a, std::size_t b) const {
  static const std::vector<std::size_t> kNone;
  if (a >= size() || b >= size()) throw std::out_of_range("ClusterGraph: host index");
  auto it = pairs_.find(a * size() + b);
  return it == pairs_.end() ? kNone : it->second;
}

int ClusterGraph::multiplicity(std::size_t a, std::size_t b) const {
  return static_cast<int>(cables_between(a, b).size());
}

std::vector<std::vector<int>> ClusterGraph::matrix() const {
  const std::size_t n = size();
  std::vector<std::vector<int>> m(n, std::vector<int>(n, 0));
  for (const auto& [key, cables] : pairs_) {
    m[key / n][key % n] = static_cast<int>(cables.size());
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
