#include "discovery/discover.h"

#include <optional>
#include <vector>

#include <fmt/format.h>

#include "discovery/cables.h"
#include "remote/fan_out.h"
#include "util/clock.h"

namespace cc::discovery {
namespace {

// What one host's thread produced.
struct HostResult {
  std::optional<HostFacts> facts;
  std::vector<NeighbourAnswers> answers;
  std::optional<HostProblem> problem;
};


HostResult probe_host(const DiscoverTarget& t, const DiscoverOptions& opts) {
  remote::Executor& ex = *t.executor;
  const std::string& host = ex.host();
  HostResult r;
  auto save = [&](const ProbeOutputs& outputs) -> util::Status {
    if (!opts.collect_dir) return {};
    return save_probe_outputs(*opts.collect_dir / host, outputs);
  };
  auto outputs = run_host_probe(ex, opts.mode, opts.timeout);
  if (!outputs) {
    r.problem = host_problem(host, outputs.error());
    return r;
  }
  if (auto st = save(*outputs); !st) {
    r.problem = host_problem(host, st.error());
    return r;
  }
  auto facts = facts_from_probe(host, *outputs, t.fallback_address);
  if (!facts) {
    r.problem = host_problem(host, facts.error());
    return r;
  }
  if (opts.neighbours) {
    auto pings = run_commands(ex, neighbour_commands(*facts), opts.mode, opts.timeout);
    if (!pings) {
      r.problem = host_problem(host, pings.error());
      return r;
    }
    if (auto st = save(*pings); !st) {
      r.problem = host_problem(host, st.error());
      return r;
    }
    auto answers = neighbour_answers(*facts, *pings);
    if (!answers) {
      r.problem = host_problem(host, answers.error());
      return r;
    }
    r.answers = std::move(*answers);
  }
  r.facts = std::move(*facts);
  return r;
}

}  // namespace

ClusterState discover(std::span<const DiscoverTarget> targets, const DiscoverOptions& opts,
                      const util::OutputStyle& style) {
  std::vector<remote::Executor*> executors;
  for (const auto& t : targets) executors.push_back(t.executor);
  std::vector<HostResult> results(targets.size());
  remote::for_each_host(
      executors, "discover", [&](size_t i) { results[i] = probe_host(targets[i], opts); }, style);

  ClusterState state;
  state.created_at = util::utc_now_iso();
  std::vector<std::vector<NeighbourAnswers>> answers;
  for (auto& r : results) {
    if (r.problem) state.problems.push_back(std::move(*r.problem));
    if (!r.facts) continue;
    state.hosts.push_back(std::move(*r.facts));
    answers.push_back(std::move(r.answers));
  }
  state.cables = merge_cables(state.hosts, answers);
  return state;
}

}  // namespace cc::discovery
