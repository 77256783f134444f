#include <doctest/doctest.h>

#include "topology/checks.h"
#include "topology/rdma_port.h"
#include "topology/test_states.h"

namespace cc::topology {
namespace {

using discovery::RdmaState;
using Strings = std::vector<std::string>;
using testing::check_ids;
using testing::mac_mesh;
using testing::of_check;

std::vector<Finding> checks_of(const discovery::ClusterState& s) {
  ClusterGraph g(s);
  return run_checks(g);
}

TEST_CASE("topology mac checks: a healthy 3-Mac mesh has no finding") {
  CHECK(checks_of(mac_mesh(3, 2)).empty());
  CHECK(checks_of(mac_mesh(4, 3)).empty());
}

TEST_CASE("topology mac checks: RDMA disabled on one Mac, its peers' ports down") {
  auto s = mac_mesh(3, 2);
  testing::disable_rdma(s, "m1");
  auto f = checks_of(s);
  CHECK(check_ids(f) == Strings{"rdma-disabled", "rdma-port-down", "rdma-port-down"});
  REQUIRE(f.size() == 3);
  CHECK(f[0].severity == Severity::kFail);
  CHECK(f[0].hosts == Strings{"m1"});
  CHECK(f[0].message == "m1: RDMA is disabled (rdma_ctl status: disabled)");
  CHECK(f[0].fix ==
        "enable it once from macOS Recovery (it cannot be done over SSH): `clusterctl rdma "
        "enable` walks you through it");
  CHECK(f[1].message == "m2 rdma_en2 is PORT_DOWN because its peer m1 has RDMA disabled");
  CHECK(f[1].hosts == Strings{"m1", "m2"});
  REQUIRE(f[1].ports.size() == 1);
  CHECK(f[1].ports[0].interface == "en2");
  CHECK(f[1].fix == "enable RDMA on m1 (see rdma-disabled)");
  CHECK(f[2].message == "m3 rdma_en2 is PORT_DOWN because its peer m1 has RDMA disabled");
}

TEST_CASE("topology mac checks: the Thunderbolt peer item is evidence of a disabled peer") {
  auto s = mac_mesh(2, 1);
  testing::disable_rdma(s, "m2");
  s.hosts[1].rdma.state = RdmaState::kUnknown;  // m2's own rdma_ctl output is missing
  auto f = checks_of(s);
  CHECK(check_ids(f) == Strings{"rdma-unknown", "rdma-port-down"});
  CHECK(f[1].message == "m1 rdma_en2 is PORT_DOWN because its peer m2 has RDMA disabled");

  s.hosts[0].rdma.devices.clear();  // m1's ibv_devinfo output is missing too
  s.hosts[0].ports[0].rdma_device.reset();
  f = checks_of(s);
  REQUIRE(f.size() == 2);
  CHECK(f[1].message ==
        "m1 receptacle 1 (en2): its peer m2 has RDMA disabled, so this cable carries no RDMA");
}

TEST_CASE("topology mac checks: a port down although both Macs have RDMA") {
  auto s = mac_mesh(2, 1);
  s.hosts[0].rdma.devices[0].ports[0] = {1, "PORT_DOWN", false, 4096, "Thunderbolt", {}};
  auto f = checks_of(s);
  REQUIRE(f.size() == 1);
  CHECK(f[0].check == "rdma-port-down");
  CHECK(f[0].message == "m1 rdma_en2 is PORT_DOWN although its peer m2's RDMA is ready");
  CHECK(f[0].fix ==
        "reseat the cable m1 receptacle 1 (en2) - m2 receptacle 1 (en2), then run `clusterctl "
        "discover` again");
}

TEST_CASE("topology mac checks: RDMA unsupported or unknown") {
  auto s = mac_mesh(2, 1);
  s.hosts[0].rdma.state = RdmaState::kUnsupported;
  s.hosts[0].os = {"macOS", "15.1", "24B83"};
  auto f = checks_of(s);
  REQUIRE(!f.empty());
  CHECK(f[0].check == "rdma-unsupported");
  CHECK(f[0].severity == Severity::kFail);
  CHECK(f[0].message ==
        "m1: no RDMA support (no rdma_ctl; macOS 15.1 24B83): RDMA over Thunderbolt needs Apple "
        "silicon, macOS 26.2 or later and Thunderbolt 5");
  CHECK(of_check(f, "macos-build").size() == 1);
}

TEST_CASE("topology mac checks: a 40 Gb/s cable is a TB4 link, RDMA impossible") {
  auto s = mac_mesh(2, 2);
  testing::cable_macs(s, "m1", 2, "m2", 2, 40, 4);
  auto f = checks_of(s);
  CHECK(check_ids(f) == Strings{"multi-rail", "tb4-link"});
  REQUIRE(f.size() == 2);
  CHECK(f[1].severity == Severity::kFail);
  CHECK(f[1].hosts == Strings{"m1", "m2"});
  CHECK(f[1].message ==
        "m1 receptacle 2 (en3) - m2 receptacle 2 (en3): TB4 link, RDMA impossible (40 Gb/s, "
        "Thunderbolt 4)");

  // Both Macs' other ports link at 80 Gb/s: the cable is the likelier cause, and those ports,
  // cabled to each other, are never offered as where to move this cable.
  CHECK(f[1].fix ==
        "likely the cable: a Thunderbolt 4 or USB cable links at 40 Gb/s even between "
        "Thunderbolt 5 ports, and m1 and m2 have Thunderbolt 5 ports (m1 receptacle 1 (en2): "
        "links at 80 Gb/s, m2 receptacle 1 (en2): links at 80 Gb/s): use a Thunderbolt 5 cable "
        "(80 Gb/s) on the same ports");
  // A free Thunderbolt 5 port is offered; the cabled ones still are not.
  auto free = mac_mesh(2, 3);
  testing::cable_macs(free, "m1", 2, "m2", 2, 40, 4);
  testing::port(free, "m2", "en4").idle_speed_gbps = 120;
  auto ff = of_check(checks_of(free), "tb4-link");
  REQUIRE(ff.size() == 1);
  CHECK(ff[0].fix.ends_with("; free Thunderbolt 5 ports (no cable in them; ports cabled to other "
                            "Macs are left out: moving this cable there would break that pair): "
                            "m2 receptacle 3 (en4): Up to 120 Gb/s"));
  CHECK(ff[0].fix.find("links at 80 Gb/s, m2") != std::string::npos);  // the proof, not advice

  // Generation 3 at an unknown speed: speed 0 means unknown, no finding.
  auto u = mac_mesh(2, 1);
  u.cables[0].link_speed_gbps = 0;
  u.cables[0].generation = 3;
  CHECK(checks_of(u).empty());
  u.cables[0].link_speed_gbps = 80;
  CHECK(check_ids(checks_of(u)) == Strings{"tb4-link"});
}

TEST_CASE("topology mac checks: a TB4 link names the ports system_profiler shows as TB4 or TB5") {
  // m1 has Thunderbolt 4 ports that list rdma_en devices (exo#1813): its idle ports say "Up to
  // 40 Gb/s"; m2's idle port says "Up to 120 Gb/s". Their cable links at 40 Gb/s.
  auto s = mac_mesh(2, 3);
  s.cables[0].link_speed_gbps = 40;
  s.cables[0].generation = 4;
  for (const char* h : {"m1", "m2"}) {
    testing::port(s, h, "en2").link_speed_gbps = 40;
    testing::port(s, h, "en2").generation = 4;
  }
  testing::port(s, "m1", "en3").idle_speed_gbps = 40;
  testing::port(s, "m1", "en4").idle_speed_gbps = 40;
  testing::port(s, "m2", "en3").idle_speed_gbps = 120;
  auto f = of_check(checks_of(s), "tb4-link");
  REQUIRE(f.size() == 1);
  CHECK(f[0].fix ==
        "use a Thunderbolt 5 cable between Thunderbolt 5 ports on both Macs (80 Gb/s); "
        "system_profiler shows m1 receptacle 2 (en3): Up to 40 Gb/s, m1 receptacle 3 (en4): Up "
        "to 40 Gb/s as Thunderbolt 4: those ports cannot do RDMA over Thunderbolt 5; "
        "free Thunderbolt 5 ports (no cable in them; ports cabled to other Macs are left out: "
        "moving this cable there would break that pair): m2 receptacle 2 (en3): Up to 120 Gb/s");
  // rdma status gives the cable the same fix (provision/rdma_status.cc).
  CHECK(f[0].fix == tb4_link_fix(testing::host(s, "m1"), testing::host(s, "m2")));

  // Neither Mac shows a Thunderbolt 5 port: said, rather than a port to move to.
  testing::port(s, "m2", "en3").idle_speed_gbps = 40;
  f = of_check(checks_of(s), "tb4-link");
  REQUIRE(f.size() == 1);
  CHECK(f[0].fix.find("; system_profiler shows no Thunderbolt 5 port on these Macs") !=
        std::string::npos);
  CHECK(f[0].fix.find("m2 receptacle 2 (en3): Up to 40 Gb/s as Thunderbolt 4") !=
        std::string::npos);

  // Every port cabled below 80 Gb/s: system_profiler shows only the negotiated speed, which
  // says nothing of the port: no port is named.
  for (auto& h : s.hosts) {
    for (auto& p : h.ports) p.idle_speed_gbps = 0;
  }
  f = of_check(checks_of(s), "tb4-link");
  REQUIRE(f.size() == 1);
  CHECK(f[0].fix == "use a Thunderbolt 5 cable between Thunderbolt 5 ports on both Macs (80 Gb/s)");
}

TEST_CASE("topology mac checks: a Mac with Thunderbolt 4 only: tb4-only, TCP, no Recovery") {
  auto f = checks_of(testing::tb4_only_pair());
  CHECK(check_ids(f) == Strings{"tb4-only", "tb4-link"});
  REQUIRE(f.size() == 2);
  CHECK(f[0].severity == Severity::kFail);
  CHECK(f[0].hosts == Strings{"m1"});
  CHECK(f[0].message ==
        "m1: Thunderbolt 4 hardware only: RDMA is enabled, but there is no RDMA device and every "
        "Thunderbolt link is below 80 Gb/s; RDMA over Thunderbolt needs Thunderbolt 5 ports "
        "(enabling it again cannot help)");
  CHECK(f[0].fix ==
        "m1 can use TCP over its cables (`clusterctl network apply` addresses them); for RDMA, "
        "use a Mac with Thunderbolt 5 ports");
  CHECK(f[1].fix == "m1 has Thunderbolt 4 hardware only (see tb4-only): this cable can carry "
                    "TCP, never RDMA");
  for (const auto& x : f) CHECK(x.fix.find("Recovery") == std::string::npos);
}

TEST_CASE("topology mac checks: Thunderbolt Bridge active with the ports as members") {
  auto s = mac_mesh(3, 2);
  s.hosts[1].interfaces[0].up = true;
  auto f = checks_of(s);
  REQUIRE(f.size() == 1);
  CHECK(f[0].check == "thunderbolt-bridge");
  CHECK(f[0].hosts == Strings{"m2"});
  CHECK(f[0].ports.size() == 2);
  CHECK(f[0].message ==
        "m2: the Thunderbolt Bridge (bridge0) is active with en2, en3 as members: frames loop "
        "between the Macs of a mesh");

  s.hosts[1].interfaces[0].members = {"en0"};  // Ethernet only: no Thunderbolt port in it
  CHECK(checks_of(s).empty());
}

TEST_CASE("topology mac checks: a cabled port without IPv4") {
  auto s = mac_mesh(2, 2);
  s.hosts[0].ports[0].interface->ipv4.clear();
  s.hosts[0].ports[1].interface->ipv4.clear();  // receptacle 2 has no cable: fine
  auto f = checks_of(s);
  REQUIRE(f.size() == 1);
  CHECK(f[0].check == "no-ipv4");
  CHECK(f[0].message ==
        "m1 receptacle 1 (en2) has no IPv4 address: no IPv4-mapped GID, so RDMA queue pairs "
        "fail (errno 22 moving to RTR)");
  CHECK(f[0].fix == "`clusterctl network apply` addresses every cabled port");
}

TEST_CASE("topology mac checks: a receptacle without a hardware port: no-interface, said once") {
  auto s = mac_mesh(3, 2);
  testing::drop_hardware_port(s, "m1", 1);  // cabled to m2
  const discovery::FixCommand fix{"", "my mesh.json", ""};
  ClusterGraph g(s);
  CheckOptions opts;
  opts.fix = fix;
  auto f = run_checks(g, opts);
  // Only no-interface: no one-source-cable ("check that both interfaces are up": there is
  // none), no no-ipv4, no rdma-port-down.
  CHECK(check_ids(f) == Strings{"no-interface"});
  REQUIRE(f.size() == 1);
  CHECK(f[0].message ==
        "m1 receptacle 1 is cabled but has no network interface: `networksetup "
        "-listallhardwareports` on m1 lists no \"Thunderbolt 1\" hardware port, so the port can "
        "get no address and no RDMA device");
  CHECK(f[0].fix ==
        "on m1 run `sudo networksetup -detectnewhardware` (macOS then adds the port), then "
        "`clusterctl discover -o 'my mesh.json'`");
  CHECK(f[0].fix == no_hardware_port(f[0].ports.at(0), fix).fix);
}

TEST_CASE("topology mac checks: the fixes' commands name the cluster as given") {
  const discovery::FixCommand fix{"--lab t3a", "my lab.json", ""};
  auto run = [&](const discovery::ClusterState& s) {
    ClusterGraph g(s);
    std::vector<Finding> out;
    run_mac_checks(g, fix, out);
    return out;
  };
  auto disabled = mac_mesh(3, 2);
  testing::disable_rdma(disabled, "m1");
  CHECK(of_check(run(disabled), "rdma-disabled")[0].fix ==
        "enable it once from macOS Recovery (it cannot be done over SSH): `clusterctl rdma "
        "enable --lab t3a 'my lab.json'` walks you through it");
  auto down = mac_mesh(2, 1);
  down.hosts[0].rdma.devices[0].ports[0] = {1, "PORT_DOWN", false, 4096, "Thunderbolt", {}};
  CHECK(of_check(run(down), "rdma-port-down")[0].fix ==
        "reseat the cable m1 receptacle 1 (en2) - m2 receptacle 1 (en2), then run `clusterctl "
        "--lab t3a discover -o 'my lab.json'` again");
  auto unknown = mac_mesh(2, 1);
  unknown.hosts[0].rdma.state = RdmaState::kUnknown;
  CHECK(of_check(run(unknown), "rdma-unknown")[0].fix ==
        "run `clusterctl --lab t3a discover -o 'my lab.json'` again");
  auto bridged = mac_mesh(3, 2);
  bridged.hosts[1].interfaces[0].up = true;
  CHECK(of_check(run(bridged), "thunderbolt-bridge")[0].fix.starts_with(
      "run `clusterctl network apply --lab t3a 'my lab.json'` (it takes en2, en3 out of the "
      "bridge)"));
  auto no_ip = mac_mesh(2, 2);
  no_ip.hosts[0].ports[0].interface->ipv4.clear();
  CHECK(of_check(run(no_ip), "no-ipv4")[0].fix ==
        "`clusterctl network apply --lab t3a 'my lab.json'` addresses every cabled port");
}

TEST_CASE("topology mac checks: a cable on a Mac Studio's en2") {
  auto s = mac_mesh(2, 1);
  s.hosts[1].model = "Mac16,9";
  auto f = checks_of(s);
  REQUIRE(f.size() == 1);
  CHECK(f[0].check == "studio-en2");
  CHECK(f[0].severity == Severity::kWarn);
  CHECK(f[0].message ==
        "m2 receptacle 1 (en2) is cabled: on a Mac Studio the Thunderbolt 5 port next to "
        "Ethernet (en2) does not carry RDMA (reported by exo)");
}

TEST_CASE("topology mac checks: different macOS builds") {
  auto s = mac_mesh(3, 2);
  s.hosts[2].os.build = "25D5";
  auto f = checks_of(s);
  REQUIRE(f.size() == 1);
  CHECK(f[0].check == "macos-build");
  CHECK(f[0].hosts == Strings{"m1", "m2", "m3"});
  CHECK(f[0].message == "macOS builds differ: 25C56 on m1, m2; 25D5 on m3");
}

TEST_CASE("topology mac checks: Linux hosts get none of the Mac checks") {
  auto s = testing::lab_mesh(2);
  s.hosts[0].interfaces.push_back({"bridge0", "", true, true, 1500, {}, {}, {}, {"tb1"}, ""});
  CHECK(check_ids(checks_of(s)) == Strings{"no-rdma", "no-rdma"});
}

}  // namespace
}  // namespace cc::topology
