#include "provision/network_apply.h"

#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "discovery/discover.h"
#include "provision/network_plan.h"
#include "remote/fake_executor.h"
#include "remote/replay_executor.h"
#include "topology/checks.h"
#include "topology/test_states.h"
#include "util/interrupt.h"

using namespace cc::provision;
using cc::discovery::Cable;
using cc::discovery::CableEnd;
using cc::discovery::ClusterState;
using cc::discovery::LinkAddress;

namespace {

const cc::util::Ipv4Prefix kBase{(10u << 24) | (231u << 16), 16};

ClusterState pair(const char* os) {
  ClusterState s;
  for (int h = 1; h <= 2; ++h) {
    cc::discovery::HostFacts f;
    f.host = "h" + std::to_string(h);
    f.os.name = os;
    cc::discovery::Port p;
    p.interface = cc::discovery::NetInterface{};
    p.interface->name = std::string(os) == "macOS" ? "en6" : "tb1";
    p.interface->up = true;
    f.ports.push_back(p);
    s.hosts.push_back(f);
  }
  std::string port = s.hosts[0].ports[0].interface->name;
  Cable c;
  c.a = CableEnd{"h1", port, {}, {}};
  c.b = CableEnd{"h2", port, {}, {}};
  s.cables.push_back(c);
  return s;
}

std::vector<LinkAddress> plan_of(const ClusterState& s) {
  return *plan_network(s, {});
}

// The two MacBook Pros of tests/data/bundles/mac-pair: bridge0 up with en1, en2 and en6 as
// members (the macOS default), one cable en6 - en6.
ClusterState mac_pair_bundle() {
  const std::string bundle = std::string(CLUSTERCTL_TEST_DATA) + "/bundles/mac-pair";
  cc::remote::ReplayExecutor a(bundle, "a"), b(bundle, "b");
  std::vector<cc::discovery::DiscoverTarget> targets{{&a, ""}, {&b, ""}};
  cc::discovery::DiscoverOptions opts;
  opts.mode = cc::discovery::ProbeMode::kEach;
  return cc::discovery::discover(targets, opts, cc::util::OutputStyle{});
}

// What the commands do to the facts, as macOS would: bridge members leave, aliases appear.
void simulate(ClusterState& s, const std::vector<HostChanges>& changes) {
  for (const auto& hc : changes) {
    auto& h = cc::topology::testing::host(s, hc.host);
    for (const auto& c : hc.commands) {
      const auto& a = c.argv;
      if (a.size() == 4 && a[0] == "ifconfig" && a[2] == "deletem") {
        for (auto& i : h.interfaces) {
          if (i.name == a[1]) std::erase(i.members, a[3]);
        }
      } else if (a.size() == 7 && a[0] == "ifconfig" && a[2] == "inet" && a[6] == "alias") {
        cc::topology::testing::port(s, hc.host, a[1]).interface->ipv4.push_back(a[3]);
      }
    }
  }
}

std::vector<cc::topology::Finding> bridge_findings(const ClusterState& s) {
  cc::topology::ClusterGraph g(s);
  return cc::topology::testing::of_check(cc::topology::run_checks(g), "thunderbolt-bridge");
}

}  // namespace

TEST_CASE("network apply: Linux changes, then none once applied, stale addresses removed") {
  auto s = pair("Debian GNU/Linux");
  auto plan = plan_of(s);
  auto changes = network_changes(s, plan, kBase, false);
  REQUIRE(changes.size() == 2);
  REQUIRE(changes[0].commands.size() == 1);
  std::string cidr = plan[0].a_address + "/31";
  CHECK(changes[0].commands[0].argv == std::vector<std::string>{"ip", "addr", "add", cidr, "dev", "tb1"});
  CHECK(changes[0].commands[0].undo == std::vector<std::string>{"ip", "addr", "del", cidr, "dev", "tb1"});
  CHECK(changes[0].commands[0].why == "tb1: address " + cidr + " for the cable to h2 tb1");

  // Applied: the addresses are there, nothing to do.
  s.hosts[0].ports[0].interface->ipv4 = {plan[0].a_address};
  s.hosts[1].ports[0].interface->ipv4 = {plan[0].b_address};
  for (const auto& c : network_changes(s, plan, kBase, false)) CHECK(c.commands.empty());

  // An older plan's address on h2's port goes; a foreign address stays; a down port comes up.
  s.hosts[1].ports[0].interface->ipv4 = {"10.231.200.1", "172.16.0.1"};
  s.hosts[1].ports[0].interface->up = false;
  auto h2 = network_changes(s, plan, kBase, false)[1].commands;
  REQUIRE(h2.size() == 3);
  CHECK(h2[0].argv == std::vector<std::string>{"ip", "addr", "del", "10.231.200.1", "dev", "tb1"});
  CHECK(h2[1].argv[2] == "add");
  CHECK(h2[2].argv == std::vector<std::string>{"ip", "link", "set", "tb1", "up"});
}

