// `clusterctl rdma status | enable`: RDMA readiness per host and cabled port, and the guided walk
// through macOS Recovery that enables it (provision/rdma_status.h, provision/rdma_enable.h),
// with the Macs' cluster hygiene settings and, on Linux hosts, Soft-RoCE.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/cluster_source.h"
#include "cli/context.h"
#include "cli/hosts.h"
#include "cli/options.h"
#include "provision/mac_hygiene.h"
#include "provision/rdma_enable.h"
#include "provision/rdma_status.h"
#include "provision/soft_roce.h"
#include "remote/quote.h"
#include "topology/graph.h"
#include "util/interrupt.h"
#include "util/json_text.h"

namespace cc::cli {
namespace {

using discovery::ClusterState;
using std::chrono::milliseconds;
using util::ExitCode;

struct StatusOptions {
  ClusterSource source;
};

struct EnableOptions {
  ClusterSource source;
  bool check = false;
  bool soft_roce = false;
  std::string state_file;
  double wait_timeout_s = 1200;
  double poll_interval_s = 2;
};

milliseconds to_ms(double seconds) {
  return milliseconds(std::llround(seconds * 1000.0));
}

ExitCode run_status(const Context& ctx, const StatusOptions& o) {
  auto state = obtain_cluster_state(ctx, o.source);
  if (!state) return report_error(ctx, "rdma status", state.error());
  if (util::interrupted()) return report_interrupted("rdma status", "nothing shown");
  auto g = options_for_state(ctx.global, *state, o.source.state_file);
  if (!g) return report_error(ctx, "rdma status", g.error());
  const provision::RdmaStatus status = provision::rdma_status(*state, fix_command(*g, o.source, *state));
  fmt::print("{}", ctx.style.json ? provision::render_json(status)
                                  : provision::render_text(status, ctx.style));
  return provision::exit_code(status);
}

// The walkthrough's words: lines on stdout; the spinner as a progress line on a TTY, and
// elsewhere (a log) the same text at most once a minute.
class TerminalConsole final : public provision::WalkConsole {
 public:
  explicit TerminalConsole(const util::OutputStyle& style)
      : progress_(style), tty_(style.progress), last_(std::chrono::steady_clock::now()) {}
  void say(std::string_view line) override {
    progress_.clear();
    fmt::print("{}\n", line);
    util::flush_output(stdout);
  }
  void status(std::string_view line) override {
    if (tty_) {
      progress_.update(line);
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::minutes(1)) return;
    last_ = now;
    fmt::print("  {}\n", line.substr(std::min<std::size_t>(2, line.size())));  // no spinner
    util::flush_output(stdout);
  }
  void clear_status() override { progress_.clear(); }

