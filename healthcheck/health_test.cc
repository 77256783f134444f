#include "healthcheck/health.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <doctest/doctest.h>

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