TEST_CASE("network apply: macOS leaves the Thunderbolt Bridge and aliases a /30, --persist") {
  auto s = pair("macOS");
  cc::discovery::NetInterface bridge;
  bridge.name = "bridge0";
  bridge.up = true;
  bridge.members = {"en1", "en6"};
  s.hosts[0].interfaces.push_back(bridge);
  auto plan = plan_of(s);
  auto h1 = network_changes(s, plan, kBase, false)[0].commands;
  REQUIRE(h1.size() == 2);
  CHECK(h1[0].argv == std::vector<std::string>{"ifconfig", "bridge0", "deletem", "en6"});
  CHECK(h1[1].argv == std::vector<std::string>{"ifconfig", "en6", "inet", plan[0].a_address,
                                               "netmask", "255.255.255.252", "alias"});
  auto persistent = network_changes(s, plan, kBase, true)[0].commands;
  REQUIRE(persistent.size() == 5);
  CHECK(persistent[1].argv[0] == "networksetup");
  CHECK(persistent[3].argv == std::vector<std::string>{"networksetup", "-createnetworkservice",
                                                       "clusterctl en6", "en6"});
}

TEST_CASE("network apply: after apply the thunderbolt-bridge check passes (mac-pair bundle)") {
  ClusterState s = mac_pair_bundle();
  REQUIRE(s.hosts.size() == 2);
  REQUIRE(s.cables.size() == 1);
  // Before: only the cabled en6 loops; en1 and en2 (no cable) may stay in the bridge.
  auto before = bridge_findings(s);
  REQUIRE(before.size() == 2);
  CHECK(before[0].message ==
        "a: the Thunderbolt Bridge (bridge0) is active with en6 as a member: frames loop between "
        "the Macs of a mesh");
  CHECK(before[0].fix ==
        "run `clusterctl network apply` (it takes en6 out of the bridge), or make the bridge "
        "inactive (System Settings > Network > Thunderbolt Bridge > Make Inactive)");
  const auto plan = plan_of(s);
  auto changes = network_changes(s, plan, kBase, false);
  REQUIRE(changes.size() == 2);
  for (const auto& hc : changes) {
    REQUIRE(!hc.commands.empty());
    CHECK(hc.commands[0].argv == std::vector<std::string>{"ifconfig", "bridge0", "deletem", "en6"});
  }
  simulate(s, changes);
  CHECK(bridge_findings(s).empty());  // the advice was right: nothing left to fix
  for (const auto& hc : network_changes(s, plan, kBase, false)) CHECK(hc.commands.empty());
}

TEST_CASE("network apply: a cabled port in the bridge leaves it even when it is not planned") {
  auto s = pair("macOS");
  cc::discovery::NetInterface bridge;
  bridge.name = "bridge0";
  bridge.up = true;
  bridge.members = {"en6"};
  s.hosts[1].interfaces.push_back(bridge);
  REQUIRE(bridge_findings(s).size() == 1);
  auto changes = network_changes(s, {}, kBase, false);  // a plan without this cable
  REQUIRE(changes[1].commands.size() == 1);
  CHECK(changes[1].commands[0].argv ==
        std::vector<std::string>{"ifconfig", "bridge0", "deletem", "en6"});
  CHECK(changes[1].commands[0].undo ==
        std::vector<std::string>{"ifconfig", "bridge0", "addm", "en6"});
  simulate(s, changes);
  CHECK(bridge_findings(s).empty());
  // Linux hosts have no Thunderbolt Bridge: never a bridge command.
  auto l = pair("Debian GNU/Linux");
  l.hosts[1].interfaces.push_back(bridge);
  for (const auto& c : network_changes(l, {}, kBase, false)) CHECK(c.commands.empty());
}

