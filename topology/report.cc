#include "topology/report.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "topology/graph.h"
#include "util/interrupt.h"

namespace cc::topology {
namespace {

std::string plural(std::size_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// The missing-cable findings' fixes: the plan's plug step, or why there is none.
// Indexed by host pair, so this is linear in findings + plan (a 1,000-host state without
// cables has ~500,000 of each). As before, a later step or unplanned entry for the same pair
// wins.
void attach_plan(std::vector<Finding>& findings, const CablingPlan& plan) {
  auto key = [](const std::string& a, const std::string& b) { return a + '\n' + b; };
  std::unordered_map<std::string, const PlanStep*> plug;
  std::unordered_map<std::string, const UnplannedPair*> unplanned;
  for (const auto& s : plan.steps) {
    if (s.action == PlanStep::Action::kPlug) plug[key(s.a.host, s.b.host)] = &s;
  }
  for (const auto& u : plan.unplanned) unplanned[key(u.a, u.b)] = &u;
  for (std::size_t i = 0; i < findings.size(); ++i) {
    if (i % 4096 == 0 && util::interrupted()) return;
    Finding& f = findings[i];
    if (f.check != "missing-cable" || f.hosts.size() != 2) continue;
    const std::string k = key(f.hosts[0], f.hosts[1]);
    if (auto s = plug.find(k); s != plug.end()) {
      f.fix = s->second->text;
      f.ports = {s->second->a, s->second->b};
    }
    if (auto u = unplanned.find(k); u != unplanned.end()) {
      f.fix = fmt::format("cable {} to {}; {} (see the cabling plan)", u->second->a, u->second->b,
                          u->second->reason);
    }
  }
}

std::string summary_text(const ClusterGraph& g, const Summary& s,
                         const std::vector<Finding>& findings) {
  std::string text;
  if (s.hosts == 0) {
    text = "no hosts";
  } else if (s.hosts == 1) {
    text = fmt::format("1 host ({}): nothing to cable", g.host(0).name());
  } else if (s.full_mesh) {
    text = s.cables == s.pairs
               ? fmt::format("{} hosts, {} of {} cables: full mesh", s.hosts, s.pairs, s.pairs)
               : fmt::format("{} hosts, {} of {} pairs cabled ({} cables): full mesh", s.hosts,
                             s.pairs, s.pairs, s.cables);
  } else {
    std::vector<std::string> missing;
    constexpr std::size_t kShown = 4;
    std::size_t count = 0;
    for (auto [a, b] : g.missing_pairs()) {
      if (count++ < kShown + 1) missing.push_back(pair_label(g, a, b));
    }
    std::string list;
    if (count > kShown) {
      list =
          fmt::format("{} and {} more", fmt::join(missing.begin(), missing.begin() + kShown, ", "),
                      count - kShown);
    } else {
      list = fmt::format("{}", fmt::join(missing, ", "));
    }
    text = fmt::format("{} hosts, {} of {} pairs cabled: {} missing", s.hosts, s.pairs_cabled,
                       s.pairs, list);
  }
  if (s.multi_rail_pairs > 0) {
    int most = 0;
    for (std::size_t a = 0; a < g.size(); ++a) {
      for (std::size_t b = a + 1; b < g.size(); ++b) most = std::max(most, g.multiplicity(a, b));
    }
    text += "; " + plural(static_cast<std::size_t>(s.multi_rail_pairs),
                          most == 2 ? "doubled pair" : "multi-rail pair",
                          most == 2 ? "doubled pairs" : "multi-rail pairs");
  }
  if (s.full_mesh || s.hosts == 1) {
    std::size_t without = 0;
    for (const auto& h : g.hosts()) {
      without += h.facts->rdma.state != discovery::RdmaState::kEnabled ? 1 : 0;
    }
    if (s.rdma_ready) {
      text += ", RDMA ready";
    } else if (s.fail > 0) {
      text += fmt::format(", not ready: {} failed",
                          plural(static_cast<std::size_t>(s.fail), "check", "checks"));
    } else if (without > 0) {
      text += fmt::format(", no RDMA on {} of {} (TCP fallback)", without,
                          plural(g.size(), "host", "hosts"));
    }
  } else {
    const auto missing_findings =
        std::count_if(findings.begin(), findings.end(),
                      [](const Finding& f) { return f.check == "missing-cable"; });
    const int others = s.fail - static_cast<int>(missing_findings) - s.unreachable - s.probe_failed;
    if (others > 0) {
      text += fmt::format("; {} other {} failed", others, others == 1 ? "check" : "checks");
    }
  }
  if (s.unreachable + s.probe_failed > 0) {
    std::vector<std::string> names;
    for (const auto& p : g.state().problems) names.push_back(p.host);
    text += fmt::format("; {} not probed: {}", plural(names.size(), "host", "hosts"),
                        fmt::join(names, ", "));
  }
  return text;
}

}  // namespace

VerifyReport verify_mesh(const discovery::ClusterState& state, const VerifyOptions& opts) {
  const ClusterGraph g(state);
  VerifyReport r;
  for (const auto& h : g.hosts()) r.hosts.push_back(h.name());
  r.matrix = g.matrix();
  for (std::size_t i = 0; i < g.edges().size(); ++i) {
    if (g.edges()[i].joins_two_hosts()) r.cables.push_back(g.cable(i));
  }
  r.ring = find_ring(r.matrix, opts.ring);
  r.plan = plan_cabling(g);
  r.findings = run_checks(g, CheckOptions{opts.expect_hosts});
  attach_plan(r.findings, r.plan);
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity < b.severity; });

  Summary& s = r.summary;
  const std::size_t n = g.size();
  s.hosts = static_cast<int>(n);
  for (const auto& p : state.problems) ++(p.exit_code == 3 ? s.unreachable : s.probe_failed);
  s.pairs = static_cast<int>(n * (n - (n > 0 ? 1 : 0)) / 2);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a + 1; b < n; ++b) {
      const int m = g.multiplicity(a, b);
      s.pairs_cabled += m > 0 ? 1 : 0;
      s.multi_rail_pairs += m > 1 ? 1 : 0;
      s.cables += m;
    }
  }
  for (const auto& f : r.findings) {
    ++(f.severity == Severity::kFail ? s.fail : f.severity == Severity::kWarn ? s.warn : s.info);
  }
  s.full_mesh = n >= 2 && s.pairs_cabled == s.pairs;
  s.rdma_ready = s.full_mesh && s.fail == 0 && s.unreachable + s.probe_failed == 0 &&
                 std::all_of(state.hosts.begin(), state.hosts.end(), [](const auto& h) {
                   return h.rdma.state == discovery::RdmaState::kEnabled;
                 });
  s.text = summary_text(g, s, r.findings);
  return r;
}

util::ExitCode exit_code(const VerifyReport& r) {
  if (r.summary.unreachable > 0) return util::ExitCode::kUnreachable;
  if (r.summary.fail > 0) return util::ExitCode::kCheckFailed;
  return util::ExitCode::kOk;
}

}  // namespace cc::topology
