// `clusterctl verify-mesh`: is the full mesh there, RDMA-ready, and if not, what to plug where.
// The checks and renderings are topology/ (report.h); this file only reads the options, gets
// the cluster state (cluster_source.h) and prints.
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/cluster_source.h"
#include "cli/context.h"
#include "cli/options.h"
#include "topology/report.h"
#include "util/interrupt.h"

namespace cc::cli {
namespace {

struct VerifyMeshOptions {
  ClusterSource source;
  bool dot = false;
  int expect_hosts = 0;  // 0: not given
};

util::ExitCode run_verify_mesh(const Context& ctx, const VerifyMeshOptions& o) {
  if (o.dot && ctx.global.json) {
    fmt::print(stderr, "clusterctl verify-mesh: --dot and --json both ask for stdout: give one\n");
    return util::ExitCode::kUsage;
  }
  auto state = obtain_cluster_state(ctx, o.source);
  if (!state) return report_error(ctx, "verify-mesh", state.error());
  topology::VerifyOptions opts;
  if (o.expect_hosts > 0) opts.expect_hosts = o.expect_hosts;
  // The fixes' commands name the cluster as the operator did (the state file, its lab), so
  // each runs as printed.
  if (auto g = options_for_state(ctx.global, *state, o.source.state_file); g) {
    opts.fix = fix_command(*g, o.source, *state);
  }
  const topology::VerifyReport report = topology::verify_mesh(*state, opts);
  // A report of the file, not of the hosts: said under the verdict's headline, on stdout with
  // the text report (on stderr, first, when stdout is JSON or DOT).
  const std::string from = state_file_note(o.source, *state, opts.fix);
  if (util::interrupted()) {  // the report is partial: say so, print nothing of it
    return report_interrupted("verify-mesh", "nothing shown");
  }
  if (!from.empty() && (ctx.style.json || o.dot)) fmt::print(stderr, "{}\n", from);
  if (ctx.style.json) {
    fmt::print("{}", topology::render_json(report));
  } else if (o.dot) {
    fmt::print("{}", topology::render_dot(report));
  } else {
    const std::string text = topology::render_text(report, ctx.style);
    const size_t eol = text.find('\n');  // the headline, then where it comes from
    if (from.empty() || eol == std::string::npos) {
      fmt::print("{}", text);
    } else {
      fmt::print("{}{}\n{}", text.substr(0, eol + 1), from, text.substr(eol + 1));
    }
  }
  return topology::exit_code(report);
}

}  // namespace

void add_verify_mesh_command(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<VerifyMeshOptions>();
  CLI::App* sub = app.add_subcommand(
      "verify-mesh",
      "Check that every pair of hosts has its direct cable and RDMA works on it; say what to "
      "plug where");
  add_cluster_source_options(sub, opts->source, /*positional=*/true);
  sub->add_flag("--dot", opts->dot,
                "Print the cabling as a Graphviz graph (missing pairs as dashed red edges)");
  sub->add_option("--expect-hosts", opts->expect_hosts,
                  "Fail unless the cluster has exactly N hosts")
      ->check(whole_number(1, 4096))
      ->type_name("N");
  sub->footer(
      "Examples:\n"
      "  clusterctl verify-mesh cluster.json\n"
      "  clusterctl --lab default verify-mesh --hosts all --expect-hosts 4\n"
      "  clusterctl verify-mesh cluster.json --dot | dot -Tsvg > mesh.svg\n"
      "Exit status: 0 when the mesh is complete and every check passed (warnings allowed), 1\n"
      "when a check failed, 3 when a host could not be reached. --json prints the report as\n"
      "JSON (schema clusterctl.verify-mesh/1, see topology/report.h).");
  sub->callback(
      [&ctx, opts] { ctx.action = [&ctx, opts] { return run_verify_mesh(ctx, *opts); }; });
}

}  // namespace cc::cli