TEST_CASE("network apply: a failed command rolls the host back, in reverse order") {
  HostChanges c{"h1", false,
                {{{"ip", "addr", "add", "10.0.0.1/31", "dev", "tb1"},
                  {"ip", "addr", "del", "10.0.0.1/31", "dev", "tb1"}, "a"},
                 {{"ip", "link", "set", "tb1", "up"}, {"ip", "link", "set", "tb1", "down"}, "b"},
                 {{"ip", "addr", "add", "10.0.0.3/31", "dev", "tb2"}, {}, "c"}}};
  cc::remote::FakeExecutor ex("h1");
  cc::remote::CommandResult ok;
  ok.exit_status = 0;
  cc::remote::CommandResult bad;
  bad.exit_status = 2;
  bad.err = "Cannot find device \"tb2\"\n";
  ex.on("sudo -n ip addr add 10.0.0.1/31 dev tb1", ok);
  ex.on("sudo -n ip link set tb1 up", ok);
  ex.on("sudo -n ip addr add 10.0.0.3/31 dev tb2", bad);
  ex.on("sudo -n ip link set tb1 down", ok);
  ex.on("sudo -n ip addr del 10.0.0.1/31 dev tb1", ok);
  auto r = apply_host(ex, c, Privilege::kSudo);
  CHECK(r.failed);
  CHECK(r.applied == 2);
  CHECK(r.message == "h1: `ip addr add 10.0.0.3/31 dev tb2` failed (exit status 2: Cannot find "
                     "device \"tb2\"); rolled back 2 of 2 earlier changes on this host");
  CHECK(ex.calls() == std::vector<std::string>{"sudo -n ip addr add 10.0.0.1/31 dev tb1",
                                               "sudo -n ip link set tb1 up",
                                               "sudo -n ip addr add 10.0.0.3/31 dev tb2",
                                               "sudo -n ip link set tb1 down",
                                               "sudo -n ip addr del 10.0.0.1/31 dev tb1"});
}

// Acts as the real executors do on Ctrl-C: a command run without `cancelled` while
// util::interrupted() is killed (kInterrupted). `ctrl_c_at` is the command line during which
// Ctrl-C comes.
class CtrlCExecutor final : public cc::remote::Executor {
 public:
  explicit CtrlCExecutor(std::string ctrl_c_at) : ctrl_c_at_(std::move(ctrl_c_at)) {}
  const std::string& host() const override { return host_; }
  cc::util::Status check() const override { return {}; }
  cc::util::Result<cc::remote::CommandResult> run(const cc::remote::Command& cmd,
                                                  const cc::remote::RunOptions& opts) override {
    const std::string line = cc::remote::shell_quote(cmd.argv);
    if (line == ctrl_c_at_) cc::util::set_interrupted(true);
    if (!opts.cancelled && cc::util::interrupted()) {
      return cc::util::Error{cc::util::ExitCode::kInterrupted,
                             "h1: interrupted (Ctrl-C); `" + line + "` was killed"};
    }
    calls.push_back(line);
    cc::remote::CommandResult ok;
    ok.exit_status = 0;
    return ok;
  }
  cc::util::Status upload(const std::filesystem::path&, const std::string&, unsigned,
                          std::chrono::milliseconds) override {
    return {};
  }
  std::vector<std::string> calls;

 private:
  std::string host_ = "h1";
  std::string ctrl_c_at_;
};

TEST_CASE("network apply: Ctrl-C is no failure, the host is still rolled back") {
  HostChanges c{"h1",
                false,
                {{{"ip", "addr", "add", "10.0.0.1/31", "dev", "tb1"},
                  {"ip", "addr", "del", "10.0.0.1/31", "dev", "tb1"},
                  "a"},
                 {{"ip", "link", "set", "tb1", "up"}, {"ip", "link", "set", "tb1", "down"}, "b"},
                 {{"ip", "addr", "add", "10.0.0.3/31", "dev", "tb2"}, {}, "c"}}};
  CtrlCExecutor ex("sudo -n ip addr add 10.0.0.3/31 dev tb2");
  auto r = apply_host(ex, c, Privilege::kSudo);
  cc::util::set_interrupted(false);
  CHECK(r.interrupted);
  CHECK_FALSE(r.failed);
  CHECK(r.message ==
        "h1: interrupted (Ctrl-C) before `ip addr add 10.0.0.3/31 dev tb2`; rolled "
        "back 2 of 2 earlier changes on this host");
  CHECK(ex.calls == std::vector<std::string>{
                        "sudo -n ip addr add 10.0.0.1/31 dev tb1", "sudo -n ip link set tb1 up",
                        "sudo -n ip link set tb1 down", "sudo -n ip addr del 10.0.0.1/31 dev tb1"});
}

