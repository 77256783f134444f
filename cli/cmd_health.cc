// `clusterctl health`: is this cluster ready for jobs? Host, cable and cluster-wide checks at a
// chosen level (healthcheck/health.h), printed as a table or JSON, optionally written as JUnit
// XML for CI, compared with and saved as a baseline. This file reads the options, gets the
// expected cluster state (cluster_source.h) and the executors, and prints.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "cli/cmd_health.h"
#include "cli/cluster_source.h"
#include "cli/context.h"
#include "cli/hosts.h"
#include "cli/options.h"
#include "discovery/discover.h"
#include "discovery/fix_command.h"
#include "healthcheck/baseline.h"
#include "healthcheck/health.h"
#include "healthcheck/quick_checks.h"
#include "healthcheck/render.h"
#include "provision/network_plan.h"
#include "remote/quote.h"
#include "util/atomic_file.h"
#include "util/clock.h"
#include "util/interrupt.h"
#include "util/self_exe.h"
#include "util/state_dir.h"

namespace cc::cli {
namespace {

namespace fs = std::filesystem;
using util::ExitCode;

struct HealthCliOptions {
  ClusterSource source;
  bool quick = false;
  bool full = false;
  int soak_s = 0;
  std::string junit;
  std::string thresholds;
  std::string baseline;
  bool save_baseline = false;
  bool force = false;  // --force: --junit / --baseline may replace a file of another kind
  std::string remote_clusterctl;  // empty: this binary on a lab (shared root), else "clusterctl"
  std::string perf;
  double perf_timeout_s = 60;
  // The command that was run, which every message of this one names: "health", or "launch"
  // for a job's `preflight:` (run_health_check).
  std::string command = "health";
};

// This program's own directory (util/self_exe.h); empty when the system cannot say.
fs::path own_dir() { return util::executable_path().parent_path(); }

// clustercomm-perf: --perf, else beside this binary (an install) or in the build tree's bench/,
// else the name alone (the hosts' PATH).
std::string perf_program(const HealthCliOptions& o) {
  if (!o.perf.empty()) return o.perf;
  const fs::path dir = own_dir();
  if (!dir.empty()) {
    for (const fs::path& p : {dir / "clustercomm-perf", dir / ".." / "bench" / "clustercomm-perf"}) {
      std::error_code ec;
      if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p, ec).string();
    }
  }
  return "clustercomm-perf";
}

std::string default_baseline(const HealthCliOptions& o) {
  if (!o.baseline.empty()) return o.baseline;
  if (!o.source.state_file.empty()) {
    return (fs::path(o.source.state_file).parent_path() / "health-baseline.json").string();
  }
  return (util::state_dir() / "health-baseline.json").string();
}

ExitCode run_health(const Context& ctx, const HealthCliOptions& o) {
  // The report's elapsed time is the command's: a live discovery's wait included.
  const auto started = std::chrono::steady_clock::now();
  // Outputs the operator named are checked before any check runs (a --full --soak run must
  // not end in "is a directory").
  // None of them may be a file the run reads (the cluster state, the thresholds; the baseline
  // for --junit: --save-baseline replaces the baseline it compared with, by design).
  std::vector<fs::path> inputs = input_files(ctx.global, o.source);
  if (!o.thresholds.empty()) inputs.emplace_back(o.thresholds);
  for (const std::string* out : {&o.junit, o.save_baseline ? &o.baseline : nullptr}) {
    if (out == nullptr || out->empty()) continue;
    std::vector<fs::path> others = inputs;
    if (out == &o.junit) others.emplace_back(default_baseline(o));
    // Only a report (a baseline) of its own is replaced without --force: `--junit job.yaml`
    // keeps the job file.
    if (auto st = util::check_output_path(
            *out, others,
            out == &o.junit ? healthcheck::junit_output() : healthcheck::baseline_output(),
            o.force);
        !st)
      return report_error(ctx, o.command, st.error());
  }
  if (o.quick && (o.full || o.soak_s > 0)) {
    return report_error(
        ctx, "health",
        {ExitCode::kUsage, "--quick and --full/--soak exclude each other: give one"});
  }
  if (o.save_baseline && o.quick) {
    return report_error(ctx, o.command,
                        {ExitCode::kUsage,
                         "--save-baseline needs measurements: run without --quick (per-cable "
                         "figures) or with --full (also the all_reduce)"});
  }
  healthcheck::HealthOptions h;
  h.started = started;
  h.level = o.quick ? healthcheck::Level::kQuick
            : (o.full || o.soak_s > 0) ? healthcheck::Level::kFull
                                       : healthcheck::Level::kDefault;
  h.soak_s = o.soak_s;
  h.timeout = std::chrono::milliseconds(static_cast<long long>(o.source.timeout_s * 1000));
  h.remote_clusterctl = o.remote_clusterctl;
  h.local_version = CLUSTERCTL_VERSION;
  h.perf.program = perf_program(o);
  h.perf.timeout = std::chrono::milliseconds(static_cast<long long>(o.perf_timeout_s * 1000));
  if (!o.thresholds.empty()) {
    auto t = healthcheck::load_thresholds(o.thresholds);
    if (!t) return report_error(ctx, o.command, t.error());
    h.thresholds = *t;
  }
  const std::string baseline_path = default_baseline(o);
  if (!o.save_baseline && !o.quick) {
    std::error_code ec;
    if (fs::exists(baseline_path, ec)) {
      // The run that writes a baseline there, runnable as printed: this cluster, its lab.
      discovery::FixCommand save;
      save.global = global_words(ctx.global);
      save.state_file = o.source.state_file;
      save.hosts = o.source.hosts;
      const std::string save_command = save.command(
          "health", o.baseline.empty()
                        ? "--save-baseline"
                        : "--save-baseline --baseline " + remote::shell_quote_arg(o.baseline));
      auto b = healthcheck::load_baseline(baseline_path, save_command);
      if (!b) return report_error(ctx, o.command, b.error());
      h.baseline = *b;
    } else if (!o.baseline.empty()) {
      return report_error(
          ctx, "health",
          {ExitCode::kUsage,
           fmt::format("--baseline {}: no such file (make it with --save-baseline)", o.baseline)});
    }
  }

  // The expected cluster: the state file (with its cables and network plan), or a live
  // discovery when none is given.
  auto expected = obtain_cluster_state(ctx, o.source);
  if (!expected) return report_error(ctx, o.command, expected.error());
  // Discovered now (no state file): a host it could not reach is not waited on again, and
  // Ctrl-C during it is reported as such.
  h.discovered_now = o.source.state_file.empty();
  if (expected->network.empty()) {
    // No saved plan: the one `network apply` computes for this cabling (deterministic, default
    // base), as `network apply` without a cluster file does.
    if (auto plan = provision::plan_network(*expected, {}); plan) expected->network = *plan;
  }
  const auto names = healthcheck::expected_hosts(*expected);
  if (names.empty()) {
    const std::string global = global_words(ctx.global);
    return report_error(ctx, o.command,
                        {ExitCode::kUsage,
                         fmt::format("no hosts to check: give a cluster state file "
                                     "(`clusterctl{}{} discover -o cluster.json`) or --hosts",
                                     global.empty() ? "" : " ", global)});
  }
  // The state's lab when it records one (options_for_state), else --lab.
  auto resolved = options_for_state(ctx.global, *expected, o.source.state_file);
  if (!resolved) return report_error(ctx, o.command, resolved.error());
  GlobalOptions g = std::move(*resolved);
  if (h.remote_clusterctl.empty()) {
    // A lab's hosts share this machine's root, so they run this very binary.
    const fs::path self = own_dir() / "clusterctl";
    std::error_code ec;
    h.remote_clusterctl =
        !g.lab.empty() && fs::is_regular_file(self, ec) ? self.string() : "clusterctl";
  }
  h.fix = fix_command(g, o.source, *expected);
  if (o.thresholds.empty() && !g.lab.empty()) {
    h.thresholds = healthcheck::lab_thresholds();  // veth cables, not Thunderbolt 5
  }
  if (!o.source.from_dir.empty()) {
    g.replay = o.source.from_dir;
    h.mode = discovery::ProbeMode::kEach;
  }
  if (!g.replay.empty()) h.mode = discovery::ProbeMode::kEach;
  auto exs = make_executors(g, fmt::format("{}", fmt::join(names, ",")));
  if (!exs) return report_error(ctx, o.command, exs.error());
  std::vector<remote::Executor*> raw;
  for (const auto& e : *exs) raw.push_back(e.get());

  const healthcheck::Report report = healthcheck::run_health(*expected, raw, h, ctx.style);
  fmt::print("{}", ctx.style.json ? healthcheck::render_json(report)
                                  : healthcheck::render_text(report, ctx.style));
  ExitCode rc = healthcheck::exit_code(report);
  if (!o.junit.empty()) {
    if (auto st = healthcheck::write_junit(report, o.junit); !st) {
      return util::worst(rc, report_error(ctx, o.command, st.error()));
    }
  }
  if (o.save_baseline) {
    if (report.interrupted) {
      fmt::print(stderr, "clusterctl {}: baseline not saved: the run was {}\n", o.command,
                 util::interruption());
      return rc;
    }
    if (rc != ExitCode::kOk) {
      fmt::print(stderr,
                 "clusterctl {}: baseline not saved: {} check(s) failed; fix them "
                 "and run --save-baseline again\n",
                 o.command, report.count(healthcheck::Status::kFail));
      return util::worst(rc, ExitCode::kCheckFailed);
    }
    auto b =
        healthcheck::baseline_from(report, util::utc_now_iso(), h.thresholds.all_reduce_size_bytes);
    if (auto st = healthcheck::save_baseline(b, baseline_path); !st) {
      return report_error(ctx, o.command, st.error());
    }
    if (!ctx.style.json) {
      fmt::print("baseline saved: {} ({} cables{})\n", baseline_path, b.cables.size(),
                 b.busbw_gbps ? ", all_reduce busbw" : "");
    }
  }
  return rc;
}

}  // namespace

