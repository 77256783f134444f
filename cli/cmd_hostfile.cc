// `clusterctl hostfile`: the hostfile for our runtime, MLX or MPI, from a cluster state. The
// formats are provision/hostfile.h; this file reads the options, gets the cluster state
// (cluster_source.h) and writes the result to stdout or atomically to -o FILE.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "cli/cluster_source.h"
#include "cli/context.h"
#include "cli/options.h"
#include "launch/rank_env.h"
#include "provision/hostfile.h"
#include "provision/mlx_hostfile.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"
#include "util/text.h"

namespace cc::cli {
namespace {

struct HostfileCommandOptions {
  ClusterSource source;
  std::string format;
  std::string output;  // -o FILE; "" = stdout
  std::vector<std::string> envs;
  int slots = 1;
  bool slots_given = false;
  bool force = false;  // --force: -o may replace a file that is no hostfile
};

// -o FILE over an MLX hostfile in another rank order (the cabling changed, or a cable is
// down): said on stderr, with the cables the old order needs that are down, since a job
// launched from the new file runs its ranks in another order. Nothing when FILE is no MLX
// hostfile (or none yet).
void warn_rank_order(const std::string& path, const std::string& text,
                     const discovery::ClusterState& state) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return;
  auto old = provision::read_mlx_hostfile(path);
  auto now = provision::parse_mlx_hostfile(text, path);
  if (!old || !now) return;
  std::vector<std::string> before, after;
  for (const auto& h : old->hosts) before.push_back(h.ssh);
  for (const auto& h : now->hosts) after.push_back(h.ssh);
  if (before == after) return;
  fmt::print(stderr, "clusterctl hostfile: warning: rank order changed: {} was {}, now {}\n",
             path, fmt::join(before, ","), fmt::join(after, ","));
  if (old->backend.empty()) old->backend = now->backend;
  const auto down = provision::down_cables(*old, state);
  if (down.empty()) return;
  fmt::print(stderr,
             "clusterctl hostfile: the old order needs cables that are down now:\n  {}\n"
             "after the fix, run this command again to get an order over every cable\n",
             fmt::join(down, "\n  "));
}

util::ExitCode run_hostfile(const Context& ctx, const HostfileCommandOptions& o) {
  provision::HostfileOptions opts;
  opts.format = *provision::hostfile_format(o.format);  // checked by one_of (cli/options.h)
  opts.envs = o.envs;
  opts.slots = o.slots;
  const bool mpi = opts.format == provision::HostfileFormat::kMpi ||
                   opts.format == provision::HostfileFormat::kMpich;
  if (o.slots_given && !mpi) {
    return report_error(
        ctx, "hostfile",
        util::error(util::ExitCode::kUsage,
                    fmt::format("--slots is for the mpi and mpich formats, not {}", o.format)));
  }
  std::string env_problems;  // every bad --env, one line each, not only the first
  std::size_t env_bytes = 0;
  for (std::size_t i = 0; i < o.envs.size(); ++i) {
    const std::string& e = o.envs[i];
    const std::string shown = e.size() > 200 ? util::excerpt(e, 200) : e;
    if (auto why = launch::rank_env_entry_problem(e, "--env")) {
      env_problems += fmt::format("{}--env {}: {}", env_problems.empty() ? "" : "\n", shown, *why);
    } else if (env_bytes += e.size() + 1; auto big = provision::env_size_problem(env_bytes, i + 1)) {
      env_problems += fmt::format("{}--env {}: {}", env_problems.empty() ? "" : "\n", shown, *big);
      break;
    }
  }
  if (!env_problems.empty()) {
    return report_error(ctx, "hostfile",
                        util::error(util::ExitCode::kUsage, std::move(env_problems)));
  }
  // A CLUSTERCOMM_* name libclustercomm does not read is set on every rank and changes nothing:
  // said, and written all the same (as a job's env: is run).
  for (const auto& w : launch::unread_clustercomm_warnings(o.envs, "warning: --env")) {
    fmt::print(stderr, "clusterctl hostfile: {}\n", w);
  }
  if (!o.output.empty()) {
    // Every input, --hostfile too: writing over the hostfile read would lose it when the new
    // one is wrong (another format, another rank order). Only a hostfile (of any format) is
    // replaced without --force: `-o cluster.json` for `-o hosts.json` would replace the
    // cluster state.
    if (auto st = util::check_output_path(o.output, input_files(ctx.global, o.source),
                                          provision::hostfile_output(), o.force);
        !st) {
      return report_error(ctx, "hostfile", st.error());
    }
  }
  auto state = obtain_cluster_state(ctx, o.source);
  if (!state) return report_error(ctx, "hostfile", state.error());
  // Each host a signal cut off would say "interrupted while connecting" (render_hostfile's
  // error per host): one line, as discover says it.
  if (util::interrupted()) {
    return report_interrupted(
        "hostfile", o.output.empty() ? "nothing written" : "nothing written to " + o.output);
  }
  if (auto g = options_for_state(ctx.global, *state, o.source.state_file); g) {
    opts.fix = fix_command(*g, o.source, *state);
  }
  // Written from the file, not the hosts: said on stderr (stdout may be the hostfile).
  if (const std::string from = state_file_note(o.source, *state, opts.fix); !from.empty()) {
    fmt::print(stderr, "clusterctl hostfile: {}\n", from);
  }
  std::vector<std::string> notes;
  auto text = provision::render_hostfile(*state, opts, &notes);
  if (!text) return report_error(ctx, "hostfile", text.error());
  for (const auto& n : notes) fmt::print(stderr, "clusterctl hostfile: note: {}\n", n);
  // On a lab (or with an inventory's ssh_config) the names resolve only through its config:
  // how mpirun or mlx.launch is told, after the file, on stderr.
  const std::string hint =
      provision::hostfile_ssh_hint(opts.format, opts.fix, o.output, ::geteuid() == 0);
  if (o.output.empty()) {
    fmt::print("{}", *text);
    util::flush_output(stdout);
    if (!hint.empty()) fmt::print(stderr, "clusterctl hostfile: {}\n", hint);
    return util::ExitCode::kOk;
  }
  const bool mlx = opts.format == provision::HostfileFormat::kMlxJaccl ||
                   opts.format == provision::HostfileFormat::kMlxJacclRing ||
                   opts.format == provision::HostfileFormat::kMlxRing;
  if (mlx) warn_rank_order(o.output, *text, *state);
  if (auto st = util::write_output_file(o.output, *text); !st) {
    return report_error(ctx, "hostfile", st.error());
  }
  fmt::print("{} hostfile for {} hosts written to {}\n", o.format, state->hosts.size(), o.output);
  util::flush_output(stdout);
  if (!hint.empty()) fmt::print(stderr, "clusterctl hostfile: {}\n", hint);
  return util::ExitCode::kOk;
}

}  // namespace

