// `clusterctl network plan | apply | verify`: per-cable IPv4 addressing (provision/network_*).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join
#include <nlohmann/json.hpp>
#include <CLI/CLI.hpp>

#include "cli/cluster_source.h"
#include "cli/context.h"
#include "cli/hosts.h"
#include "provision/network_apply.h"
#include "provision/network_plan.h"
#include "remote/fan_out.h"
#include "remote/quote.h"
#include "topology/checks.h"
#include "topology/graph.h"
#include "topology/rdma_port.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"
#include "util/json_text.h"
#include "util/text.h"

namespace cc::cli {
namespace {

using discovery::ClusterState;
using discovery::LinkAddress;
using util::ExitCode;

struct NetworkOptions {
  ClusterSource source;
  std::string base = provision::kDefaultNetworkBase;
  std::string output;  // plan -o FILE
  bool force = false;  // plan --force: -o may replace a file that is no cluster state
  bool dry_run = false;
  bool manual = false;
  bool persist = false;
};

std::string link_line(const LinkAddress& l) {
  return fmt::format("{} {}/{}  <->  {} {}/{}", discovery::end_label(l.a), l.a_address,
                     l.prefix_length, discovery::end_label(l.b), l.b_address, l.prefix_length);
}

// Unreachable or unprobed hosts stop apply and verify: a cable needs both of its ends.
util::Status require_all_hosts(const ClusterState& s) {
  if (s.problems.empty()) return {};
  std::string lines;
  ExitCode code = ExitCode::kCheckFailed;
  for (const auto& p : s.problems) {
    lines += "\n  " + p.message;
    code = util::worst(code, p.code());  // 3 unreachable, 2 a destination refused, else 1
  }
  return util::Error{code, fmt::format("{} host(s) could not be probed; nothing was changed:{}",
                                       s.problems.size(), lines)};
}

// The live cluster (every host reached: require_all_hosts) and the plan to carry out. With a
// cluster state file that holds a saved plan, that plan is used; otherwise the plan is computed
// from the live cluster (deterministic: the same cabling gives the same plan). A cable of the
// file or of its plan that is not seen now (a port down, a cable loose or pulled) is no reason
// to leave the others unaddressed: `plan` holds what can be applied, `down` names the rest, and
// apply and verify do the first and report the second (exit 1).
struct Planned {
  ClusterState live;
  std::vector<LinkAddress> plan;             // the entries whose cable is up now
  std::vector<LinkAddress> saved;            // the whole plan written back (empty: none): the
                                             // file's, or, when it has none, the one made now
                                             // for its cables, those that are down included
  std::vector<provision::DroppedLink> down;  // cables of the file or its plan not seen now
  std::vector<discovery::Cable> unplanned;   // live cables the saved plan has no entry for
  GlobalOptions global;  // what reaches the hosts: with the state file's lab (options_for_state)
};

// Plan entries naming only the ends of `cables` (no addresses): what keep_plan judges.
std::vector<LinkAddress> links_of(const std::vector<discovery::Cable>& cables) {
  std::vector<LinkAddress> out;
  for (const auto& c : cables) {
    LinkAddress l;
    l.a = c.a;
    l.b = c.b;
    out.push_back(std::move(l));
  }
  return out;
}

util::Result<Planned> live_and_plan(const Context& ctx, const NetworkOptions& o) {
  auto base = util::parse_ipv4_prefix(o.base);
  if (!base) return util::error(ExitCode::kUsage, "--base: " + base.error().message);
  Planned p;
  std::vector<LinkAddress> saved;
  std::vector<discovery::Cable> file_cables;
  ClusterSource live_source = o.source;
  Context live_ctx = ctx;
  if (!o.source.state_file.empty()) {
    auto state = discovery::load_cluster_state(o.source.state_file, global_words(ctx.global));
    if (!state) return state.error();
    auto g = options_for_state(ctx.global, *state, o.source.state_file);
    if (!g) return g.error();
    live_ctx.global = std::move(*g);
    saved = state->network;
    file_cables = state->cables;
    std::vector<std::string> names;
    for (const auto& h : state->hosts) names.push_back(h.host);
    live_source.state_file.clear();
    live_source.hosts = fmt::format("{}", fmt::join(names, ","));
  }
  auto live = obtain_cluster_state(live_ctx, live_source);
  if (!live) return live.error();
  // Hosts a signal cut off are no hosts unreachable: one line (run_apply, run_verify: "nothing
  // was changed"), not one per host.
  if (util::interrupted()) {
    return util::interrupted_error(" while discovering the hosts; nothing was changed");
  }
  p.live = std::move(*live);
  p.global = live_ctx.global;
  // A host not reached sees none of its cables: say so (exit 3), not that they were pulled.
  if (auto st = require_all_hosts(p.live); !st) return st.error();
  if (!saved.empty()) {
    auto kept = provision::keep_plan(saved, p.live);
    p.plan = std::move(kept.kept);
    p.down = std::move(kept.dropped);
    p.unplanned = provision::unplanned_cables(p.live.cables, saved);
    p.saved = std::move(saved);
  } else {
    // No saved plan: the file's cables that are down now (both ports there, no cable seen) are
    // planned with the live ones, so their entries can be written back (run_apply) and a later
    // apply, once they are up, gives them the addresses of this plan.
    ClusterState planning = p.live;
    for (const auto& d : provision::keep_plan(links_of(file_cables), p.live).dropped) {
      if (d.why != provision::Unseen::kNotSeen) continue;
      discovery::Cable c;
      c.a = d.link.a;
      c.b = d.link.b;
      planning.cables.push_back(std::move(c));
    }
    auto plan = provision::plan_network(planning, {*base});
    if (!plan) return plan.error();
    if (planning.cables.size() == p.live.cables.size()) {
      p.plan = std::move(*plan);
    } else {
      auto kept = provision::keep_plan(*plan, p.live);
      p.plan = std::move(kept.kept);
      p.down = std::move(kept.dropped);
      p.saved = std::move(*plan);
    }
  }
  // Every cable of the file must still be there: one not seen now is named, never silently
  // left out (those of the saved plan are named above).
  std::vector<discovery::Cable> unplanned_file_cables;
  for (const auto& c : file_cables) {
    if (provision::find_link(p.saved, c.a, c.b) == nullptr) unplanned_file_cables.push_back(c);
  }
  for (auto& d : provision::keep_plan(links_of(unplanned_file_cables), p.live).dropped) {
    p.down.push_back(std::move(d));
  }
  // A cable end without an IP interface cannot be addressed (`ifconfig '' inet ...`): named
  // with the others left out, and the rest applied.
  for (auto& d : provision::take_links_without_interface(p.plan)) p.down.push_back(std::move(d));
  return p;
}

// Says which cables `subcommand` could not carry out and what to do about each (stderr).
// True when there was any: the command then exits 1 (a check failed), after doing the others.
// `kept_in`: the state file apply wrote the down cables' plan entries back into ("": none).
bool report_left_out(const Context& ctx, const NetworkOptions& o, const Planned& p,
                     std::string_view subcommand, bool others_applied = false,
                     const std::string& kept_in = "") {
  if (p.down.empty() && p.unplanned.empty()) return false;
  const discovery::FixCommand fix = fix_command(p.global, o.source, p.live);
  const std::string again = fix.command(fmt::format("network {}", subcommand));
  const std::string replan =
      fmt::format("`{}`, then `{}`", fix.rediscover(), fix.command("network plan"));
  const bool applying = subcommand == "apply";
  for (const auto& d : p.down) {
    const std::string addresses =
        d.link.subnet.empty() ? std::string() : fmt::format(" ({})", d.link.subnet);
    std::string what;
    if (d.why == provision::Unseen::kNoInterface) {
      const discovery::CableEnd* e = provision::end_without_interface(d.link);
      // The command is topology::no_hardware_port's, as verify-mesh and rdma status give it.
      const std::string detect =
          topology::no_hardware_port(e != nullptr ? *e : d.link.a, fix).fix;
      what = fmt::format(
          "cable without an interface: {} - {}{}: {}; {}. macOS has not made the port's "
          "network hardware port yet: {}, and run `{}` again",
          discovery::end_label(d.link.a), discovery::end_label(d.link.b), addresses, d.reason,
          applying ? "nothing was applied to it" : "it was not checked", detect, again);
    } else if (d.why == provision::Unseen::kNotSeen) {
      // d.fix: an end is down now (topology::cable_link, health's and verify-mesh's words).
      const std::string todo =
          d.fix.empty() ? "Check that both ends are plugged in and up, reseat or replace the cable"
                        : "Fix: " + d.fix;
      // The entry written back into FILE (run_apply) is said here, in the same line.
      const std::string kept =
          kept_in.empty() ? std::string()
                          : fmt::format(
                                " (kept in the network plan of {}, though the cable is down now: "
                                "that run gives it these addresses)",
                                kept_in);
      what = fmt::format("cable down: {} - {}{}: {}; {}. {}, then run `{}` again{}",
                         discovery::end_label(d.link.a), discovery::end_label(d.link.b), addresses,
                         d.reason, applying ? "nothing was applied to it" : "it was not checked",
                         todo, again, kept);
    } else {
      what = fmt::format(
          "cable gone: {} - {}{}: {}; {}. If the cabling changed on purpose, plan it again: {}",
          discovery::end_label(d.link.a), discovery::end_label(d.link.b), addresses, d.reason,
          applying ? "nothing was applied to it" : "it was not checked", replan);
    }
    fmt::print(stderr, "{}\n", util::red(ctx.style, what));
  }
  for (const auto& c : p.unplanned) {
    fmt::print(
        stderr, "{}\n",
        util::red(ctx.style, fmt::format("cable not planned: {} - {} is not in the network plan of "
                                         "{}, so it {}: plan it with {}",
                                         discovery::end_label(c.a), discovery::end_label(c.b),
                                         o.source.state_file,
                                         applying ? "got no address" : "was not checked", replan)));
  }
  const std::size_t n = p.down.size() + p.unplanned.size();
  fmt::print(stderr, "{} cable{} left out{}\n", n, n == 1 ? "" : "s",
             others_applied ? ": every other cable was applied" : "");
  return true;
}

// Without a state file nothing records which cables there should be, and a cable that is
// down is simply not discovered: the live cables are judged against the full mesh the hosts
// should form (n(n-1)/2 pairs), with verify-mesh's own checks (topology::pair_checks: a pair
// without a cable, or with a port down that may hide one). Names each such pair and what to do
// on stderr; true when there was any (the command then exits 1).
bool report_missing_pairs(const Context& ctx, const NetworkOptions& o, const Planned& p,
                          std::string_view subcommand) {
  const topology::ClusterGraph g(p.live);
  const auto findings = topology::pair_checks(g);
  if (findings.empty()) return false;
  for (const auto& f : findings) {
    fmt::print(stderr, "{}\n",
               util::red(ctx.style, fmt::format("FAIL {}: {}; fix: {}", f.check, f.message, f.fix)));
  }
  const std::size_t n = g.size();
  const std::size_t missing = g.missing_pairs().size();
  const discovery::FixCommand fix = fix_command(p.global, o.source, p.live);
  fmt::print(stderr,
             "{} of the {} host pairs of a full mesh of {} hosts {} no working cable: `{}` "
             "prints the cabling plan; run `{}` again once the pairs are cabled and up\n",
             missing, n * (n - 1) / 2, n, missing == 1 ? "has" : "have",
             fix.command("verify-mesh"), fix.command(fmt::format("network {}", subcommand)));
  return true;
}

// What `subcommand` (apply or verify) could not carry out or check, on stderr: the cables of
// the state file or its plan left out (report_left_out) and, without a state file, the pairs
// of the full mesh with no working cable (report_missing_pairs). One path for both commands;
// true when there was any: the command then exits 1, after doing the rest.
bool report_gaps(const Context& ctx, const NetworkOptions& o, const Planned& p,
                 std::string_view subcommand, bool others_applied = false,
                 const std::string& kept_in = "") {
  const bool left_out = report_left_out(ctx, o, p, subcommand, others_applied, kept_in);
  const bool missing = o.source.state_file.empty() && report_missing_pairs(ctx, o, p, subcommand);
  return left_out || missing;
}

// The hosts `plan` did not probe, on stderr: `plan` exited 3 naming none. Each problem's
// message is discover's and health's (the host, the SSH target and port it tried, the timeout,
// what to do); then how to plan the cables those hosts left out, once they are reached.
void report_not_probed(const Context& ctx, const NetworkOptions& o, const ClusterState& s) {
  fmt::print(
      stderr, "clusterctl network plan: {} not probed, so this plan may miss cables of {}:\n",
      util::plural(s.problems.size(), "host", "hosts"), s.problems.size() == 1 ? "it" : "them");
  for (const auto& p : s.problems) fmt::print(stderr, "  {}\n", util::red(ctx.style, p.message));
  const discovery::FixCommand fix = fix_command(ctx.global, o.source, s);
  fmt::print(stderr, "Once {} reached, run {} again\n",
             s.problems.size() == 1 ? "it is" : "they are",
             o.source.state_file.empty()
                 ? fmt::format("`{}`", fix.command("network plan"))
                 : fmt::format("`{}`, then `{}`", fix.rediscover(), fix.command("network plan")));
}

ExitCode run_plan(const Context& ctx, const NetworkOptions& o) {
  if (!o.output.empty()) {
    // The plan goes into a cluster state: back into the one read is its default, so that one
    // is not an input -o must avoid; the inventory, ssh_config and an MLX hostfile are.
    ClusterSource others = o.source;
    others.state_file.clear();
    // Only a cluster state is replaced without --force (discover -o's rule).
    if (auto st = util::check_output_path(o.output, input_files(ctx.global, others),
                                          discovery::cluster_state_output(), o.force);
        !st) {
      return report_error(ctx, "network plan", st.error());
    }
  }
  auto base = util::parse_ipv4_prefix(o.base);
  if (!base) {
    return report_error(ctx, "network plan",
                        util::Error{ExitCode::kUsage, "--base: " + base.error().message});
  }
  ClusterSource source = o.source;
  source.replan = true;  // a broken plan in the file is what this one replaces
  auto state = obtain_cluster_state(ctx, source);
  if (!state) return report_error(ctx, "network plan", state.error());
  const std::string out = !o.output.empty() ? o.output : o.source.state_file;
  if (util::interrupted()) {
    return report_interrupted("network plan",
                              out.empty() ? "nothing shown" : "nothing written to " + out);
  }
  auto plan = provision::plan_network(*state, {*base});
  if (!plan) return report_error(ctx, "network plan", plan.error());
  state->network = *plan;
  if (!out.empty()) {
    if (auto st = discovery::save_cluster_state(*state, out); !st) {
      return report_error(ctx, "network plan", st.error());
    }
  }
  if (ctx.style.json) {
    fmt::print("{}\n", util::json_text(nlohmann::json(*plan), 2));
  } else {
    fmt::print("network plan: {} cable{} from {}\n", plan->size(), plan->size() == 1 ? "" : "s",
               util::format_prefix(*base));
    for (const auto& l : *plan) fmt::print("  {}\n", link_line(l));
    if (!out.empty()) fmt::print("saved in {}\n", out);
  }
  if (state->problems.empty()) return ExitCode::kOk;
  report_not_probed(ctx, o, *state);
  return require_all_hosts(*state).error().code;
}

// Waits for the operator to press Enter (stdin), Ctrl-C ends it.
bool wait_for_enter() {
  fmt::print("Run these commands on each host listed, then press Enter to verify (Ctrl-C to "
             "stop).\n");
  std::string line;
  return static_cast<bool>(std::getline(std::cin, line)) && !util::interrupted();
}

ExitCode run_verify_links(const Context& ctx, const NetworkOptions& o, const Planned& p,
                          std::vector<std::unique_ptr<remote::Executor>>& executors);

ExitCode run_apply(const Context& ctx, const NetworkOptions& o) {
  if (!o.source.from_dir.empty() && !o.dry_run) {
    return report_error(ctx, "network apply",
                        util::Error{ExitCode::kUsage,
                                    "--from replays recorded outputs: only --dry-run "
                                    "can run on a bundle"});
  }
  // Every host before any is probed or changed, also for --dry-run (it rehearses apply).
  if (auto st = check_source_hosts(ctx, o.source); !st) {
    return report_error(ctx, "network apply", st.error());
  }
  auto p = live_and_plan(ctx, o);
  if (!p) return report_error(ctx, "network apply", p.error());
  auto base = *util::parse_ipv4_prefix(o.base);
  auto changes = provision::network_changes(p->live, p->plan, base, o.persist);

  std::vector<std::string> names;
  for (const auto& h : p->live.hosts) names.push_back(h.host);
  GlobalOptions g = p->global;
  if (!o.source.from_dir.empty()) g.replay = o.source.from_dir;
  auto executors = make_executors(g, fmt::format("{}", fmt::join(names, ",")));
  if (!executors) return report_error(ctx, "network apply", executors.error());
  std::vector<remote::Executor*> ptrs;
  for (auto& e : *executors) ptrs.push_back(e.get());

  std::vector<provision::Privilege> privilege(ptrs.size(), provision::Privilege::kRoot);
  std::vector<std::optional<util::Error>> errors(ptrs.size());
  if (o.source.from_dir.empty()) {
    remote::for_each_host(
        ptrs, "privileges",
        [&](size_t i) {
          if (changes[i].commands.empty()) return;
          auto r = provision::detect_privilege(*ptrs[i]);
          if (r) {
            privilege[i] = *r;
          } else {
            errors[i] = r.error();
          }
        },
        ctx.style);
  }
  for (const auto& e : errors) {
    if (e) return report_error(ctx, "network apply", *e);
  }

  size_t total = 0;
  for (const auto& c : changes) total += c.commands.size();
  bool any_mac = false;
  for (const auto& c : changes) any_mac |= c.macos;
  std::vector<size_t> manual_hosts;
  for (size_t i = 0; i < changes.size(); ++i) {
    if (!changes[i].commands.empty() && privilege[i] == provision::Privilege::kNone) {
      manual_hosts.push_back(i);
    }
  }
  auto print_commands = [&](size_t i, provision::Privilege priv) {
    fmt::print("{}:\n", changes[i].host);
    for (const auto& c : changes[i].commands) {
      auto argv = provision::with_privilege(
          priv == provision::Privilege::kNone ? provision::Privilege::kSudo : priv, c.argv);
      fmt::print("  {}    # {}\n", remote::shell_quote(argv), c.why);
    }
  };
  if (o.dry_run) {
    fmt::print("network apply --dry-run: {} change{} (nothing was changed)\n", total,
               total == 1 ? "" : "s");
    for (size_t i = 0; i < changes.size(); ++i) {
      if (changes[i].commands.empty()) {
        fmt::print("{}: no change\n", changes[i].host);
      } else {
        print_commands(i, privilege[i]);
      }
    }
    return report_gaps(ctx, o, *p, "apply") ? ExitCode::kCheckFailed : ExitCode::kOk;
  }
  if (!manual_hosts.empty()) {
    if (!o.manual) {
      std::string hosts;
      for (size_t i : manual_hosts) hosts += (hosts.empty() ? "" : ", ") + changes[i].host;
      return report_error(
          ctx, "network apply",
          util::Error{ExitCode::kCheckFailed,
                      fmt::format("no passwordless sudo on {}: nothing was changed. Run "
                                  "again with --manual to get the commands to type there, "
                                  "or allow `sudo -n` for the network commands",
                                  hosts)});
    }
    for (size_t i : manual_hosts) print_commands(i, provision::Privilege::kNone);
  }

  std::vector<provision::ApplyResult> results(ptrs.size());
  remote::for_each_host(
      ptrs, "apply",
      [&](size_t i) {
        results[i].host = changes[i].host;
        if (privilege[i] == provision::Privilege::kNone) return;  // the operator does these
        results[i] = provision::apply_host(*ptrs[i], changes[i], privilege[i]);
      },
      ctx.style);
  bool failed = false, interrupted = false;
  for (const auto& r : results) {
    if (r.interrupted) {
      interrupted = true;
      fmt::print(stderr, "{}\n", util::yellow(ctx.style, r.message));
    } else if (r.failed) {
      failed = true;
      fmt::print(stderr, "{}\n", util::red(ctx.style, r.message));
    } else if (r.applied == 0) {
      fmt::print("{}: no change\n", r.host);
    } else {
      fmt::print("{}: {} change{} applied\n", r.host, r.applied, r.applied == 1 ? "" : "s");
    }
  }
  if (interrupted || util::interrupted()) {
    // Ctrl-C is no failure of the cabling: no cable to look for, nothing verified.
    return report_interrupted(
        "network apply",
        fmt::format("nothing was verified{}", failed ? "" : ": run it again to apply the rest"));
  }
  if (failed) {
    report_gaps(ctx, o, *p, "apply");
    return ExitCode::kCheckFailed;
  }
  if (total > 0 && !o.persist) {
    fmt::print("(not persistent: the addresses last until reboot{})\n",
               any_mac ? "; --persist makes one network service per Thunderbolt port" : "");
  }
  if (!manual_hosts.empty() && !wait_for_enter()) return ExitCode::kInterrupted;
  // Verify, never assume: the live facts again, then pings over every cable.
  NetworkOptions again = o;
  auto fresh = live_and_plan(ctx, again);
  if (!fresh) return report_error(ctx, "network apply", fresh.error());
  fresh->plan = p->plan;
  std::string kept_in;  // the state file the down cables' plan entries were kept in
  if (!o.source.state_file.empty()) {
    // The cluster state gets the facts as they are now (every cable end with its address, so
    // `hostfile --format mlx-ring` and launch read them without a new `discover`) and the plan:
    // the whole saved plan, a down cable's entry too, so that once the cable is back, apply
    // gives it its addresses again. Only an entry whose port is gone cannot stay (the state
    // would name a port it does not have); it is named.
    ClusterState saved = fresh->live;
    saved.network = p->plan;
    std::vector<LinkAddress> kept_down;  // entries kept for a cable that is down
    if (!p->saved.empty()) {
      saved.network.clear();
      const auto now = provision::keep_plan(p->saved, fresh->live);
      for (const auto& l : p->saved) {
        auto d = std::find_if(now.dropped.begin(), now.dropped.end(), [&](const auto& x) {
          return provision::find_link({x.link}, l.a, l.b) != nullptr;
        });
        if (d == now.dropped.end()) {
          saved.network.push_back(l);
        } else if (d->why == provision::Unseen::kNotSeen) {
          saved.network.push_back(l);
          kept_down.push_back(l);
        } else {
          fmt::print(
              stderr, "{}\n",
              util::red(ctx.style, fmt::format("{} - {} ({}) is dropped from the plan in {}: {}",
                                               discovery::end_label(l.a), discovery::end_label(l.b),
                                               l.subnet, o.source.state_file, d->reason)));
        }
      }
    }
    if (auto st = discovery::save_cluster_state(saved, o.source.state_file); !st) {
      return report_error(ctx, "network apply", st.error());
    }
    if (!kept_down.empty()) kept_in = o.source.state_file;  // said in the cable down lines
  }
  const ExitCode verified = run_verify_links(ctx, o, *fresh, *executors);
  const bool gaps = report_gaps(ctx, o, *fresh, "apply", /*others_applied=*/true, kept_in);
  return gaps ? util::worst(verified, ExitCode::kCheckFailed) : verified;
}

// The cables `p` expects but does not check, one label each, in report_gaps' order: those of
// the state file or its plan that were left out ("h1 tb1 - h2 tb1"; report_left_out) and,
// without a file, each pair of the full mesh with no cable ("h2 - h4 (no working cable)";
// report_missing_pairs). The headline counts them with the cables checked.
std::vector<std::string> left_out_cables(const NetworkOptions& o, const Planned& p) {
  std::vector<std::string> out;
  for (const auto& d : p.down) {
    out.push_back(
        fmt::format("{} - {}", discovery::end_label(d.link.a), discovery::end_label(d.link.b)));
  }
  for (const auto& c : p.unplanned) {
    out.push_back(fmt::format("{} - {}", discovery::end_label(c.a), discovery::end_label(c.b)));
  }
  if (o.source.state_file.empty()) {
    const topology::ClusterGraph g(p.live);
    for (const auto& [a, b] : g.missing_pairs()) {
      out.push_back(fmt::format("{} - {} (no working cable)", g.host(a).name(), g.host(b).name()));
    }
  }
  return out;
}

ExitCode run_verify_links(const Context& ctx, const NetworkOptions& o, const Planned& p,
                          std::vector<std::unique_ptr<remote::Executor>>& executors) {
  std::vector<remote::Executor*> ptrs;
  for (auto& e : executors) ptrs.push_back(e.get());
  std::vector<discovery::ProbeOutputs> pings(ptrs.size());
  std::vector<std::optional<util::Error>> errors(ptrs.size());
  remote::for_each_host(
      ptrs, "verify",
      [&](size_t i) {
        auto cmds = provision::link_pings_of(p.live, p.plan, ptrs[i]->host());
        auto r = discovery::run_commands(*ptrs[i], cmds, discovery::ProbeMode::kScript,
                                         std::chrono::seconds(30));
        if (r) {
          pings[i] = std::move(*r);
        } else {
          errors[i] = r.error();
        }
      },
      ctx.style);
  ExitCode rc = ExitCode::kOk;
  for (const auto& e : errors) {
    if (e) {
      fmt::print(stderr, "{}\n", util::red(ctx.style, e->message));
      rc = util::worst(rc, e->code);
    }
  }
  auto checks = provision::check_links(p.live, p.plan, pings, fix_command(p.global, o.source, p.live));
  size_t good = 0;
  for (const auto& c : checks) {
    good += c.ok();
    std::string status = c.ok() ? util::green(ctx.style, "ok  ") : util::red(ctx.style, "FAIL");
    fmt::print("{} {}\n", status, link_line(c.link));
    for (const auto& why : {c.a_problem, c.b_problem}) {
      if (!why.empty()) fmt::print("       {}\n", why);
    }
  }
  // The headline counts every cable expected, those left out too (named on stderr below).
  const std::vector<std::string> left = left_out_cables(o, p);
  fmt::print("{} of {} cables answer both ways over their own interfaces{}\n", good,
             checks.size() + left.size(),
             left.empty() ? std::string()
                          : fmt::format("; {} left out: {}", left.size(), fmt::join(left, ", ")));
  if (good != checks.size()) rc = util::worst(rc, ExitCode::kCheckFailed);
  return rc;
}

ExitCode run_verify(const Context& ctx, const NetworkOptions& o) {
  auto p = live_and_plan(ctx, o);
  if (!p) return report_error(ctx, "network verify", p.error());
  std::vector<std::string> names;
  for (const auto& h : p->live.hosts) names.push_back(h.host);
  GlobalOptions g = p->global;
  if (!o.source.from_dir.empty()) g.replay = o.source.from_dir;
  auto executors = make_executors(g, fmt::format("{}", fmt::join(names, ",")));
  if (!executors) return report_error(ctx, "network verify", executors.error());
  const ExitCode verified = run_verify_links(ctx, o, *p, *executors);
  const bool gaps = report_gaps(ctx, o, *p, "verify");
  return gaps ? util::worst(verified, ExitCode::kCheckFailed) : verified;
}

void add_common(CLI::App* cmd, NetworkOptions& o) {
  add_cluster_source_options(cmd, o.source, /*positional=*/true);
  cmd->add_option("--base", o.base,
                  fmt::format("Prefix the per-cable subnets come from (default {})",
                              provision::kDefaultNetworkBase));
}

}  // namespace

void add_network_command(CLI::App& app, Context& ctx) {
  CLI::App* net = app.add_subcommand(
      "network", "Per-cable IPv4 addressing: plan, apply (over SSH, with sudo), verify (pings)");
  net->require_subcommand(0, 1);

  auto po = std::make_shared<NetworkOptions>();
  CLI::App* plan = net->add_subcommand(
      "plan", "One point-to-point subnet per cable; saved in the cluster state file");
  add_common(plan, *po);
  plan->add_option("-o,--output", po->output,
                   "Write the cluster state with the plan to FILE (default: back into the "
                   "cluster state file given). An existing FILE must be a cluster state (or "
                   "empty), unless --force");
  plan->add_flag("--force", po->force,
                 "Let -o replace an existing file that is not a cluster state");
  plan->callback([&ctx, po] { ctx.action = [&ctx, po] { return run_plan(ctx, *po); }; });

  auto ao = std::make_shared<NetworkOptions>();
  CLI::App* apply = net->add_subcommand(
      "apply", "Give every cable end its planned address, then verify every cable");
  add_common(apply, *ao);
  apply->add_flag("--dry-run", ao->dry_run, "Print exactly the commands; change nothing");
  apply->add_flag("--manual", ao->manual,
                  "Hosts without passwordless sudo: print their commands and wait for you");
  apply->add_flag("--persist", ao->persist,
                  "macOS: one network service per Thunderbolt port (survives reboot)");
  apply->callback([&ctx, ao] { ctx.action = [&ctx, ao] { return run_apply(ctx, *ao); }; });

  auto vo = std::make_shared<NetworkOptions>();
  CLI::App* verify = net->add_subcommand(
      "verify", "Ping every cable both ways over its own interfaces; check RDMA GIDs");
  add_common(verify, *vo);
  verify->callback([&ctx, vo] { ctx.action = [&ctx, vo] { return run_verify(ctx, *vo); }; });
}

}  // namespace cc::cli
