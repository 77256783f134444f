#include "healthcheck/health.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "healthcheck/quick_checks.h"
#include "remote/fan_out.h"
#include "util/interrupt.h"

namespace cc::healthcheck {
namespace {

remote::Executor* executor_of(std::span<remote::Executor* const> exs, const std::string& host) {
  for (auto* e : exs) {
    if (e->host() == host) return e;
  }
  return nullptr;
}

CheckResult link_error(const std::string& label, const util::Error& e,
                       const discovery::FixCommand& fix) {
  // Ctrl-C ended it: nothing is known of the cable, and nothing needs fixing.
  if (e.code == util::ExitCode::kInterrupted) {
    return interrupted_check(Scope::kCable, label, "link-test", e.message);
  }
  CheckResult r;
  r.scope = Scope::kCable;
  r.subject = label;
  r.check = "link-test";
  r.status = Status::kFail;
  r.measured = "failed";
  r.detail = e.message;
  r.fix = fmt::format("check cable {} (`{}`) and that clustercomm-perf runs on both hosts "
                      "(--perf PATH)",
                      label, fix.command("health", "--quick"));
  return r;
}

// The per-cable tests, round by round; the cables of a round run at once.
void link_checks(const discovery::ClusterState& live, std::span<remote::Executor* const> exs,
                 const HealthOptions& opts, const Report& quick, Report& report) {
  const auto rounds = schedule_rounds(live.cables);
  std::vector<std::vector<CheckResult>> per_cable(live.cables.size());
  for (const auto& round : rounds) {
    std::vector<std::thread> threads;
    for (std::size_t i : round) {
      const auto& c = live.cables[i];
      const std::string label = cable_label(c.a, c.b);
      if (util::interrupted()) {  // Ctrl-C: the rounds left are not started
        per_cable[i].push_back(interrupted_check(
            Scope::kCable, label, "link-test",
            fmt::format("the link test over {} was not run: {}", label, util::interruption())));
        continue;
      }
      // Only cables whose link is up and addressed are measured.
      bool ready = true;
      for (const auto& q : quick.results) {
        if (q.subject == label && (q.check == "link-up" || q.check == "addresses") &&
            q.status != Status::kPass) {
          ready = false;
        }
      }
      const discovery::LinkAddress* plan = nullptr;
      for (const auto& l : live.network) {
        if (l.a == c.a && l.b == c.b) plan = &l;
      }
      remote::Executor* a = executor_of(exs, c.a.host);
      remote::Executor* b = executor_of(exs, c.b.host);
      if (!ready || plan == nullptr || a == nullptr || b == nullptr) {
        per_cable[i].push_back(link_error(
            label, util::Error{util::ExitCode::kCheckFailed,
                               fmt::format("cable {} not measured: its link is down or not "
                                           "addressed (see link-up and addresses)",
                                           label)}, opts.fix));
        continue;
      }
      threads.emplace_back([&, i, a, b, plan, label] {
        auto f = measure_link(*a, *b, *plan, opts.perf);
        if (!f) {
          per_cable[i].push_back(link_error(label, f.error(), opts.fix));
        } else {
          per_cable[i] = judge_link(label, *f, opts.thresholds,
                                    opts.baseline ? &*opts.baseline : nullptr, opts.fix);
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  for (auto& v : per_cable) {
    for (auto& r : v) report.add(std::move(r));
  }
}

// The cluster-wide all-reduce check, failed before any figure could be judged.
CheckResult all_reduce_failed(std::string measured, std::string detail, std::string fix) {
  CheckResult r;
  r.scope = Scope::kCluster;
  r.subject = "cluster";
  r.check = "all-reduce";
  r.status = Status::kFail;
  r.measured = std::move(measured);
  r.detail = std::move(detail);
  r.fix = std::move(fix);
  return r;
}

}  // namespace

const char* to_string(Level l) {
  switch (l) {
    case Level::kQuick:
      return "quick";
    case Level::kDefault:
      return "default";
    case Level::kFull:
      return "full";
  }
  return "?";
}

Report run_health(const discovery::ClusterState& expected,
                  std::span<remote::Executor* const> executors, const HealthOptions& opts,
                  const util::OutputStyle& style) {
  const auto start = opts.started.value_or(std::chrono::steady_clock::now());
  Report report;
  report.level = to_string(opts.level);
  const std::vector<std::string> names = expected_hosts(expected);
  std::vector<HostOutcome> outcomes(names.size());
  std::mutex interrupted_mu;
  std::set<std::string> interrupted_hosts;  // whose probe Ctrl-C ended
  // Ctrl-C during the caller's live discovery: no host is probed now, and the report says
  // what was cut short.
  const bool cut_in_discovery = opts.discovered_now && util::interrupted();
  if (cut_in_discovery) report.interrupted_while = "discovering the hosts";
  // The hosts that discovery just failed to probe: each was waited on once already (a host
  // whose sshd is stopped costs the whole connect timeout), so its problem stands.
  std::unordered_map<std::string, const discovery::HostProblem*> just_failed;
  if (opts.discovered_now) {
    for (const auto& p : expected.problems) just_failed.emplace(p.host, &p);
  }
  remote::for_each_host(
      executors, "health",
      [&](std::size_t i) {
        outcomes[i].host = names[i];
        if (cut_in_discovery) {
          outcomes[i].problem = discovery::HostProblem{
              names[i], 1,
              names[i] + ": not probed: " + util::interruption() + " while discovering"};
          const std::lock_guard<std::mutex> lock(interrupted_mu);
          interrupted_hosts.insert(names[i]);
          return;
        }
        if (const auto known = just_failed.find(names[i]); known != just_failed.end()) {
          outcomes[i].problem = *known->second;
          return;
        }
        auto s = sample_host(*executors[i], opts.mode, opts.timeout, opts.remote_clusterctl);
        if (s) {
          outcomes[i].sample = std::move(*s);
        } else if (s.error().code == util::ExitCode::kInterrupted) {
          outcomes[i].problem = discovery::host_problem(names[i], s.error());
          const std::lock_guard<std::mutex> lock(interrupted_mu);
          interrupted_hosts.insert(names[i]);
        } else {
          outcomes[i].problem = discovery::host_problem(names[i], s.error());
        }
      },
      style);
  quick_checks(expected, outcomes, opts.thresholds, opts.local_version, report, opts.fix);
  // A host whose probe Ctrl-C ended is not a host that failed: its checks, and those of its
  // cables, are interrupted.
  for (const auto& h : interrupted_hosts) {
    for (auto& r : report.results) {
      const bool its =
          r.scope == Scope::kHost ? r.subject == h
          : r.scope == Scope::kCable
              ? r.subject.starts_with(h + ":") || r.subject.find("-" + h + ":") != std::string::npos
              : false;
      if (its && (r.status == Status::kFail || r.status == Status::kSkipped)) {
        r = interrupted_check(r.scope, r.subject, r.check,
                              cut_in_discovery
                                  ? fmt::format("{}: not probed: {} while discovering the hosts", h,
                                                util::interruption())
                                  : fmt::format("{}: the probe was {}", h, util::interruption()));
      }
    }
  }

  if (opts.level != Level::kQuick) {
    const discovery::ClusterState live = live_state(expected, outcomes);
    const Report quick = report;
    link_checks(live, executors, opts, quick, report);
    if (opts.level == Level::kFull) {
      std::vector<remote::Executor*> ranks;
      for (const auto& h : live.hosts) ranks.push_back(executor_of(executors, h.host));
      if (util::interrupted()) {
        report.add(interrupted_check(Scope::kCluster, "cluster", "all-reduce",
                                     "the all_reduce was not run: " + util::interruption()));
      } else if (live.hosts.size() != names.size()) {
        // Not a failure of its own: the hosts' reachable checks are (SKIP, naming them).
        std::vector<std::string> missing;
        for (const auto& n : names) {
          if (live.find_host(n) == nullptr) missing.push_back(n);
        }
        report.add(skipped_check(
            Scope::kCluster, "cluster", "all-reduce",
            fmt::format("the all_reduce needs every host: {} of {} were probed; not probed: {} "
                        "(see {} reachable check)",
                        live.hosts.size(), names.size(), fmt::join(missing, ", "),
                        missing.size() == 1 ? "its" : "their")));
      } else {
        auto f = measure_all_reduce(ranks, live,
                                    static_cast<std::size_t>(opts.thresholds.all_reduce_size_bytes),
                                    opts.perf, opts.soak_s);
        if (!f && f.error().code == util::ExitCode::kInterrupted) {
          report.add(
              interrupted_check(Scope::kCluster, "cluster", "all-reduce", f.error().message));
        } else if (!f) {
          report.add(all_reduce_failed(
              "failed", f.error().message,
              fmt::format("run `{}` (per cable) to find the failing cable or host",
                          opts.fix.command("health"))));
        } else {
          for (auto& r : judge_all_reduce(*f, static_cast<int>(live.hosts.size()),
                                          opts.thresholds,
                                          opts.baseline ? &*opts.baseline : nullptr, opts.fix)) {
            report.add(std::move(r));
          }
        }
      }
    }
  }
  report.interrupted =
      util::interrupted() ||
      std::any_of(report.results.begin(), report.results.end(),
                  [](const CheckResult& r) { return r.status == Status::kInterrupted; });
  report.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace cc::healthcheck