 private:
  util::ProgressLine progress_;
  bool tty_;
  std::chrono::steady_clock::time_point last_;
};

// Every host of the state (probed or not), in order, reached as --lab/--inventory/--from say.
util::Result<std::vector<std::unique_ptr<remote::Executor>>> executors_for(
    const Context& ctx, const ClusterSource& src, const ClusterState& state) {
  std::vector<std::string> names;
  for (const auto& h : state.hosts) names.push_back(h.host);
  for (const auto& p : state.problems) names.push_back(p.host);
  if (names.empty()) return std::vector<std::unique_ptr<remote::Executor>>{};
  // The state's lab when it records one (options_for_state), else --lab.
  auto g = options_for_state(ctx.global, state, src.state_file);
  if (!g) return g.error();
  if (!src.from_dir.empty()) g->replay = src.from_dir;
  return make_executors(*g, fmt::format("{}", fmt::join(names, ",")));
}

remote::Executor* find(const std::vector<std::unique_ptr<remote::Executor>>& exs,
                       const std::string& host) {
  for (const auto& e : exs) {
    if (e->host() == host) return e.get();
  }
  return nullptr;
}

std::string plan_summary(const provision::EnablePlan& plan) {
  std::string out;
  if (!plan.enabled.empty()) {
    out += fmt::format("RDMA enabled already: {}\n", fmt::join(plan.enabled, ", "));
  }
  if (!plan.walk.empty()) {
    out += fmt::format("RDMA to enable from macOS Recovery: {}\n", fmt::join(plan.walk, ", "));
  }
  for (const auto& b : plan.blocked)
    out += fmt::format("Cannot enable RDMA on {}: {}\n", b.host, b.reason);
  for (const auto& u : plan.unreachable) out += fmt::format("Not reached: {}\n", u.message);
  if (plan.enabled.empty() && plan.walk.empty() && plan.blocked.empty())
    out += "No Mac in the cluster.\n";
  return out;
}

// The hygiene items of every reachable Mac, as JSON; prints them unless --json.
nlohmann::json hygiene(const Context& ctx, const ClusterState& state,
                       const std::vector<std::unique_ptr<remote::Executor>>& exs,
                       milliseconds timeout, ExitCode& rc) {
  nlohmann::json out = nlohmann::json::object();
  bool header = false;
  std::size_t width = 0;
  for (const auto& h : state.hosts) width = std::max(width, h.host.size());
  for (const auto& h : state.hosts) {
    remote::Executor* ex = topology::is_mac(h) ? find(exs, h.host) : nullptr;
    if (ex == nullptr) continue;
    if (!ctx.style.json && !header) fmt::print("\nCluster hygiene:\n");
    header = true;
    auto items = provision::check_hygiene(*ex, timeout);
    if (!items) {
      rc = util::worst(rc, items.error().code);
      if (!ctx.style.json) fmt::print("  {}\n", util::red(ctx.style, items.error().message));
      out[h.host] = {{"error", items.error().message}};
      continue;
    }
    nlohmann::json list = nlohmann::json::array();
    for (const auto& i : *items) {
      list.push_back({{"setting", i.setting},
                      {"status", provision::to_string(i.status)},
                      {"detail", i.detail},
                      {"fix", i.fix.empty() ? nlohmann::json() : nlohmann::json(i.fix)}});
      if (ctx.style.json) continue;
      const std::string status = fmt::format("{:<12}", provision::to_string(i.status));
      fmt::print("  {:<{}}  {:<28} {}{}\n", h.host, width, i.setting,
                 i.status == provision::HygieneItem::Status::kOk ? util::green(ctx.style, status)
                                                                 : util::yellow(ctx.style, status),
                 i.detail);
      if (!i.fix.empty()) fmt::print("  {:<{}}  {:<28} {:<12}fix: {}\n", "", width, "", "", i.fix);
    }
    out[h.host] = list;
  }
  return out;
}

// Soft-RoCE on the Linux hosts (--soft-roce; with --check, only what would be done). Returns
// the number of interfaces that need (or, without --check, got) a device.
std::size_t soft_roce(const Context& ctx, const EnableOptions& o, const ClusterState& state,
                      const provision::EnablePlan& plan,
                      const std::vector<std::unique_ptr<remote::Executor>>& exs,
                      const discovery::FixCommand& fix, nlohmann::json& json, ExitCode& rc) {
  std::size_t added = 0;
  json = nlohmann::json::array();
  const milliseconds timeout = to_ms(std::min(o.source.timeout_s, 30.0));
  for (const auto& host : plan.linux_hosts) {
    const auto itfs = provision::cabled_interfaces(state, host);
    remote::Executor* ex = find(exs, host);
    if (itfs.empty() || ex == nullptr) continue;
    auto p = provision::create_soft_roce(*ex, itfs, o.check, timeout, fix);
    if (!p) {
      rc = util::worst(rc, p.error().code);
      json.push_back({{"host", host}, {"error", p.error().message}});
      if (!ctx.style.json) fmt::print("  {}\n", util::red(ctx.style, p.error().message));
      continue;
    }
    added += p->add.size();
    nlohmann::json cmds = nlohmann::json::array();
    for (const auto& c : p->commands) cmds.push_back(c);
    json.push_back({{"host", host}, {"present", p->present}, {"add", p->add}, {"commands", cmds}});
    if (ctx.style.json) continue;
    std::vector<std::string> names;
    for (const auto& i : p->add) names.push_back(provision::rxe_device_name(i));
    if (p->add.empty()) {
      fmt::print("  {}: Soft-RoCE present on every cabled interface ({})\n", host,
                 fmt::join(p->present, ", "));
    } else {
      fmt::print("  {}: {} {}\n", host, o.check ? "would add" : "added", fmt::join(names, ", "));
    }
  }
  return added;
}

// Linux hosts without devices on cabled ports, when --soft-roce was not given: a hint.
void soft_roce_hint(const ClusterState& state, const provision::EnablePlan& plan,
                    const discovery::FixCommand& fix) {
  for (const auto& host : plan.linux_hosts) {
    const auto* f = state.find_host(host);
    if (f == nullptr || !f->rdma.devices.empty()) continue;
    const auto itfs = provision::cabled_interfaces(state, host);
    if (itfs.empty()) continue;
    fmt::print("{}: no RDMA device on {}: `{}` adds Soft-RoCE\n", host, fmt::join(itfs, ", "),
               fix.command("rdma enable", "--soft-roce"));
  }
}

ExitCode run_enable(const Context& ctx, const EnableOptions& o) {
  // A replay (--from DIR, --replay DIR) has hosts that exist only in its bundles: nothing to
  // wait for at their Macs, no progress to save, no command to suggest against them. It stops
  // after the steps and the hygiene report, as --check does, and says so; only a progress file
  // of its own (--state FILE) makes it walk, as a rehearsal against the bundles (its commands
  // name them, never the real Macs).
  const std::string replay = !o.source.from_dir.empty() ? o.source.from_dir : ctx.global.replay;
  const bool check = o.check || (!replay.empty() && o.state_file.empty());
  if (ctx.style.json && !check) {
    return report_error(
        ctx, "rdma enable",
        util::error(ExitCode::kUsage,
                    "the walkthrough is interactive: --json goes with --check only"));
  }
  // Every host before any is probed or changed, also for --check (it rehearses enable).
  if (auto st = check_source_hosts(ctx, o.source); !st) {
    return report_error(ctx, "rdma enable", st.error());
  }
  auto state = obtain_cluster_state(ctx, o.source);
  if (!state) return report_error(ctx, "rdma enable", state.error());
  if (util::interrupted()) return report_interrupted("rdma enable", "nothing was changed");
  auto exs = executors_for(ctx, o.source, *state);
  if (!exs) return report_error(ctx, "rdma enable", exs.error());
  // The commands it suggests name the cluster as given, with the lab in use (runnable).
  discovery::FixCommand fix;
  if (auto g = options_for_state(ctx.global, *state, o.source.state_file); g) {
    fix = fix_command(*g, o.source, *state);
  }
  const std::filesystem::path state_path =
      o.state_file.empty() ? provision::default_enable_state_path(o.source.state_file)
                           : std::filesystem::path(o.state_file);
  provision::EnableState saved;
  if (!check) {
    auto loaded = provision::load_enable_state(state_path);
    if (!loaded) return report_error(ctx, "rdma enable", loaded.error());
    saved = std::move(*loaded);
  }
  const provision::EnablePlan plan = provision::plan_enable(*state, saved, fix);
  ExitCode rc = ExitCode::kOk;
  if (!plan.unreachable.empty()) rc = ExitCode::kUnreachable;
  if (!plan.blocked.empty()) rc = util::worst(rc, ExitCode::kCheckFailed);
  if (!ctx.style.json) fmt::print("{}", plan_summary(plan));

  const milliseconds probe_timeout = to_ms(std::min(o.source.timeout_s, 15.0));
  ExitCode hygiene_rc = ExitCode::kOk;  // a Mac gone between discovery and now: --check only
  nlohmann::json hygiene_json = hygiene(ctx, *state, *exs, probe_timeout, hygiene_rc);
  if (check) rc = util::worst(rc, hygiene_rc);
  nlohmann::json soft_json = nlohmann::json::array();
  if (o.soft_roce) {
    if (!ctx.style.json) fmt::print("\nSoft-RoCE on the Linux hosts:\n");
    if (soft_roce(ctx, o, *state, plan, *exs, fix, soft_json, rc) > 0 && check) {
      rc = util::worst(rc, ExitCode::kCheckFailed);
    }
  } else if (!ctx.style.json && replay.empty()) {
    soft_roce_hint(*state, plan, fix);
  }

  if (check) {
    if (!plan.walk.empty()) rc = util::worst(rc, ExitCode::kCheckFailed);
    if (ctx.style.json) {
      nlohmann::json blocked = nlohmann::json::array();
      for (const auto& b : plan.blocked)
        blocked.push_back({{"host", b.host}, {"reason", b.reason}});
      nlohmann::json unreachable = nlohmann::json::array();
      for (const auto& u : plan.unreachable) unreachable.push_back(u);
      fmt::print("{}\n", util::json_text(nlohmann::json{{"schema", "clusterctl.rdma-enable-check/1"},
                                        {"need_enabling", plan.walk},
                                        {"enabled", plan.enabled},
                                        {"blocked", blocked},
                                        {"unreachable", unreachable},
                                        {"hygiene", hygiene_json},
                                        {"soft_roce", soft_json},
                                        {"exit_code", util::to_int(rc)}}, 2));
    } else if (!replay.empty()) {
      // The steps each Mac would be walked through, then no command against the hosts: they
      // are the bundles' names, not Macs to reach.
      for (std::size_t i = 0; i < plan.walk.size(); ++i) {
        fmt::print("\n[{}/{}] Mac {}: enable RDMA from macOS Recovery\n", i + 1, plan.walk.size(),
                   plan.walk[i]);
        for (const auto& line : provision::recovery_steps(plan.walk[i])) {
          fmt::print("  {}\n", line);
        }
      }
      if (!plan.walk.empty()) {
        fmt::print("\n{} Mac{} need{} RDMA enabled: {}.", plan.walk.size(),
                   plan.walk.size() == 1 ? "" : "s", plan.walk.size() == 1 ? "s" : "",
                   fmt::join(plan.walk, ", "));
      }
      fmt::print("\nA replay of {}: its hosts exist only in the bundles, so nothing was waited "
                 "for or saved{}.\n",
                 replay, o.check ? "" : " (as with --check)");
    } else if (!plan.walk.empty()) {
      fmt::print("\n{} Mac{} need{} RDMA enabled: {}. Run `{}` at the Macs.\n",
                 plan.walk.size(), plan.walk.size() == 1 ? "" : "s",
                 plan.walk.size() == 1 ? "s" : "", fmt::join(plan.walk, ", "),
                 fix.command("rdma enable"));
    }
    return rc;
  }

  if (plan.walk.empty()) {
    // "No Mac in the cluster." was already said when there is none.
    if (!plan.enabled.empty() || !plan.blocked.empty()) {
      fmt::print("\nNo Mac needs the walkthrough.\n");
    }
    return rc;
  }
  std::vector<remote::Executor*> raw;
  for (const auto& e : *exs) raw.push_back(e.get());
  provision::ExecutorProber prober(raw, probe_timeout);
  provision::SteadyClock clock;
  TerminalConsole console(ctx.style);
  provision::WalkOptions wo{to_ms(o.wait_timeout_s), to_ms(o.poll_interval_s), state_path};
  // Resumed with the same cluster, lab and progress file: runnable as printed. A rehearsal
  // names its bundles again, not the hosts they hold (no real Mac has those names).
  discovery::FixCommand again = fix;
  std::string from;
  if (!replay.empty()) {
    again.hosts.clear();
    again.state_file.clear();  // the bundles name the hosts
    from = "--from " + remote::shell_quote_arg(replay);  // --replay's bundles too
  }
  const std::string state_words =
      o.state_file.empty() ? "" : "--state " + remote::shell_quote_arg(o.state_file);
  wo.resume_command =
      again.command("rdma enable", from.empty() ? state_words : from + " " + state_words);
  wo.status_command = again.command("rdma status", from);
  fmt::print("\nProgress is saved in {}.\n", state_path.string());
  provision::Walkthrough walk(prober, clock, console, wo);
  const provision::WalkResult result = walk.run(plan.walk, saved);
  rc = util::worst(rc, result.code);
  if (result.code == ExitCode::kOk && result.failed.empty()) {
    fmt::print("\nRDMA is enabled on {}. Check every cabled port with `{}`.\n",
               fmt::join(result.enabled, ", "), wo.status_command);
  }
  return rc;
}

}  // namespace

void add_rdma_command(CLI::App& app, Context& ctx) {
  CLI::App* rdma = app.add_subcommand(
      "rdma",
      "RDMA readiness per host and cabled port, and enabling it (macOS Recovery walk, "
      "Soft-RoCE)");
  rdma->require_subcommand(0, 1);

  auto so = std::make_shared<StatusOptions>();
  CLI::App* status = rdma->add_subcommand(
      "status", "One state per host and cabled port: ready, disabled, waiting-for-peer, ...");
  add_cluster_source_options(status, so->source, /*positional=*/true);
  status->footer(
      "Examples:\n"
      "  clusterctl rdma status cluster.json\n"
      "  clusterctl --lab default rdma status --hosts all --json\n"
      "  clusterctl rdma status --from tests/data/bundles/mac-pair\n"
      "States: ready, disabled, enabled-but-no-devices, tb4-only, os-too-old, unsupported,\n"
      "unknown, no-device, tb4-link, waiting-for-peer, port-down, no-ipv4, no-interface,\n"
      "unreachable, bad-destination, probe-failed\n"
      "(provision/rdma_status.h). Exit status: 0 when every host and cabled port is ready, 1\n"
      "otherwise, 2 when a host's destination was refused (bad-destination), 3 when a host\n"
      "could not be reached. --json: schema clusterctl.rdma-status/1.");
  status->callback([&ctx, so] { ctx.action = [&ctx, so] { return run_status(ctx, *so); }; });

  auto eo = std::make_shared<EnableOptions>();
  CLI::App* enable = rdma->add_subcommand(
      "enable",
      "Walk through enabling RDMA on each Mac that needs it (macOS Recovery), one at "
      "a time; check the Macs' hygiene settings");
  add_cluster_source_options(enable, eo->source, /*positional=*/true);
  enable->add_flag("--check", eo->check,
                   "Do nothing: report the Macs that need RDMA enabled and the hygiene settings "
                   "(exit 1 when a Mac needs it)");
  enable->add_flag("--soft-roce", eo->soft_roce,
                   "On Linux hosts, add a Soft-RoCE device (rxe_IF) on every cabled interface "
                   "that has no RDMA device");
  enable
      ->add_option("--state", eo->state_file,
                   "Progress file for resuming (default: rdma-enable.json beside the cluster "
                   "file, else $XDG_STATE_HOME/clusterctl/)")
      ->type_name("FILE");
  enable
      ->add_option("--wait-timeout", eo->wait_timeout_s,
                   "Seconds to wait for each Mac to go down and come back")
      ->check(seconds_validator())
      ->capture_default_str();
  enable->add_option("--poll-interval", eo->poll_interval_s, "Seconds between two checks of a Mac")
      ->check(seconds_validator())
      ->capture_default_str();
  enable->footer(
      "Examples:\n"
      "  clusterctl rdma enable cluster.json\n"
      "  clusterctl --lab default rdma enable --hosts all --soft-roce\n"
      "  clusterctl rdma enable cluster.json --check --json\n"
      "The walk prints the steps for each Mac, waits (spinner, elapsed time) for it to go down\n"
      "and come back on SSH, verifies rdma_ctl status and ibv_devices, then goes on. Ctrl-C\n"
      "and a re-run resume where it stopped. Exit status: 0 when every Mac has RDMA enabled\n"
      "(--check: none needs it), 1 otherwise, 3 when a host could not be reached, 130 on\n"
      "Ctrl-C.");
  enable->callback([&ctx, eo] { ctx.action = [&ctx, eo] { return run_enable(ctx, *eo); }; });
}

}  // namespace cc::cli
