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
  return a == PlanStep::Action::kPlug ? "plug" : "unplug";
}

CablingPlan plan_cabling(const ClusterGraph& g) {
  CablingPlan plan;
  const std::size_t n = g.size();
  const auto missing = g.missing_pairs();
  std::vector<std::size_t> demand(n, 0);
  for (auto [a, b] : missing) {
    ++demand[a];
    ++demand[b];
  }
  std::vector<std::vector<std::size_t>> free(n);
  for (std::size_t h = 0; h < n; ++h) {
    const auto& ports = g.host(h).ports;
    for (std::size_t p = 0; p < ports.size(); ++p) {
      if (ports[p].free()) free[h].push_back(p);
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
