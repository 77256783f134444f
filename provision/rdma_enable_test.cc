#include "provision/rdma_enable.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "remote/fake_executor.h"
#include "tests/temp_dir.h"
#include "topology/test_states.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"

namespace cc::provision {
namespace {

using discovery::RdmaState;
using std::chrono::milliseconds;
namespace t = topology::testing;
namespace fs = std::filesystem;
using test::TempDir;

MacRdma disabled() {
  return {true, "", RdmaState::kDisabled, {}};
}
MacRdma enabled() {
  return {true, "", RdmaState::kEnabled, {"rdma_en1", "rdma_en2"}};
}
MacRdma down() {
  return {false, "a: connection timed out", RdmaState::kUnknown, {}};
}

// Answers per host from a script; the last answer repeats. `on_call` runs before each answer
// (to press Ctrl-C at a given moment).
class FakeProber final : public MacProber {
 public:
  std::map<std::string, std::deque<MacRdma>> script;
  std::vector<std::string> calls;
  std::function<void(std::size_t)> on_call;
  util::Result<MacRdma> probe(const std::string& host) override {
    calls.push_back(host);
    if (on_call) on_call(calls.size());
    auto& q = script.at(host);
    MacRdma r = q.front();
    if (q.size() > 1) q.pop_front();
    return r;
  }
};

using util::FakeClock;

class Console final : public WalkConsole {
 public:
  std::vector<std::string> lines;
  int statuses = 0;
  void say(std::string_view line) override { lines.emplace_back(line); }
  void status(std::string_view) override { ++statuses; }
  void clear_status() override {}
  bool has(const std::string& text) const {
    for (const auto& l : lines) {
      if (l.find(text) != std::string::npos) return true;
    }
    return false;
  }
};

struct Rig {
  TempDir dir{"cc-rdma-enable"};
  FakeProber prober;
  FakeClock clock;
  Console console;
  WalkOptions opts{milliseconds(60'000), milliseconds(1000), {}};
  Rig() { opts.state_path = dir.path / "rdma-enable.json"; }
  WalkResult run(const std::vector<std::string>& macs, EnableState& state) {
    Walkthrough w(prober, clock, console, opts);
    return w.run(macs, state);
  }
  MacPhase saved_phase(const std::string& host) {
    auto st = load_enable_state(opts.state_path);
    REQUIRE(st.ok());
    return st->macs.at(host).phase;
  }
};

TEST_CASE("rdma enable: a disabled Mac is walked down, up, verified, the next one too") {
  Rig rig;
  rig.prober.script["a"] = {disabled(), disabled(), disabled(), down(), down(), enabled()};
  rig.prober.script["c"] = {disabled(), down(), enabled()};
  EnableState state;
  const WalkResult r = rig.run({"a", "c"}, state);
  CHECK(r.code == util::ExitCode::kOk);
  CHECK(r.enabled == std::vector<std::string>{"a", "c"});
  CHECK(rig.console.has("[1/2] Mac a: enable RDMA from macOS Recovery"));
  CHECK(rig.console.has("6. Type `rdma_ctl enable` and press Return."));
  CHECK(rig.console.has("a is down (0:02)"));
  CHECK(rig.console.has("a is back on SSH (0:03)."));
  CHECK(
      rig.console.has("a: RDMA enabled (rdma_ctl status: enabled; ibv_devices: rdma_en1, "
                      "rdma_en2)."));
  CHECK(rig.console.has("[2/2] Mac c: enable RDMA from macOS Recovery"));
  CHECK(rig.console.statuses > 0);
  CHECK(rig.saved_phase("a") == MacPhase::kDone);
  CHECK(rig.saved_phase("c") == MacPhase::kDone);
}

TEST_CASE("rdma enable: a Mac enabled already gets no steps") {
  Rig rig;
  rig.prober.script["b"] = {enabled()};
  EnableState state;
  const WalkResult r = rig.run({"b"}, state);
  CHECK(r.code == util::ExitCode::kOk);
  CHECK(rig.console.has("Mac b: RDMA is enabled already"));
  CHECK_FALSE(rig.console.has("rdma_ctl enable"));
  CHECK(rig.prober.calls.size() == 1);
}

TEST_CASE("rdma enable: Ctrl-C saves the phase, and a re-run resumes from it") {
  Rig rig;
  rig.prober.script["a"] = {disabled(), disabled(), down()};
  rig.prober.on_call = [](std::size_t n) {
    if (n == 3) util::set_interrupted(true);  // Ctrl-C while a is in macOS Recovery
  };
  EnableState state;
  WalkResult r = rig.run({"a"}, state);
  util::set_interrupted(false);
  CHECK(r.code == util::ExitCode::kInterrupted);
  CHECK(rig.saved_phase("a") == MacPhase::kWaitingUp);

  auto loaded = load_enable_state(rig.opts.state_path);
  REQUIRE(loaded.ok());
  auto plan = plan_enable(
      [] {
        discovery::ClusterState s;
        s.hosts = {t::mac_host("b", 1)};
        s.problems.push_back({"a", 3, "a: unreachable"});  // in Recovery while discover ran
        return s;
      }(),
      *loaded, {});
  CHECK(plan.walk == std::vector<std::string>{"a"});
  CHECK(plan.unreachable.empty());

  rig.prober.on_call = nullptr;
  rig.prober.script["a"] = {down(), enabled()};
  rig.console.lines.clear();
  r = rig.run(plan.walk, *loaded);
  CHECK(r.code == util::ExitCode::kOk);
  CHECK(rig.console.has("[1/1] Mac a: resuming (it had gone down for macOS Recovery)"));
  CHECK_FALSE(rig.console.has("rdma_ctl enable"));  // no steps again
  CHECK(rig.console.has("a: RDMA enabled"));
  CHECK(rig.saved_phase("a") == MacPhase::kDone);
}

TEST_CASE("rdma enable: every wait has a timeout with a message") {
  Rig rig;
  rig.prober.script["a"] = {disabled()};  // never goes down
  EnableState state;
  WalkResult r = rig.run({"a", "c"}, state);
  CHECK(r.code == util::ExitCode::kCheckFailed);
  CHECK(rig.console.has("a did not shut down within 1:00"));
  CHECK(rig.console.has("then run `clusterctl rdma enable` again (it resumes here)"));
  CHECK(rig.saved_phase("a") == MacPhase::kWaitingDown);
  CHECK(std::count(rig.prober.calls.begin(), rig.prober.calls.end(), "c") == 0);  // stopped

  rig.prober.script["a"] = {down()};  // never comes back
  rig.opts.resume_command = "clusterctl rdma enable --lab t3a 'my c.json'";  // as cli/ gives it
  r = rig.run({"a"}, state);
  CHECK(rig.console.has("then run `clusterctl rdma enable --lab t3a 'my c.json'` again (it "
                        "resumes here)"));
  CHECK(r.code == util::ExitCode::kUnreachable);
  CHECK(rig.console.has("a did not come back on SSH within 1:00"));
  CHECK(rig.saved_phase("a") == MacPhase::kWaitingUp);
}

TEST_CASE("rdma enable: back with RDMA still disabled: the steps again, no devices: failed") {
  Rig rig;
  rig.prober.script["a"] = {disabled(), down(), disabled(), down(), enabled()};
  EnableState state;
  WalkResult r = rig.run({"a"}, state);
  CHECK(r.code == util::ExitCode::kOk);
  CHECK(rig.console.has("a is up with RDMA still disabled"));
  CHECK(rig.saved_phase("a") == MacPhase::kDone);

  rig.prober.script["a"] = {disabled(), down(), {true, "", RdmaState::kEnabled, {}}};
  rig.prober.script["c"] = {enabled()};
  state = {};
  r = rig.run({"a", "c"}, state);
  CHECK(r.code == util::ExitCode::kCheckFailed);
  CHECK(r.failed == std::vector<std::string>{"a"});
  CHECK(r.enabled == std::vector<std::string>{"c"});  // went on to the next Mac
  CHECK(rig.console.has("ibv_devices lists no device"));
  CHECK(rig.saved_phase("a") == MacPhase::kFailed);
}

TEST_CASE("rdma enable: the plan walks only disabled Macs, resumed ones first") {
  auto s = t::mac_mesh(3, 2);
  t::disable_rdma(s, "m1");
  t::disable_rdma(s, "m3");
  s.hosts.push_back(t::lab_host("h9", 1));
  s.hosts.push_back(t::mac_host("old", 1));
  s.hosts.back().os.version = "15.6";
  s.problems.push_back({"gone", 3, "gone: unreachable"});
  EnableState saved;
  saved.macs["m3"] = {MacPhase::kWaitingDown, "", ""};
  saved.macs["m2"] = {MacPhase::kDone, "", ""};
  const EnablePlan plan = plan_enable(s, saved, {});
  CHECK(plan.walk == std::vector<std::string>{"m3", "m1"});
  CHECK(plan.enabled == std::vector<std::string>{"m2"});
  REQUIRE(plan.blocked.size() == 1);
  CHECK(plan.blocked[0].host == "old");
  CHECK(plan.blocked[0].reason == "macOS 15.6 is older than 26.2: update it first");
  REQUIRE(plan.unreachable.size() == 1);
  CHECK(plan.unreachable[0].host == "gone");
  CHECK(plan.linux_hosts == std::vector<std::string>{"h9"});
}

TEST_CASE("rdma enable: a Mac with Thunderbolt 4 only is blocked, not walked or 'enabled'") {
  const EnablePlan plan = plan_enable(t::tb4_only_pair(), EnableState{}, {});
  CHECK(plan.walk.empty());
  CHECK(plan.enabled == std::vector<std::string>{"m2"});
  REQUIRE(plan.blocked.size() == 1);
  CHECK(plan.blocked[0].host == "m1");
  CHECK(plan.blocked[0].reason ==
        "Thunderbolt 4 hardware only (RDMA enabled, no RDMA device, every link below 80 Gb/s): "
        "RDMA over Thunderbolt needs Thunderbolt 5, so macOS Recovery cannot help; it can use "
        "TCP over its cables");
}

TEST_CASE("rdma enable: a Mac whose RDMA state was not read: the rediscovery runs as printed") {
  discovery::ClusterState s;
  s.hosts = {t::mac_host("m1", 1)};
  s.hosts[0].rdma.state = RdmaState::kUnknown;
  const EnablePlan plan =
      plan_enable(s, EnableState{}, discovery::FixCommand{"--lab t3a", "my lab.json", ""});
  REQUIRE(plan.blocked.size() == 1);
  CHECK(plan.blocked[0].reason ==
        "its RDMA state was not read: run `clusterctl --lab t3a discover -o 'my lab.json'` again");
}

TEST_CASE("rdma enable: the state file: missing, saved, refused when foreign") {
  TempDir dir{"cc-rdma-enable"};
  const fs::path path = dir.path / "sub" / "state.json";
  auto empty = load_enable_state(path);
  REQUIRE(empty.ok());
  CHECK(empty->macs.empty());
  EnableState s;
  s.macs["a"] = {MacPhase::kWaitingUp, "2026-11-30T18:00:00Z", ""};
  REQUIRE(save_enable_state(s, path).ok());
  const auto j = nlohmann::json::parse(*util::read_file(path));
  CHECK(j["schema"] == "clusterctl.rdma-enable/1");
  CHECK(j["macs"]["a"]["phase"] == "waiting-up");
  CHECK(load_enable_state(path)->macs.at("a").phase == MacPhase::kWaitingUp);

  REQUIRE(util::write_file_atomic(path, R"({"schema": "other/1", "macs": {}})").ok());
  auto foreign = load_enable_state(path);
  REQUIRE_FALSE(foreign.ok());
  CHECK(foreign.error().message.find("delete " + path.string() + " to start over") !=
        std::string::npos);
  REQUIRE(util::write_file_atomic(
              path, R"({"schema": "clusterctl.rdma-enable/1", "macs": {"a": {"phase": "x"}}})")
              .ok());
  CHECK(load_enable_state(path).error().message.find("unknown phase 'x'") != std::string::npos);
  REQUIRE(util::write_file_atomic(path, "{").ok());
  CHECK_FALSE(load_enable_state(path).ok());

  CHECK(default_enable_state_path("/tmp/x/cluster.json") == fs::path("/tmp/x/rdma-enable.json"));
  const char* old = std::getenv("XDG_STATE_HOME");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("XDG_STATE_HOME", "/tmp/xdg", 1);
  CHECK(default_enable_state_path("") == fs::path("/tmp/xdg/clusterctl/rdma-enable.json"));
  if (old != nullptr) {
    ::setenv("XDG_STATE_HOME", saved.c_str(), 1);
  } else {
    ::unsetenv("XDG_STATE_HOME");
  }
}

TEST_CASE("rdma enable: re-probes through an executor: rdma_ctl status, then ibv_devices") {
  remote::FakeExecutor ex("a");
  ex.on("rdma_ctl status", {0, false, "disabled\n", "", {}});
  auto r = probe_mac_rdma(ex, milliseconds(1000));
  REQUIRE(r.ok());
  CHECK(r->reachable);
  CHECK(r->state == RdmaState::kDisabled);
  CHECK(ex.calls() == std::vector<std::string>{"rdma_ctl status"});

  ex.on("rdma_ctl status", {0, false, "enabled\n", "", {}});
  ex.on("ibv_devices",
        {0,
         false,
         "    device          \t   node GUID\n    ------          \t----------------\n"
         "    rdma_en6        \t0000000000000002\n    rdma_en2        \t0000000000000003\n",
         "",
         {}});
  r = probe_mac_rdma(ex, milliseconds(1000));
  REQUIRE(r.ok());
  CHECK(r->devices == std::vector<std::string>{"rdma_en2", "rdma_en6"});

  ex.on("rdma_ctl status", {127, false, "", "sh: rdma_ctl: command not found\n", {}});
  CHECK(probe_mac_rdma(ex, milliseconds(1000))->state == RdmaState::kUnsupported);
  ex.on("rdma_ctl status", {0, false, "maybe\n", "", {}});
  CHECK(probe_mac_rdma(ex, milliseconds(1000)).error().code == util::ExitCode::kCheckFailed);

  ex.fail_with(util::error(util::ExitCode::kUnreachable, "a: connection refused"));
  r = probe_mac_rdma(ex, milliseconds(1000));
  REQUIRE(r.ok());
  CHECK_FALSE(r->reachable);
  CHECK(r->unreachable == "a: connection refused");

  ExecutorProber prober({&ex}, milliseconds(1000));
  CHECK_FALSE(prober.probe("a")->reachable);
  CHECK(prober.probe("zz").error().code == util::ExitCode::kUsage);
}

TEST_CASE("rdma enable: the steps and the elapsed time format") {
  const auto steps = recovery_steps("m1");
  REQUIRE(steps.size() == 7);
  CHECK(steps[1] ==
        "2. Press and hold the power button until \"Loading startup options\" appears, then let "
        "go.");
  CHECK(steps[2] == "3. Click Options, then Continue.");
  CHECK(steps[3] == "4. If asked, pick a user and enter its password.");
  CHECK(steps[4] == "5. In the menu bar, choose Utilities > Terminal.");
  CHECK(format_elapsed(milliseconds(7'400)) == "0:07");
  CHECK(format_elapsed(milliseconds(754'000)) == "12:34");
  CHECK(format_elapsed(milliseconds(3'723'000)) == "1:02:03");
}

}  // namespace
}  // namespace cc::provision