void add_hostfile_command(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<HostfileCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "hostfile", "Write the hostfile for our runtime, MLX (jaccl, jaccl-ring, ring) or MPI");
  add_cluster_source_options(sub, opts->source, /*positional=*/true);
  sub->add_option("--format", opts->format,
                  "clusterctl (our JSON, schema clusterctl.hostfile/1), mlx-jaccl (RDMA mesh), "
                  "mlx-jaccl-ring (RDMA ring), mlx-ring (TCP ring over the cables), mpi (Open "
                  "MPI), mpich")
      ->required()
      ->check(one_of(provision::hostfile_format_names()))
      ->type_name("FORMAT");
  sub->add_option("-o,--output", opts->output,
                  "Write the hostfile to FILE (atomically), not stdout. An existing FILE must "
                  "be a hostfile (or empty), unless --force")
      ->type_name("FILE");
  sub->add_flag("--force", opts->force, "Let -o replace an existing file that is not a hostfile");
  sub->add_option("--env", opts->envs,
                  "NAME=VALUE set on every rank (MLX \"envs\"; clusterctl format); repeatable")
      ->allow_extra_args(false)
      ->type_name("NAME=VALUE");
  sub->add_option("--slots", opts->slots, "Processes per host (mpi, mpich; default 1)")
      ->check(whole_number(1, 4096))
      ->type_name("N");
  sub->footer(
      "Examples:\n"
      "  clusterctl hostfile cluster.json --format mlx-jaccl -o hosts.json\n"
      "  clusterctl --lab default hostfile --format mlx-ring --env MLX_METAL_FAST_SYNCH=1\n"
      "  clusterctl hostfile cluster.json --format mpi --slots 2 > hosts.txt\n"
      "Ranks are the cluster's hosts in order; mlx-jaccl-ring and mlx-ring list them in ring\n"
      "order (the ring search of verify-mesh). Exit status: 0 when written, 1 when the cluster\n"
      "cannot give that format (a missing pair, no RDMA device, no ring, a cable without IPv4),\n"
      "2 for a usage error, 3 when a host could not be reached.");
  sub->callback([&ctx, opts, sub] {
    opts->slots_given = sub->count("--slots") > 0;
    opts->source.format = opts->format;
    ctx.action = [&ctx, opts] { return run_hostfile(ctx, *opts); };
  });
}

}  // namespace cc::cli