TEST_CASE("network verify: pings both ways per cable, and the RDMA GID of the address") {
  auto s = pair("Debian GNU/Linux");
  auto plan = plan_of(s);
  s.hosts[0].ports[0].interface->ipv4 = {plan[0].a_address};  // applied: both ends have theirs
  s.hosts[1].ports[0].interface->ipv4 = {plan[0].b_address};
  CHECK(link_pings_of(s, plan, "h1")[0].argv ==
        std::vector<std::string>{"ping", "-n", "-c", "1", "-W", "2", "-I", "tb1", plan[0].b_address});
  std::vector<cc::discovery::ProbeOutputs> pings(2);
  pings[0].by_key[link_pings_of(s, plan, "h1")[0].key()] = {"1 received", "", 0};
  pings[1].by_key[link_pings_of(s, plan, "h2")[0].key()] = {"0 received", "", 1};
  auto checks = check_links(s, plan, pings);
  REQUIRE(checks.size() == 1);
  CHECK(checks[0].a_to_b);
  CHECK_FALSE(checks[0].b_to_a);
  CHECK(checks[0].b_problem == "no reply from " + plan[0].a_address + " over h2 tb1");
  CHECK_FALSE(checks[0].ok());

  // An RDMA device on h1's end without the IPv4-mapped GID.
  plan[0].a.rdma_device = "rxe_tb1";
  cc::discovery::RdmaDevice d;
  d.name = "rxe_tb1";
  d.ports.push_back({1, "ACTIVE", true, 1024, "Ethernet", {{0, "fe80::1"}}});
  s.hosts[0].rdma.devices.push_back(d);
  pings[1].by_key[link_pings_of(s, plan, "h2")[0].key()] = {"1 received", "", 0};
  checks = check_links(s, plan, pings);
  CHECK(checks[0].a_problem == "h1 rxe_tb1 has no GID ::ffff:" + plan[0].a_address +
                                   " (the IPv4-mapped GID of its address)");
  s.hosts[0].rdma.devices[0].ports[0].gids.push_back({1, "::ffff:" + plan[0].a_address});
  CHECK(check_links(s, plan, pings)[0].ok());
}

TEST_CASE("network verify: a failed ping names the end that lost its planned address") {
  // mlx#3755-like: pings fine on some cables, not on one whose end lost its address (removed,
  // or its interface reset); before, both directions said only "no reply from ...".
  auto s = pair("Debian GNU/Linux");
  auto plan = plan_of(s);
  s.hosts[0].ports[0].interface->ipv4 = {plan[0].a_address};  // h2 tb1 has none
  std::vector<cc::discovery::ProbeOutputs> pings(2);
  pings[0].by_key[link_pings_of(s, plan, "h1")[0].key()] = {"0 received", "", 1};
  pings[1].by_key[link_pings_of(s, plan, "h2")[0].key()] = {"0 received", "", 1};
  // The fix runs as printed: the state file quoted, with the lab in use.
  auto checks =
      check_links(s, plan, pings, cc::discovery::FixCommand{"--lab t3a", "my c.json", ""});
  REQUIRE(checks.size() == 1);
  CHECK(checks[0].a_problem == "no reply from " + plan[0].b_address + " over h1 tb1: h2 tb1 does "
                               "not have " + plan[0].b_address + ", its planned address: run "
                               "`clusterctl network apply --lab t3a 'my c.json'`");
  CHECK(checks[0].b_problem == "no reply from " + plan[0].a_address + " over h2 tb1: h2 tb1 does "
                               "not have " + plan[0].b_address + ", its planned address: run "
                               "`clusterctl network apply --lab t3a 'my c.json'`");
  // Both ends have theirs: the ping failed for another reason, said as before.
  s.hosts[1].ports[0].interface->ipv4 = {plan[0].b_address};
  checks = check_links(s, plan, pings);
  CHECK(checks[0].a_problem == "no reply from " + plan[0].b_address + " over h1 tb1");
}

TEST_CASE("network apply: privileges are root, passwordless sudo, or none") {
  cc::remote::CommandResult root{0, false, "0\n", "", {}, false};
  cc::remote::CommandResult user{0, false, "501\n", "", {}, false};
  cc::remote::CommandResult sudo_ok{0, false, "", "", {}, false};
  cc::remote::CommandResult sudo_no{1, false, "", "sudo: a password is required\n", {}, false};
  cc::remote::FakeExecutor a("a"), b("b"), c("c");
  a.on("id -u", root);
  b.on("id -u", user);
  b.on("sudo -n true", sudo_ok);
  c.on("id -u", user);
  c.on("sudo -n true", sudo_no);
  CHECK(*detect_privilege(a) == Privilege::kRoot);
  CHECK(*detect_privilege(b) == Privilege::kSudo);
  CHECK(*detect_privilege(c) == Privilege::kNone);
  CHECK(with_privilege(Privilege::kRoot, {"ip", "link"}) == std::vector<std::string>{"ip", "link"});
  CHECK(with_privilege(Privilege::kSudo, {"ip"}) == std::vector<std::string>{"sudo", "-n", "ip"});
}
