// `clusterctl discover`: every host's ports and every cable between hosts; `clusterctl collect`:
// the same probes with every raw output kept as a support bundle (replayed by
// `discover --from DIR`).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <CLI/CLI.hpp>

#include "cli/cluster_source.h"
#include "cli/context.h"
#include "discovery/cluster_state.h"
#include "discovery/fix_command.h"
#include "provision/network_plan.h"
#include "remote/quote.h"
#include "topology/rdma_readiness.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"
#include "util/json_text.h"

namespace cc::cli {
namespace {

using discovery::Cable;
using discovery::ClusterState;

struct DiscoverOptions {
  ClusterSource source;
  std::string output;  // -o FILE (discover) / -o DIR (collect)
  bool force = false;  // --force: -o may replace a file that is no cluster state
};

// Rows of cells printed as left-aligned columns two spaces apart.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    width.resize(std::max(width.size(), r.size()));
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += i + 1 < r.size() ? fmt::format("{:<{}}  ", r[i], width[i]) : r[i];
    }
    out += line + "\n";
  }
  return out;
}

std::string seen_by(const Cable& c) {
  std::string s;
  for (auto src : c.sources) s += (s.empty() ? "" : "+") + std::string(to_string(src));
  if (!(c.seen_from_a && c.seen_from_b)) {
    s += fmt::format(" (from {} only)", c.seen_from_a ? c.a.host : c.b.host);
  }
  return s;
}

std::string report(const ClusterState& state, const util::OutputStyle& style) {
  std::vector<std::vector<std::string>> hosts{{"HOST", "OS", "MODEL", "ADDRESS", "PORTS", "RDMA"}};
  for (const auto& h : state.hosts) {
    size_t cabled = 0;
    for (const auto& p : h.ports) {
      auto end = discovery::end_of(h, p);
      cabled += std::any_of(state.cables.begin(), state.cables.end(),
                            [&](const Cable& c) { return c.a == end || c.b == end; });
    }
    hosts.push_back({h.host, fmt::format("{} {}", h.os.name, h.os.version),
                     h.model.empty() ? "-" : h.model,
                     h.management_address.empty() ? "-" : h.management_address,
                     fmt::format("{}/{} cabled", cabled, h.ports.size()),
                     // the word `rdma status` prints for this host, from the same function
                     topology::to_string(topology::host_rdma_readiness(h))});
  }
  std::vector<std::vector<std::string>> cables{{"CABLE", "", "", "SPEED", "SEEN BY"}};
  for (const auto& c : state.cables) {
    cables.push_back({discovery::end_label(c.a), "<->", discovery::end_label(c.b),
                      c.link_speed_gbps > 0 ? fmt::format("{} Gb/s", c.link_speed_gbps) : "?",
                      seen_by(c)});
  }
  std::string out = table(hosts) + "\n";
  out += state.cables.empty() ? "no cables found\n" : table(cables);
  out += fmt::format("\n{} host{}, {} cable{}", state.hosts.size(),
                     state.hosts.size() == 1 ? "" : "s", state.cables.size(),
                     state.cables.size() == 1 ? "" : "s");
  if (!state.problems.empty()) {
    out += fmt::format(", {} host{} not probed:\n", state.problems.size(),
                       state.problems.size() == 1 ? "" : "s");
    for (const auto& p : state.problems) out += "  " + util::red(style, p.message) + "\n";
  } else {
    out += "\n";
  }
  return out;
}

// The worst of the hosts' problems: 3 for a host not reached, 2 for a destination refused
// before any connection (the operator's input: README, "Exit codes"), 1 for a failed probe.
util::ExitCode exit_code_of(const ClusterState& state) {
  util::ExitCode rc = util::ExitCode::kOk;
  for (const auto& p : state.problems) rc = util::worst(rc, p.code());
  return rc;
}

// The network plan of the state `discover -o FILE` writes over, kept for every cable `state`
// still sees (provision::keep_plan), so a new discovery never silently drops the addresses
// `network plan` gave (a plan is also what `hostfile` and `launch` read). Returns the notes
// for stderr: what was kept, each entry dropped with why, and how to plan again.
std::vector<std::string> keep_plan_of(ClusterState& state,
                                      const std::vector<discovery::LinkAddress>& old_plan,
                                      const Context& ctx, const DiscoverOptions& o) {
  auto kept = provision::keep_plan(old_plan, state);
  state.network = kept.kept;
  const auto unplanned = provision::unplanned_cables(state.cables, state.network);
  if (kept.dropped.empty() && unplanned.empty()) return {};
  ClusterSource written = o.source;
  written.state_file = o.output;  // the fixes name the file: discover -o FILE, network plan FILE
  const discovery::FixCommand fix = fix_command(ctx.global, written, state);
  std::vector<std::string> notes;
  notes.push_back(fmt::format("discover: kept {} of the {} cables of the network plan in {}",
                              kept.kept.size(), old_plan.size(), o.output));
  for (const auto& d : kept.dropped) {
    notes.push_back(util::red(
        ctx.style, fmt::format("  dropped {} - {} ({}): {}", discovery::end_label(d.link.a),
                               discovery::end_label(d.link.b), d.link.subnet, d.reason)));
  }
  for (const auto& c : unplanned) {
    notes.push_back(fmt::format("  not planned: {} - {} (a cable the plan does not have)",
                                discovery::end_label(c.a), discovery::end_label(c.b)));
  }
  notes.push_back(fmt::format(
      "  a dropped cable that is only down keeps no addresses in {}: when it is back, run "
      "`{}` and then `{}` (the plan is deterministic: the same cabling gets the same subnets)",
      o.output, fix.rediscover(), fix.command("network plan")));
  return notes;
}

