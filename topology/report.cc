#include "topology/report.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "topology/graph.h"
#include "util/interrupt.h"
#include "util/text.h"

namespace cc::topology {
namespace {

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

// Cables between a and b that are direct links (not through a hub or dock).
int direct_cables(const ClusterGraph& g, std::size_t a, std::size_t b) {
  int n = 0;
  for (std::size_t i : g.cables_between(a, b)) n += through_hub(g, i) ? 0 : 1;
  return n;
}

// The headline names at most this many pairs of a kind, then "and N more".
constexpr std::size_t kShown = 4;

// Pairs of one kind for the headline: the first kShown labels and how many in all (a
// 1,000-host state without cables has 499,500 missing pairs: only their count is kept).
struct PairList {
  std::vector<std::string> first;
  std::size_t count = 0;
  void add(const ClusterGraph& g, std::size_t a, std::size_t b) {
    if (count++ < kShown) first.push_back(pair_label(g, a, b));
  }
};

// The probed pairs without a direct cable: with no cable at all ("h2-h4"), and with cables
// only through a hub or dock.
struct Undirect {
  PairList missing;
  PairList hub;
};
Undirect undirect_pairs(const ClusterGraph& g) {
  Undirect out;
  for (std::size_t a = 0; a < g.size(); ++a) {
    for (std::size_t b = a + 1; b < g.size(); ++b) {
      if (direct_cables(g, a, b) > 0) continue;
      (g.multiplicity(a, b) > 0 ? out.hub : out.missing).add(g, a, b);
    }
  }
  return out;
}

// "h1-h2, h1-h3, h1-h4, h2-h3 and 2 more"
std::string shortened(const PairList& v) {
  if (v.count > kShown) {
    return fmt::format("{} and {} more", fmt::join(v.first, ", "), v.count - kShown);
  }
  return fmt::format("{}", fmt::join(v.first, ", "));
}

// Failed checks the headline does not already name: not the missing pairs (missing-cable,
// port-down, and behind-hub on a pair without a direct cable) nor the hosts not probed.
int other_fails(const ClusterGraph& g, const std::vector<Finding>& findings) {
  int n = 0;
  for (const auto& f : findings) {
    if (f.severity != Severity::kFail || f.check == "missing-cable" || f.check == "port-down" ||
        f.check == "unreachable" || f.check == "bad-destination" ||
        f.check == "probe-failed") {
      continue;
    }
    if (f.check == "behind-hub" && f.hosts.size() == 2) {
      auto a = g.host_index(f.hosts[0]), b = g.host_index(f.hosts[1]);
      if (a && b && direct_cables(g, *a, *b) == 0) continue;
    }
    ++n;
  }
  return n;
}

std::string summary_text(const ClusterGraph& g, const Summary& s,
                         const std::vector<Finding>& findings, bool expected_given) {
  std::string text;
  const bool incomplete = s.expected_hosts > s.hosts;
  const std::string cabled =
      s.cables == s.pairs_cabled && s.hub_cables == 0
          ? fmt::format("{} of {} cables", s.pairs_cabled, s.pairs)
          : fmt::format("{} of {} pairs cabled", s.pairs_cabled, s.pairs);
  if (s.hosts == 0) {
    text = s.expected_hosts == 0 ? "no hosts" : "no host probed";
  } else if (incomplete) {
    // Not every host of the cluster was probed (or found): its mesh cannot be full.
    text = fmt::format("{} hosts{}, {} probed, {}: not a full mesh", s.expected_hosts,
                       expected_given ? " expected" : "", s.hosts, cabled);
  } else if (s.hosts == 1) {
    text = fmt::format("1 host ({}): nothing to cable", g.host(0).name());
  } else if (s.full_mesh) {
    text = s.cables == s.pairs
               ? fmt::format("{} hosts, {} of {} cables: full mesh", s.hosts, s.pairs, s.pairs)
               : fmt::format("{} hosts, {} of {} pairs cabled ({} cables): full mesh", s.hosts,
                             s.pairs, s.pairs, s.cables);
  } else {
    text = fmt::format("{} hosts, {} of {} pairs cabled", s.hosts, s.pairs_cabled, s.pairs);
  }
  if (s.hosts >= 2 && !s.full_mesh) {
    const Undirect u = undirect_pairs(g);
    const char* sep = incomplete ? "; " : ": ";
    if (u.missing.count > 0) {
      text += fmt::format("{}{} missing", sep, shortened(u.missing));
      sep = "; ";
    }
    if (u.hub.count > 0) {
      text += fmt::format("{}{} only through a hub or dock", sep, shortened(u.hub));
    }
  }
  if (s.multi_rail_pairs > 0) {
    int most = 0;
    for (std::size_t a = 0; a < g.size(); ++a) {
      for (std::size_t b = a + 1; b < g.size(); ++b) most = std::max(most, g.multiplicity(a, b));
    }
    text += "; " + util::plural(static_cast<std::size_t>(s.multi_rail_pairs),
                          most == 2 ? "doubled pair" : "multi-rail pair",
                          most == 2 ? "doubled pairs" : "multi-rail pairs");
  }
  if (s.full_mesh || (s.hosts == 1 && !incomplete)) {
    std::size_t without = 0;
    for (const auto& h : g.hosts()) {
      without += h.facts->rdma.state != discovery::RdmaState::kEnabled ? 1 : 0;
    }
    if (s.rdma_ready) {
      text += ", RDMA ready";
    } else if (s.fail > 0) {
      text += fmt::format(", not ready: {} failed",
                          util::plural(static_cast<std::size_t>(s.fail), "check", "checks"));
    } else if (without > 0) {
      text += fmt::format(", no RDMA on {} of {} (TCP fallback)", without,
                          util::plural(g.size(), "host", "hosts"));
    }
  } else {
    const int others = other_fails(g, findings);
    if (others > 0) {
      text += fmt::format("; {} other {} failed", others, others == 1 ? "check" : "checks");
    }
  }
  if (s.unreachable + s.bad_destination + s.probe_failed > 0) {
    std::vector<std::string> names;
    for (const auto& p : g.state().problems) names.push_back(p.host);
    text += fmt::format("; {} not probed: {}", util::plural(names.size(), "host", "hosts"),
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
  r.findings = run_checks(g, CheckOptions{opts.expect_hosts, opts.fix});
  attach_plan(r.findings, r.plan);
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity < b.severity; });

  Summary& s = r.summary;
  const std::size_t n = g.size();
  s.hosts = static_cast<int>(n);
  for (const auto& p : state.problems) {
    ++(p.unreachable() ? s.unreachable : p.bad_destination() ? s.bad_destination : s.probe_failed);
  }
  // The cluster: the probed hosts, those that could not be probed, and --expect-hosts.
  std::size_t named = n;
  for (std::size_t i = 0; i < state.problems.size(); ++i) {
    const auto& p = state.problems[i];
    bool seen = g.host_index(p.host).has_value();
    for (std::size_t j = 0; j < i && !seen; ++j) seen = state.problems[j].host == p.host;
    named += seen ? 0 : 1;
  }
  const std::size_t cluster =
      std::max(named, static_cast<std::size_t>(std::max(0, opts.expect_hosts.value_or(0))));
  s.expected_hosts = static_cast<int>(cluster);
  s.pairs = static_cast<int>(cluster * (cluster - (cluster > 0 ? 1 : 0)) / 2);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a + 1; b < n; ++b) {
      const int m = g.multiplicity(a, b);
      s.pairs_cabled += direct_cables(g, a, b) > 0 ? 1 : 0;
      s.multi_rail_pairs += m > 1 ? 1 : 0;
      s.cables += m;
    }
  }
  for (std::size_t i = 0; i < g.edges().size(); ++i) s.hub_cables += through_hub(g, i) ? 1 : 0;
  for (const auto& f : r.findings) {
    ++(f.severity == Severity::kFail ? s.fail : f.severity == Severity::kWarn ? s.warn : s.info);
  }
  s.full_mesh = n >= 2 && cluster == n && s.pairs_cabled == s.pairs;
  s.rdma_ready = s.full_mesh && s.fail == 0 &&
                 s.unreachable + s.bad_destination + s.probe_failed == 0 &&
                 std::all_of(state.hosts.begin(), state.hosts.end(), [](const auto& h) {
                   return h.rdma.state == discovery::RdmaState::kEnabled;
                 });
  s.text = summary_text(g, s, r.findings,
                        opts.expect_hosts && static_cast<std::size_t>(std::max(
                                                 0, *opts.expect_hosts)) == cluster);
  return r;
}

util::ExitCode exit_code(const VerifyReport& r) {
  if (r.summary.unreachable > 0) return util::ExitCode::kUnreachable;
  if (r.summary.bad_destination > 0) return util::ExitCode::kUsage;
  if (r.summary.fail > 0) return util::ExitCode::kCheckFailed;
  return util::ExitCode::kOk;
}

}  // namespace cc::topology
