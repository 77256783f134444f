#include "topology/plan.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "topology/checks.h"
#include "util/interrupt.h"
#include "util/text.h"

namespace cc::topology {
namespace {

// Free ports of one host in the order the plan uses them.
void sort_by_preference(const HostNode& h, std::vector<std::size_t>& ports) {
  std::sort(ports.begin(), ports.end(), [&](std::size_t x, std::size_t y) {
    const bool ex = is_studio_en2(*h.facts, *h.ports[x].port);
    const bool ey = is_studio_en2(*h.facts, *h.ports[y].port);
    return ex != ey ? ey : x < y;
  });
}

}  // namespace

const char* to_string(PlanStep::Action a) {
  switch (a) {
    case PlanStep::Action::kPlug:
      return "plug";
    case PlanStep::Action::kUnplug:
      return "unplug";
    case PlanStep::Action::kBringUp:
      return "bring-up";
  }
  return "unknown";
}

CablingPlan plan_cabling(const ClusterGraph& g) {
  CablingPlan plan;
  const std::size_t n = g.size();
  // A pair whose cable may sit in a port that is down gets "bring up", never a plug step: the
  // cable is there, only not seen (checks.h, down_pairs). A down port is never a free one.
  const auto down = down_pairs(g);
  std::vector<std::pair<std::size_t, std::size_t>> missing;
  for (const auto& m : g.missing_pairs()) {
    if (down.count(m.first * n + m.second) == 0) missing.push_back(m);
  }
  std::vector<std::pair<std::size_t, std::size_t>> down_order;
  for (const auto& d : down) down_order.emplace_back(d.second.a, d.second.b);
  std::sort(down_order.begin(), down_order.end());
  for (const auto& [a, b] : down_order) {
    for (const DownEnd& e : down.at(a * n + b).ends) {
      const HostNode& h = g.host(e.host);
      const PortNode& p = h.ports[e.port];
      const std::size_t other = e.host == a ? b : a;
      discovery::CableEnd peer;
      peer.host = g.host(other).name();
      std::string why;
      if (e.recorded_peer) {
        peer = *e.recorded_peer;
        why = fmt::format("the network plan records its cable to {}", discovery::end_label(peer));
      } else {
        why = fmt::format("it may hold the cable of {} (a guess: nothing records the host it "
                          "faced)",
                          pair_label(g, a, b));
      }
      plan.steps.push_back(
          {PlanStep::Action::kBringUp, p.end, peer,
           fmt::format("bring up {}: on {} `{}`; {}: do not move that cable",
                       discovery::end_label(p.end), h.name(),
                       link_up_command(*h.facts, p.port->interface->name), why)});
    }
  }
  std::vector<std::size_t> demand(n, 0);
  for (auto [a, b] : missing) {
    ++demand[a];
    ++demand[b];
  }
  // The far ends the network plan records for down ports hold those cables too: not free.
  std::vector<std::vector<bool>> held(n);
  for (std::size_t h = 0; h < n; ++h) held[h].assign(g.host(h).ports.size(), false);
  for (const auto& d : down) {
    for (const DownEnd& e : d.second.ends) {
      if (!e.recorded_peer) continue;
      if (auto h = g.host_index(e.recorded_peer->host)) {
        if (auto p = g.port_index(*h, *e.recorded_peer)) held[*h][*p] = true;
      }
    }
  }
  std::vector<std::vector<std::size_t>> free(n);
  for (std::size_t h = 0; h < n; ++h) {
    const auto& ports = g.host(h).ports;
    for (std::size_t p = 0; p < ports.size(); ++p) {
      if (ports[p].free() && !ports[p].down() && !held[h][p]) free[h].push_back(p);
    }
  }
  auto short_of = [&](std::size_t h) { return demand[h] > free[h].size(); };

  // Redundant parallel cables of hosts short of ports.
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a + 1; b < n; ++b) {
      const auto& cables = g.cables_between(a, b);
      std::size_t kept = cables.size();
      for (auto it = cables.rbegin(); kept > 1 && it != cables.rend(); ++it) {
        if (!short_of(a) && !short_of(b)) break;
        const CableEdge& e = g.edges()[*it];
        if (!e.a_port || !e.b_port) continue;  // an end we cannot name: not worth the advice
        --kept;
        free[*e.a_host].push_back(*e.a_port);
        free[*e.b_host].push_back(*e.b_port);
        const auto& c = g.cable(*it);
        plan.steps.push_back({PlanStep::Action::kUnplug, c.a, c.b,
                              fmt::format("unplug {} - {} ({} keeps {})", discovery::end_label(c.a),
                                          discovery::end_label(c.b), pair_label(g, a, b),
                                          util::plural(kept, "cable", "cables"))});
      }
    }
  }
  for (std::size_t h = 0; h < n; ++h) sort_by_preference(g.host(h), free[h]);

  std::vector<std::size_t> used(n, 0);
  for (std::size_t i = 0; i < missing.size(); ++i) {
    if (i % 4096 == 0 && util::interrupted()) break;  // the caller reports the interruption
    const auto [a, b] = missing[i];
    const bool ok_a = used[a] < free[a].size();
    const bool ok_b = used[b] < free[b].size();
    if (!ok_a || !ok_b) {
      if (plan.unplanned_total >= kListedPairs) {
        ++plan.unplanned_total;
        continue;
      }
      std::string reason =
          !ok_a && !ok_b
              ? fmt::format("no free port left on {} and {}", g.host(a).name(), g.host(b).name())
              : fmt::format("no free port left on {}", (ok_a ? g.host(b) : g.host(a)).name());
      ++plan.unplanned_total;
      plan.unplanned.push_back({g.host(a).name(), g.host(b).name(), reason});
      continue;
    }
    const auto& pa = g.host(a).ports[free[a][used[a]++]].end;
    const auto& pb = g.host(b).ports[free[b][used[b]++]].end;
    plan.steps.push_back(
        {PlanStep::Action::kPlug, pa, pb,
         fmt::format("plug {} into {}", discovery::end_label(pa), discovery::end_label(pb))});
  }

  for (std::size_t h = 0; h < n; ++h) {
    if (!short_of(h)) continue;
    PortShortage s;
    s.host = g.host(h).name();
    s.missing_cables = static_cast<int>(demand[h]);
    s.free_ports = static_cast<int>(free[h].size());
    s.needed = s.missing_cables - s.free_ports;
    s.text = fmt::format("{} needs {} more free {} ({}, {})", s.host, s.needed,
                         s.needed == 1 ? "port" : "ports",
                         util::plural(demand[h], "missing cable", "missing cables"),
                         util::plural(free[h].size(), "free port", "free ports"));
    std::vector<std::string> occupied;
    for (const auto& p : g.host(h).ports) {
      if (!p.cabled() && !p.free()) occupied.push_back(discovery::port_label(p.end));
    }
    if (!occupied.empty()) {
      s.text += fmt::format("; unplugging what is on {} would free {}", fmt::join(occupied, ", "),
                            occupied.size() == 1 ? "it" : "them");
    }
    plan.shortages.push_back(std::move(s));
  }
  return plan;
}

void to_json(nlohmann::json& j, const PlanStep& s) {
  j = nlohmann::json{{"action", to_string(s.action)}, {"a", s.a}, {"b", s.b}, {"text", s.text}};
}

void to_json(nlohmann::json& j, const UnplannedPair& u) {
  j = nlohmann::json{{"a", u.a}, {"b", u.b}, {"reason", u.reason}};
}

void to_json(nlohmann::json& j, const PortShortage& s) {
  j = nlohmann::json{{"host", s.host},
                     {"missing_cables", s.missing_cables},
                     {"free_ports", s.free_ports},
                     {"needed", s.needed},
                     {"text", s.text}};
}

void to_json(nlohmann::json& j, const CablingPlan& p) {
  j = nlohmann::json{{"steps", p.steps},
                     {"unplanned", p.unplanned},
                     {"unplanned_total", p.unplanned_total},
                     {"shortages", p.shortages}};
}

}  // namespace cc::topology
