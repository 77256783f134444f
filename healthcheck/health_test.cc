#include "healthcheck/health.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "healthcheck/render.h"
#include "remote/fake_executor.h"
#include "topology/test_states.h"
#include "util/interrupt.h"

namespace cc::healthcheck {
namespace {

namespace tt = topology::testing;

// A live discovery of h1..h2 that could not reach h2 (its sshd stopped: the connect timed out).
discovery::ClusterState discovered_without_h2() {
  discovery::ClusterState s = tt::lab_mesh(2);
  s.hosts.erase(s.hosts.begin() + 1);
  s.problems.push_back({"h2", 3, "h2: cannot connect: no SSH banner within 10 s"});
  return s;
}

const CheckResult* find_result(const Report& r, const std::string& subject,
                               const std::string& check) {
  auto it = std::find_if(r.results.begin(), r.results.end(), [&](const CheckResult& c) {
    return c.subject == subject && c.check == check;
  });
  return it == r.results.end() ? nullptr : &*it;
}

TEST_CASE("run_health: a host whose destination was refused is exit 2, told to fix its name") {
  // remote's "'fe80::1' is a link-local IPv6 address without its scope" (kUsage): nothing ran
  // on the host, so `collect` (what a failed probe is told) would show nothing.
  discovery::ClusterState expected = tt::lab_mesh(2);
  expected.hosts.erase(expected.hosts.begin() + 1);
  expected.problems.push_back(discovery::host_problem(
      "h2", util::error(util::ExitCode::kUsage,
                        "h2: 'fe80::1' is a link-local IPv6 address without its scope")));
  CHECK(expected.problems[0].exit_code == 2);
  remote::FakeExecutor h1("h1"), h2("h2");
  std::vector<remote::Executor*> exs = {&h1, &h2};
  HealthOptions o;
  o.level = Level::kQuick;
  o.discovered_now = true;
  const Report r = run_health(expected, exs, o, {});
  CHECK(r.unreachable.empty());
  CHECK(r.bad_destination == std::vector<std::string>{"h2"});
  const CheckResult* reach = find_result(r, "h2", "reachable");
  REQUIRE(reach != nullptr);
  CHECK(reach->status == Status::kFail);
  CHECK(reach->measured == "bad destination");
  CHECK(reach->fix.starts_with("fix how h2 is named (--hosts, the inventory's `ssh:` or the SSH "
                               "config's HostName) as the message says, then check that `ssh "));
  CHECK(reach->fix.find("collect") == std::string::npos);
  CHECK(exit_code(r) == util::ExitCode::kUsage);
  CHECK(nlohmann::json::parse(render_json(r))["bad_destination"] ==
        nlohmann::json::array({"h2"}));
  CHECK(render_text(r, {}).find("bad destination: h2") != std::string::npos);
}

TEST_CASE("run_health: a host a live discovery could not reach is not waited on again") {
  const discovery::ClusterState expected = discovered_without_h2();
  remote::FakeExecutor h1("h1"), h2("h2");
  std::vector<remote::Executor*> exs = {&h1, &h2};
  HealthOptions o;
  o.level = Level::kQuick;
  o.discovered_now = true;
  const Report r = run_health(expected, exs, o, {});
  CHECK_FALSE(h1.calls().empty());  // probed as ever
  CHECK(h2.calls().empty());        // its wait was discovery's
  CHECK(r.unreachable == std::vector<std::string>{"h2"});
  const CheckResult* reach = find_result(r, "h2", "reachable");
  REQUIRE(reach != nullptr);
  CHECK(reach->status == Status::kFail);
  CHECK(reach->detail == "h2: cannot connect: no SSH banner within 10 s");
  CHECK(exit_code(r) == util::ExitCode::kUnreachable);

  // A state file's problems are old: every host is probed now.
  remote::FakeExecutor again("h2");
  std::vector<remote::Executor*> from_file = {&h1, &again};
  o.discovered_now = false;
  run_health(expected, from_file, o, {});
  CHECK_FALSE(again.calls().empty());
}

TEST_CASE("run_health: the elapsed time is the command's, its discovery included") {
  const discovery::ClusterState expected = discovered_without_h2();
  remote::FakeExecutor h1("h1"), h2("h2");
  std::vector<remote::Executor*> exs = {&h1, &h2};
  HealthOptions o;
  o.level = Level::kQuick;
  o.discovered_now = true;
  o.started = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  const Report r = run_health(expected, exs, o, {});
  CHECK(r.elapsed_s >= 10.0);
  CHECK(r.elapsed_s < 20.0);
}

TEST_CASE("run_health: Ctrl-C during the live discovery is reported as such, with its time") {
  const discovery::ClusterState expected = discovered_without_h2();
  remote::FakeExecutor h1("h1"), h2("h2");
  std::vector<remote::Executor*> exs = {&h1, &h2};
  HealthOptions o;
  o.level = Level::kQuick;
  o.discovered_now = true;
  o.started = std::chrono::steady_clock::now() - std::chrono::milliseconds(2500);
  util::set_interrupted(true);
  const Report r = run_health(expected, exs, o, {});
  util::set_interrupted(false);
  CHECK(h1.calls().empty());
  CHECK(h2.calls().empty());
  CHECK(r.interrupted);
  CHECK(r.interrupted_while == "discovering the hosts");
  CHECK(r.count(Status::kInterrupted) > 0);
  CHECK(r.count(Status::kFail) == 0);
  CHECK(r.elapsed_s >= 2.5);
  const std::string text = render_text(r, {});
  CHECK(text.find("health (quick): interrupted (Ctrl-C) while discovering the hosts: 0 of ") !=
        std::string::npos);
  CHECK(text.find(" in 0.00 s") == std::string::npos);
  CHECK(render_json(r).find("\"interrupted_while\": \"discovering the hosts\"") !=
        std::string::npos);
}

TEST_CASE("run_health: --full's all_reduce is SKIP, naming the hosts not probed") {
  const discovery::ClusterState expected = discovered_without_h2();
  remote::FakeExecutor h1("h1"), h2("h2");
  std::vector<remote::Executor*> exs = {&h1, &h2};
  HealthOptions o;
  o.level = Level::kFull;
  o.discovered_now = true;
  const Report r = run_health(expected, exs, o, {});
  const CheckResult* all_reduce = find_result(r, "cluster", "all-reduce");
  REQUIRE(all_reduce != nullptr);
  // It could not run because of h2: h2's reachable check is the failure, not this one.
  CHECK(all_reduce->status == Status::kSkipped);
  CHECK(all_reduce->fix == "");
  CHECK(all_reduce->detail.find("not probed: ") != std::string::npos);
  CHECK(all_reduce->detail.find("h2") != std::string::npos);
  CHECK(exit_code(r) == util::ExitCode::kUnreachable);
}

}  // namespace
}  // namespace cc::healthcheck
