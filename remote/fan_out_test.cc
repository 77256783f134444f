#include "remote/fan_out.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "remote/fake_executor.h"
#include "remote/local_executor.h"
#include "remote/outcomes.h"

using cc::remote::CommandResult;
using cc::remote::Executor;
using cc::remote::FakeExecutor;
using cc::remote::fan_out;
using cc::remote::fan_out_progress;
using namespace std::chrono_literals;

TEST_CASE("fan_out runs everywhere at once and keeps input order") {
  std::vector<std::unique_ptr<FakeExecutor>> hosts;
  for (int i = 1; i <= 16; ++i) {
    auto h = std::make_unique<FakeExecutor>("h" + std::to_string(i));
    CommandResult r;
    r.exit_status = 0;
    r.out = "h" + std::to_string(i) + "\n";
    h->on("uname -n", r);
    h->set_delay(std::chrono::milliseconds(300 - 15 * i));  // later hosts answer first
    hosts.push_back(std::move(h));
  }
  hosts[4]->fail_with(cc::util::error(cc::util::ExitCode::kUnreachable, "cannot connect to h5"));
  std::vector<Executor*> ptrs;
  for (auto& h : hosts) ptrs.push_back(h.get());

  auto t0 = std::chrono::steady_clock::now();
  auto outcomes = fan_out(ptrs, {{"uname", "-n"}}, {}, {});
  auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took < 2s);  // 16 x ~0.2 s in sequence would be ~3 s
  REQUIRE(outcomes.size() == 16);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    CHECK(outcomes[i].host == "h" + std::to_string(i + 1));
    if (i == 4) {
      REQUIRE_FALSE(outcomes[i].result.ok());
      CHECK(outcomes[i].result.error().code == cc::util::ExitCode::kUnreachable);
    } else {
      REQUIRE(outcomes[i].result.ok());
      CHECK(outcomes[i].result->out == "h" + std::to_string(i + 1) + "\n");
    }
  }
  CHECK(hosts[0]->calls() == std::vector<std::string>{"uname -n"});
}

TEST_CASE("fan_out: a slow host does not hold the others past its own timeout") {
  FakeExecutor fast("fast"), slow("slow");
  slow.set_delay(60s);
  CommandResult ok;
  ok.exit_status = 0;
  fast.on("true", ok);
  std::vector<Executor*> ptrs = {&slow, &fast};
  cc::remote::RunOptions o;
  o.timeout = 500ms;
  auto t0 = std::chrono::steady_clock::now();
  auto outcomes = fan_out(ptrs, {{"true"}}, o, {});
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  REQUIRE(outcomes[0].result.ok());
  CHECK(outcomes[0].result->timed_out);
  REQUIRE(outcomes[1].result.ok());
  CHECK(outcomes[1].result->exit_status == 0);
}

TEST_CASE("fan_out with keep holds the first bytes of each stream and counts the rest") {
  // exec kept every host's whole output to group it: a `cat` of a big file on every host took
  // its size in memory per host.
  cc::remote::LocalExecutor a("a"), b("b");
  std::vector<cc::remote::Executor*> ptrs{&a, &b};
  cc::remote::Command cmd{{"sh", "-c",
                           "i=0; while [ $i -lt 3000 ]; do echo 0123456789; i=$((i+1)); done; "
                           "echo err >&2"}};
  auto out = cc::remote::fan_out(ptrs, cmd, {}, {}, 1000);
  REQUIRE(out.size() == 2);
  for (const auto& o : out) {
    REQUIRE(o.result.ok());
    CHECK(o.result->exit_status == 0);
    CHECK(o.result->out.size() == 1000);
    CHECK(o.result->out.starts_with("0123456789\n0123456789\n"));
    CHECK(o.result->out_hidden == 33000 - 1000);
    CHECK(o.result->err == "err\n");
    CHECK(o.result->err_hidden == 0);
  }
  // Cut outputs are never grouped (the parts not kept cannot be compared); whole ones are.
  const auto groups = cc::remote::group_outputs(out, false);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].hidden == 32000);
  CHECK(cc::remote::group_outputs(out, true).size() == 1);
  CHECK(cc::remote::outcomes_json(out).find("\"stdout_hidden_bytes\": 32000") != std::string::npos);
  // Without keep, all of it.
  auto whole = cc::remote::fan_out(ptrs, cmd, {}, {});
  REQUIRE(whole[0].result.ok());
  CHECK(whole[0].result->out.size() == 33000);
  CHECK(whole[0].result->out_hidden == 0);
}

TEST_CASE("fan_out of no hosts is empty") {
  std::vector<Executor*> none;
  CHECK(fan_out(none, {{"true"}}, {}, {}).empty());
}

TEST_CASE("fan_out_progress names the hosts still running") {
  CHECK(fan_out_progress("exec", 5, 8, {"h3", "h7"}) == "exec: 5/8 done, waiting for h3, h7");
  CHECK(fan_out_progress("exec", 8, 8, {}) == "exec: 8/8 done");
  CHECK(fan_out_progress("exec", 0, 6, {"a", "b", "c", "d", "e", "f"}) ==
        "exec: 0/6 done, waiting for a, b, c, d +2 more");
}

TEST_CASE("check_each finds every host's problem before anything runs on any host") {
  std::vector<std::unique_ptr<FakeExecutor>> hosts;
  for (int i = 1; i <= 4; ++i) hosts.push_back(std::make_unique<FakeExecutor>("h" + std::to_string(i)));
  hosts[1]->fail_check_with(
      cc::util::error(cc::util::ExitCode::kUsage, "h2: 'fe80::1%nosuch0' is not a valid SSH destination"));
  hosts[3]->fail_check_with(cc::util::error(cc::util::ExitCode::kUsage, "h4: no host 'h4'"));
  std::vector<Executor*> ptrs;
  for (auto& h : hosts) ptrs.push_back(h.get());
  ptrs.push_back(nullptr);  // a host never connected: skipped

  const auto problems = cc::remote::check_each(ptrs, {});
  REQUIRE(problems.size() == 5);
  CHECK_FALSE(problems[0].has_value());
  REQUIRE(problems[1].has_value());
  CHECK(problems[1]->message == "h2: 'fe80::1%nosuch0' is not a valid SSH destination");
  CHECK_FALSE(problems[2].has_value());
  REQUIRE(problems[3].has_value());
  CHECK(problems[3]->message == "h4: no host 'h4'");
  CHECK_FALSE(problems[4].has_value());
  for (const auto& h : hosts) CHECK(h->calls().empty());  // nothing ran, on the good hosts either
}

TEST_CASE("hosts_refused lists every problem at once and says nothing ran") {
  const cc::util::Error e = cc::remote::hosts_refused({"h2: bad", "h4: worse"}, 5);
  CHECK(e.code == cc::util::ExitCode::kUsage);
  CHECK(e.message ==
        "2 of 5 hosts cannot be reached as given (found before connecting to any); nothing was "
        "run on any host:\n  h2: bad\n  h4: worse");
  CHECK(cc::remote::hosts_refused({"h1: bad"}, 1).message.starts_with("1 of 1 host cannot"));
}