util::ExitCode run_health_check(const Context& ctx, const ClusterSource& source, bool quick,
                                std::string_view command) {
  HealthCliOptions o;
  o.command = std::string(command);
  o.source = source;
  o.quick = quick;
  return run_health(ctx, o);
}

void add_health_command(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<HealthCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "health", "Is the cluster ready for jobs? Checks per host, per cable and cluster-wide");
  add_cluster_source_options(sub, opts->source, /*positional=*/true);
  sub->add_flag("--quick", opts->quick,
                "Only the checks of one probe per host (seconds): reachability, versions, RDMA, "
                "bridge, sleep, clock, memory, disk, links and addresses");
  sub->add_flag("--full", opts->full,
                "Also an all_reduce over every host with a data check and its busbw");
  sub->add_option("--soak", opts->soak_s, "Repeat the all_reduce for N seconds (implies --full)")
      ->check(whole_number(0, 86400))
      ->type_name("N");
  sub->add_option("--junit", opts->junit,
                  "Also write the results as JUnit XML to FILE (an existing FILE must be a "
                  "JUnit report, or empty, unless --force)")
      ->type_name("FILE");
  sub->add_option("--thresholds", opts->thresholds,
                  "Limits (YAML; templates/health-thresholds.yaml holds the defaults; with "
                  "--lab the lab's own, looser limits apply unless this is given)")
      ->check(existing_path())
      ->type_name("FILE");
  sub->add_option("--baseline", opts->baseline,
                  "Baseline file to compare with or save (default: health-baseline.json beside "
                  "the cluster file, else in $XDG_STATE_HOME/clusterctl)")
      ->type_name("FILE");
  sub->add_flag("--save-baseline", opts->save_baseline,
                "Save this run's figures as the baseline (only when nothing failed)");
  sub->add_flag("--force", opts->force,
                "Let --junit (and --baseline with --save-baseline) replace an existing file "
                "of another kind");
  sub->add_option("--remote-clusterctl", opts->remote_clusterctl,
                  "clusterctl on the hosts, for the version check (default: on their PATH; "
                  "with --lab, this binary)")
      ->type_name("PATH");
  sub->add_option("--perf", opts->perf,
                  "clustercomm-perf on the hosts (default: the one built beside this "
                  "clusterctl, else on their PATH)")
      ->type_name("PATH");
  sub->add_option("--perf-timeout", opts->perf_timeout_s,
                  "Seconds each link test or all_reduce may take")
      ->capture_default_str()
      ->check(decimal_number(1.0, 3600.0));
  sub->footer(
      "Examples:\n"
      "  clusterctl --lab default health --quick cluster.json --junit health.xml\n"
      "  clusterctl --lab default health cluster.json --save-baseline\n"
      "  clusterctl --lab default health cluster.json --full --soak 60\n"
      "Exit status: 0 when every check passed (warnings allowed), 1 when a check failed, 3\n"
      "when a host could not be reached. --json prints the report (schema clusterctl.health/1,\n"
      "see healthcheck/render.h).");
  sub->callback([&ctx, opts] { ctx.action = [&ctx, opts] { return run_health(ctx, *opts); }; });
}

}  // namespace cc::cli
