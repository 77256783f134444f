#include "provision/rdma_status.h"

#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "discovery/discover.h"
#include "remote/replay_executor.h"
#include "topology/test_states.h"

namespace cc::provision {
namespace {

using discovery::ClusterState;
using discovery::RdmaState;
using R = RdmaReadiness;
namespace t = topology::testing;

const std::string kBundle = std::string(CLUSTERCTL_TEST_DATA) + "/bundles/mac-pair";

ClusterState mac_pair() {
  remote::ReplayExecutor a(kBundle, "a"), b(kBundle, "b");
  std::vector<discovery::DiscoverTarget> targets{{&a, ""}, {&b, ""}};
  discovery::DiscoverOptions opts;
  opts.mode = discovery::ProbeMode::kEach;
  return discovery::discover(targets, opts, util::OutputStyle{});
}

const PortRdmaStatus& only_port(const HostRdmaStatus& h) {
  REQUIRE(h.ports.size() == 1);
  return h.ports.front();
}

TEST_CASE("rdma status: the fixes' commands name the state file, so they run as printed") {
  const RdmaStatus s = rdma_status(mac_pair(), cc::discovery::FixCommand{"", "my pair.json", ""});
  REQUIRE(s.hosts.size() == 2);
  CHECK(s.hosts[0].fix ==
        "enable RDMA once from macOS Recovery (it cannot be done over SSH): `clusterctl rdma "
        "enable 'my pair.json'` walks you through it");
  CHECK(only_port(s.hosts[1]).fix == "enable RDMA on a: `clusterctl rdma enable 'my pair.json'`");
}

TEST_CASE("rdma status: the Mac pair bundle: a disabled, b's cabled port waiting for peer a") {
  const RdmaStatus s = rdma_status(mac_pair());
  REQUIRE(s.hosts.size() == 2);
  CHECK(s.hosts[0].host == "a");
  CHECK(s.hosts[0].state == R::kDisabled);
  CHECK(s.hosts[0].fix.find("clusterctl rdma enable") != std::string::npos);
  CHECK(only_port(s.hosts[0]).state == R::kDisabled);
  CHECK(s.hosts[1].state == R::kReady);
  CHECK(s.hosts[1].devices == std::vector<std::string>{"rdma_en1", "rdma_en2", "rdma_en6"});
  const PortRdmaStatus& p = only_port(s.hosts[1]);
  CHECK(p.state == R::kWaitingForPeer);
  CHECK(p.waiting_for == "a");
  CHECK(p.end.interface == "en6");
  CHECK(p.peer.host == "a");
  CHECK(p.rdma_device == "rdma_en6");
  CHECK(p.port_state == "PORT_DOWN");
  CHECK(p.detail == "PORT_DOWN: its peer a has RDMA disabled");
  CHECK(exit_code(s) == util::ExitCode::kCheckFailed);

  const std::string text = render_text(s, util::OutputStyle{});
  CHECK(text.find("waiting-for-peer") != std::string::npos);
  CHECK(text.find("RDMA not ready: 1 of 2 hosts and 0 of 2 cabled ports ready") !=
        std::string::npos);
  CHECK(text.find("b receptacle 2 (en6): enable RDMA on a: `clusterctl rdma enable`") !=
        std::string::npos);

  const auto j = nlohmann::json::parse(render_json(s));
  CHECK(j["schema"] == "clusterctl.rdma-status/1");
  CHECK(j["ready"] == false);
  CHECK(j["exit_code"] == 1);
  CHECK(j["hosts"][0]["state"] == "disabled");
  CHECK(j["hosts"][0]["platform"] == "macos");
  CHECK(j["hosts"][1]["ports"][0]["state"] == "waiting-for-peer");
  CHECK(j["hosts"][1]["ports"][0]["waiting_for"] == "a");
  CHECK(j["hosts"][1]["ports"][0]["peer"]["host"] == "a");
  CHECK(j["hosts"][1]["ports"][0]["receptacle"] == 2);
  CHECK(j["hosts"][1]["ports"][0]["gid"].is_null());
}

TEST_CASE("rdma status: a healthy Mac mesh is ready, GIDs read or IPv4 on the interface") {
  auto s = t::mac_mesh(3, 2);
  RdmaStatus st = rdma_status(s);
  CHECK(exit_code(st) == util::ExitCode::kOk);
  for (const auto& h : st.hosts) {
    CHECK(h.state == R::kReady);
    CHECK(h.ports.size() == 2);
    for (const auto& p : h.ports) CHECK(p.state == R::kReady);
  }
  CHECK(render_text(st, util::OutputStyle{}).find("RDMA ready: 3 of 3 hosts and 6 of 6") !=
        std::string::npos);

  // GID table read: the IPv4-mapped GID makes it ready; without it, no-ipv4.
  auto& dev = t::host(s, "m1").rdma.devices[0].ports[0];
  dev.gids = {{0, "fe80::1"}, {1, "::ffff:10.231.0.5"}};
  st = rdma_status(s);
  CHECK(st.hosts[0].ports[0].state == R::kReady);
  CHECK(st.hosts[0].ports[0].gid == "::ffff:10.231.0.5");
  dev.gids = {{0, "fe80::1"}};
  st = rdma_status(s);
  CHECK(st.hosts[0].ports[0].state == R::kNoIpv4);
  CHECK(st.hosts[0].ports[0].fix.find("clusterctl network apply") != std::string::npos);
  dev.gids.clear();
  t::port(s, "m1", "en2").interface->ipv4.clear();  // no GID table, no IPv4
  st = rdma_status(s);
  CHECK(st.hosts[0].ports[0].state == R::kNoIpv4);
  CHECK(exit_code(st) == util::ExitCode::kCheckFailed);
}

TEST_CASE("rdma status: a 40 Gb/s cable is a TB4 link, even next to a disabled Mac") {
  ClusterState s;
  s.hosts = {t::mac_host("m1", 2), t::mac_host("m2", 2)};
  t::cable_macs(s, "m1", 1, "m2", 1, 40, 4);
  t::cable_macs(s, "m1", 2, "m2", 2);
  t::disable_rdma(s, "m2");
  const RdmaStatus st = rdma_status(s);
  REQUIRE(st.hosts[0].ports.size() == 2);
  CHECK(st.hosts[0].ports[0].state == R::kTb4Link);
  CHECK(st.hosts[0].ports[0].detail ==
        "40 Gb/s, Thunderbolt 4: TB4 link, RDMA impossible on this cable");
  CHECK(st.hosts[0].ports[1].state == R::kWaitingForPeer);
  CHECK(st.hosts[1].state == R::kDisabled);
  CHECK(st.hosts[1].ports[0].state == R::kTb4Link);
  CHECK(st.hosts[1].ports[1].state == R::kDisabled);
}

TEST_CASE("rdma status: a Mac with Thunderbolt 4 only is tb4-only, never sent to Recovery") {
  const RdmaStatus st = rdma_status(t::tb4_only_pair());
  REQUIRE(st.hosts.size() == 2);
  const HostRdmaStatus& m1 = st.hosts[0];
  CHECK(m1.state == R::kTb4Only);
  CHECK(to_string(m1.state) == std::string("tb4-only"));
  CHECK(m1.detail ==
        "rdma_ctl status: enabled, but no RDMA device and every Thunderbolt link is below 80 "
        "Gb/s: Thunderbolt 4 hardware only");
  CHECK(m1.fix ==
        "RDMA over Thunderbolt needs Thunderbolt 5 ports, which m1 does not have (enabling RDMA "
        "again cannot help): it can use TCP over its cables (`clusterctl network apply`); for "
        "RDMA, use a Mac with Thunderbolt 5 ports");
  CHECK(only_port(m1).state == R::kTb4Link);
  CHECK(only_port(m1).fix ==
        "m1 has Thunderbolt 4 hardware only (see tb4-only): this cable can carry TCP, never RDMA");
  CHECK(st.hosts[1].state == R::kReady);
  CHECK(only_port(st.hosts[1]).state == R::kTb4Link);
  CHECK(only_port(st.hosts[1]).fix ==
        "m1 has Thunderbolt 4 hardware only (see tb4-only): this cable can carry TCP, never RDMA");
  CHECK(exit_code(st) == util::ExitCode::kCheckFailed);
  const std::string text = render_text(st, util::OutputStyle{});
  CHECK(text.find("Recovery") == std::string::npos);
  CHECK(text.find("reboot") == std::string::npos);
  CHECK(text.find("tb4-only") != std::string::npos);
  CHECK(nlohmann::json::parse(render_json(st))["hosts"][0]["state"] == "tb4-only");

  // One Thunderbolt 5 link (or no link at all) and no device: stale state, reboot as before.
  auto s = t::tb4_only_pair();
  t::port(s, "m1", "en2").link_speed_gbps = 80;
  t::port(s, "m1", "en2").generation = 5;
  CHECK(rdma_status(s).hosts[0].state == R::kEnabledNoDevices);
  t::port(s, "m1", "en2").link_speed_gbps = 0;
  t::port(s, "m1", "en2").generation = 0;
  CHECK(rdma_status(s).hosts[0].state == R::kEnabledNoDevices);
}

TEST_CASE("rdma status: a port down although both Macs have RDMA") {
  auto s = t::mac_mesh(2, 1);
  auto& rp = t::host(s, "m1").rdma.devices[0].ports[0];
  rp.state = "PORT_DOWN";
  rp.active = false;
  const RdmaStatus st = rdma_status(s);
  CHECK(st.hosts[0].ports[0].state == R::kPortDown);
  CHECK(st.hosts[0].ports[0].fix.find("reseat the cable") != std::string::npos);
  CHECK(st.hosts[1].ports[0].state == R::kReady);
}

TEST_CASE("rdma status: a receptacle without a hardware port is no-interface, as verify-mesh") {
  auto s = t::mac_mesh(2, 1);
  t::drop_hardware_port(s, "m1", 1);
  const discovery::FixCommand fix{"", "my mesh.json", ""};
  RdmaStatus st = rdma_status(s, fix);
  const PortRdmaStatus& p = only_port(st.hosts[0]);
  CHECK(p.state == R::kNoInterface);
  CHECK(to_string(p.state) == std::string("no-interface"));
  CHECK(p.detail ==
        "no network interface: `networksetup -listallhardwareports` on m1 lists no "
        "\"Thunderbolt 1\" hardware port, so the port can get no address and no RDMA device");
  // The same command as verify-mesh's no-interface, from topology::no_hardware_port.
  CHECK(p.fix ==
        "on m1 run `sudo networksetup -detectnewhardware` (macOS then adds the port), then "
        "`clusterctl discover -o 'my mesh.json'`");
  // Even when the host's RDMA is off: enabling it would give this port no device.
  t::disable_rdma(s, "m1");
  st = rdma_status(s, fix);
  CHECK(st.hosts[0].state == R::kDisabled);
  CHECK(only_port(st.hosts[0]).state == R::kNoInterface);
}

TEST_CASE("rdma status: host states of a Mac") {
  auto s = t::mac_mesh(2, 1);
  auto& m1 = t::host(s, "m1");
  m1.os.version = "15.6.1";
  CHECK(rdma_status(s).hosts[0].state == R::kOsTooOld);
  CHECK(rdma_status(s).hosts[0].ports[0].state == R::kOsTooOld);
  m1.os.version = "26.2";
  m1.rdma.state = RdmaState::kUnsupported;
  CHECK(rdma_status(s).hosts[0].state == R::kUnsupported);
  m1.rdma.state = RdmaState::kUnknown;
  CHECK(rdma_status(s).hosts[0].state == R::kUnknown);
  m1.rdma.state = RdmaState::kEnabled;
  m1.rdma.devices.clear();
  const RdmaStatus st = rdma_status(s);
  CHECK(st.hosts[0].state == R::kEnabledNoDevices);
  CHECK(st.hosts[0].ports[0].state == R::kEnabledNoDevices);
  CHECK(to_string(st.hosts[0].state) == std::string("enabled-but-no-devices"));
}

TEST_CASE("rdma status: Linux hosts: no device, ready, port down, unreachable hosts exit 3") {
  auto s = t::lab_mesh(2);
  RdmaStatus st = rdma_status(s);
  CHECK(st.hosts[0].state == R::kNoDevice);
  CHECK(st.hosts[0].fix.find("--soft-roce") != std::string::npos);
  CHECK(st.hosts[0].ports[0].state == R::kNoDevice);
  // The lab's kernel has no RDMA subsystem: no Soft-RoCE either, and the host's fix says so
  // (its ports' rows point to the host's).
  CHECK(
      st.hosts[0].fix.starts_with("this kernel has no RDMA subsystem, so Soft-RoCE cannot be "
                                  "added here either"));
  // An RDMA subsystem without devices: Soft-RoCE can be added.
  s.hosts[0].rdma.state = RdmaState::kEnabled;
  st = rdma_status(s);
  CHECK(st.hosts[0].state == R::kNoDevice);
  CHECK(st.hosts[0].fix.starts_with("add Soft-RoCE devices"));
  CHECK(st.hosts[1].fix.starts_with("this kernel has no RDMA subsystem"));

  for (auto& h : s.hosts) {
    h.rdma.state = RdmaState::kEnabled;
    discovery::RdmaDevice d;
    d.name = "rxe_tb1";
    d.netdev = "tb1";
    d.ports.push_back({1, "ACTIVE", true, 1024, "Ethernet", {{1, "::ffff:10.231.0.1"}}});
    h.rdma.devices.push_back(d);
  }
  st = rdma_status(s);
  CHECK(st.hosts[0].state == R::kReady);
  CHECK(st.hosts[0].ports[0].state == R::kReady);
  CHECK(exit_code(st) == util::ExitCode::kOk);
  s.hosts[1].rdma.devices[0].ports[0] = {1, "DOWN", false, 1024, "Ethernet", {}};
  st = rdma_status(s);
  CHECK(st.hosts[1].ports[0].state == R::kPortDown);

  s.problems.push_back({"h3", 3, "h3: connection refused"});
  st = rdma_status(s);
  REQUIRE(st.hosts.size() == 3);
  CHECK(st.hosts[2].state == R::kUnreachable);
  CHECK(exit_code(st) == util::ExitCode::kUnreachable);
  const auto j = nlohmann::json(st);
  CHECK(j["hosts"][2]["platform"].is_null());
  CHECK(j["hosts"][2]["os"].is_null());
  CHECK(j["hosts"][0]["platform"] == "linux");
  // A destination refused before connecting is its own state and exit 2; 3 still wins.
  s.problems[0].exit_code = 2;
  st = rdma_status(s);
  CHECK(st.hosts[2].state == R::kBadDestination);
  CHECK(std::string(topology::to_string(st.hosts[2].state)) == "bad-destination");
  CHECK(exit_code(st) == util::ExitCode::kUsage);
  s.problems.push_back({"h4", 3, "h4: connection refused"});
  CHECK(exit_code(rdma_status(s)) == util::ExitCode::kUnreachable);
}

TEST_CASE("rdma status: macOS versions") {
  CHECK(macos_at_least("26.2", 26, 2));
  CHECK(macos_at_least("26.10", 26, 2));
  CHECK(macos_at_least("27.0", 26, 2));
  CHECK(macos_at_least("27", 26, 2));
  CHECK_FALSE(macos_at_least("26.1", 26, 2));
  CHECK_FALSE(macos_at_least("26", 26, 2));
  CHECK_FALSE(macos_at_least("15.6.1", 26, 2));
  CHECK(macos_at_least("", 26, 2));
  CHECK(macos_at_least("beta", 26, 2));
}

}  // namespace
}  // namespace cc::provision