util::ExitCode run_discover(const Context& ctx, const DiscoverOptions& o) {
  if (!o.output.empty()) {  // before probing every host: a typo in -o is said at once
    // Only a cluster state is replaced without --force: a mistyped -o (the job file, the
    // inventory) is said before any host is probed, and kept.
    if (auto st = util::check_output_path(o.output, input_files(ctx.global, o.source),
                                          discovery::cluster_state_output(), o.force);
        !st) {
      return report_error(ctx, "discover", st.error());
    }
  }
  // A state written over keeps its network plan for the cables still seen (keep_plan_of).
  std::vector<discovery::LinkAddress> old_plan;
  if (!o.output.empty()) {
    if (auto old = discovery::load_cluster_state(o.output)) old_plan = std::move(old->network);
  }
  auto state = obtain_cluster_state(ctx, o.source);
  if (!state) return report_error(ctx, "discover", state.error());
  if (util::interrupted()) {
    // The hosts whose probe Ctrl-C or SIGTERM ended did not fail, and a partial state must not
    // replace the file (it would drop their cables and plan): say so, write and print nothing.
    return report_interrupted(
        "discover", o.output.empty() ? "nothing shown" : "nothing written to " + o.output);
  }
  std::vector<std::string> plan_notes;
  if (!old_plan.empty()) plan_notes = keep_plan_of(*state, old_plan, ctx, o);
  if (!o.output.empty()) {
    if (auto st = discovery::save_cluster_state(*state, o.output); !st) {
      return report_error(ctx, "discover", st.error());
    }
  }
  for (const auto& n : plan_notes) fmt::print(stderr, "{}\n", n);
  if (ctx.style.json) {
    fmt::print("{}\n", util::json_text(nlohmann::json(*state), 2));
  } else {
    fmt::print("{}", report(*state, ctx.style));
    if (!o.output.empty()) fmt::print("cluster state written to {}\n", o.output);
  }
  return exit_code_of(*state);
}

util::ExitCode run_collect(const Context& ctx, DiscoverOptions o) {
  namespace fs = std::filesystem;
  // A new or empty directory whose parent exists: collect never creates the directories
  // above the bundle (README, "Files").
  if (auto st = util::check_output_directory(o.output); !st) {
    return report_error(ctx, "collect", st.error());
  }
  o.source.collect_dir = o.output;
  auto state = obtain_cluster_state(ctx, o.source);
  if (!state) return report_error(ctx, "collect", state.error());
  if (util::interrupted()) {  // as discover: no summary of a partial probe
    // Hosts' directories are made as their answers come: with none, there is no bundle to
    // call incomplete (and the directory, if any, is empty: collect -o can use it again).
    std::error_code ec;
    const bool some = fs::exists(o.output, ec) && !fs::is_empty(o.output, ec);
    return report_interrupted("collect",
                              some ? fmt::format("the bundle in {} is incomplete", o.output)
                                   : fmt::format("nothing was collected into {}", o.output));
  }
  std::string summary = fs::path(o.output) / "cluster.json";
  if (auto st = discovery::save_cluster_state(*state, summary); !st) {
    return report_error(ctx, "collect", st.error());
  }
  if (ctx.style.json) {
    fmt::print("{}\n", util::json_text(nlohmann::json(*state), 2));
  } else {
    fmt::print("{}", report(*state, ctx.style));
    fmt::print("bundle written to {} (replay it with `clusterctl discover --from {}`)\n",
               o.output, remote::shell_quote_arg(o.output));
  }
  return exit_code_of(*state);
}

}  // namespace

void add_discover_command(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<DiscoverOptions>();
  CLI::App* discover = app.add_subcommand(
      "discover", "Find every host's ports and every cable between the hosts");
  add_cluster_source_options(discover, opts->source, /*positional=*/false);
  discover->add_option("-o,--output", opts->output,
                       "Write the cluster state (JSON) to FILE, atomically: the input of "
                       "verify-mesh, network, hostfile, launch and health. An existing FILE "
                       "must be a cluster state (or empty), unless --force");
  discover->add_flag("--force", opts->force,
                     "Let -o replace an existing file that is not a cluster state");
  discover->callback([&ctx, opts] { ctx.action = [&ctx, opts] { return run_discover(ctx, *opts); }; });

  auto copts = std::make_shared<DiscoverOptions>();
  CLI::App* collect = app.add_subcommand(
      "collect", "Save every raw probe output per host: a support bundle for `discover --from`");
  add_cluster_source_options(collect, copts->source, /*positional=*/false);
  collect->add_option("-o,--output", copts->output, "Bundle directory (new or empty)")
      ->required();
  collect->callback([&ctx, copts] {
    ctx.action = [&ctx, copts] { return run_collect(ctx, *copts); };
  });
}

}  // namespace cc::cli
