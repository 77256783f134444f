#include "topology/checks.h"

#include <algorithm>

#include <doctest/doctest.h>

#include "topology/test_states.h"

namespace cc::topology {
namespace {

using discovery::CableSource;
using discovery::Peer;
using Strings = std::vector<std::string>;
using testing::check_ids;
using testing::lab_mesh;
using testing::of_check;

TEST_CASE("topology checks: a complete lab mesh only lacks RDMA (warnings)") {
  auto s = lab_mesh(4);
  ClusterGraph g(s);
  auto f = run_checks(g);
  CHECK(check_ids(f) == Strings{"no-rdma", "no-rdma", "no-rdma", "no-rdma"});
  REQUIRE(f.size() == 4);
  CHECK(f[0].severity == Severity::kWarn);
  CHECK(f[0].hosts == Strings{"h1"});
  CHECK(f[0].message ==
        "h1 has no RDMA device (rdma status: no-device): collectives fall back to TCP");
  // The lab's kernel has no RDMA subsystem (as on this project's CI machine): no Soft-RoCE.
  CHECK(f[0].fix ==
        "no RDMA subsystem in its kernel: boot one with the rdma_rxe module, then "
        "`clusterctl rdma enable --soft-roce`");

  s.hosts[2].rdma.state = discovery::RdmaState::kEnabled;
  s.hosts[2].rdma.devices.push_back({"rxe_tb1", "InfiniBand (0)", "", "tb1", {}});
  ClusterGraph g2(s);
  CHECK(of_check(run_checks(g2), "no-rdma").size() == 3);

  // A kernel with an RDMA subsystem but no device: Soft-RoCE can be added.
  s.hosts[0].rdma.state = discovery::RdmaState::kEnabled;
  ClusterGraph g3(s);
  auto f3 = of_check(run_checks(g3), "no-rdma");
  REQUIRE(f3.size() == 3);
  CHECK(f3[0].hosts == Strings{"h1"});
  CHECK(f3[0].fix == "`clusterctl rdma enable --soft-roce` adds Soft-RoCE devices (rdma_rxe)");
  CHECK(f3[1].fix.starts_with("no RDMA subsystem in its kernel"));
}

// What verify-mesh of a lab's state file prints must run as printed: `clusterctl rdma enable
// --soft-roce` alone, on a lab, exits 2 (it does not know the hosts).
TEST_CASE("topology checks: the fixes' commands name the cluster as CheckOptions::fix says") {
  const discovery::FixCommand lab{"--lab default", "my cluster.json", ""};
  auto s = lab_mesh(3);
  ClusterGraph g(s);
  auto f = of_check(run_checks(g, CheckOptions{std::nullopt, lab}), "no-rdma");
  REQUIRE(f.size() == 3);
  CHECK(f[0].fix ==
        "no RDMA subsystem in its kernel: boot one with the rdma_rxe module, then `clusterctl "
        "rdma enable --lab default 'my cluster.json' --soft-roce`");
  s.hosts[0].rdma.state = discovery::RdmaState::kEnabled;
  ClusterGraph g2(s);
  CHECK(of_check(run_checks(g2, CheckOptions{std::nullopt, lab}), "no-rdma")[0].fix ==
        "`clusterctl rdma enable --lab default 'my cluster.json' --soft-roce` adds Soft-RoCE "
        "devices (rdma_rxe)");

  s.cables[0].seen_from_b = false;  // the rediscovery writes the same file, on the same lab
  ClusterGraph g3(s);
  auto one = of_check(run_checks(g3, CheckOptions{std::nullopt, lab}), "one-sided-cable");
  REQUIRE(one.size() == 1);
  CHECK(one[0].fix ==
        "check that h2 tb1 is up with carrier, then run `clusterctl --lab default discover -o "
        "'my cluster.json'` again; reseat the cable if it persists");
  // A live discovery (no file): the hosts it was run on.
  const discovery::FixCommand live{"--lab default", "", "h1,h2,h3"};
  CHECK(of_check(run_checks(g3, CheckOptions{std::nullopt, live}), "one-sided-cable")[0].fix ==
        "check that h2 tb1 is up with carrier, then run `clusterctl --lab default discover "
        "--hosts h1,h2,h3` again; reseat the cable if it persists");
}

TEST_CASE("topology checks: missing h2-h4 and doubled h1-h3 in a 5-host lab") {
  auto s = lab_mesh(5, {{2, 4}}, {{1, 3}});
  ClusterGraph g(s);
  auto f = run_checks(g);
  auto missing = of_check(f, "missing-cable");
  REQUIRE(missing.size() == 1);
  CHECK(missing[0].severity == Severity::kFail);
  CHECK(missing[0].hosts == Strings{"h2", "h4"});
  CHECK(missing[0].message ==
        "h2 and h4 have no direct cable (RDMA cannot route: every pair of a mesh needs its own "
        "cable)");
  auto multi = of_check(f, "multi-rail");
  REQUIRE(multi.size() == 1);
  CHECK(multi[0].severity == Severity::kInfo);
  CHECK(multi[0].hosts == Strings{"h1", "h3"});
  CHECK(multi[0].ports.size() == 4);
  CHECK(multi[0].message ==
        "h1 and h3 are joined by 2 cables (multi-rail): h1 tb2 - h3 tb1, h1 tb5 - h3 tb5");
  CHECK(of_check(f, "too-few-ports").empty());
  CHECK(of_check(f, "one-sided-cable").empty());
  CHECK(of_check(f, "one-source-cable").empty());
}

TEST_CASE("topology checks: a cable whose two ends have different MTUs") {
  // NVIDIA/nccl#1524: two servers with different MTUs; a lab where `ip link set tb2 mtu 9000`
  // on h3 alone left verify-mesh at "full mesh" while 3000-byte pings from h3 were lost.
  auto s = lab_mesh(3);
  testing::port(s, "h3", "tb2").interface->mtu = 9000;  // the h2 - h3 cable
  ClusterGraph g(s);
  auto f = of_check(run_checks(g), "mtu-mismatch");
  REQUIRE(f.size() == 1);
  CHECK(f[0].severity == Severity::kFail);
  CHECK(f[0].hosts == Strings{"h2", "h3"});
  CHECK(f[0].ports.size() == 2);
  CHECK(f[0].message ==
        "h2 tb2 - h3 tb2: MTU 1500 on h2 tb2 but 9000 on h3 tb2: frames longer than 1500 bytes "
        "from h3 are dropped (large pings, UDP and RDMA stall; TCP hides it)");
  CHECK(f[0].fix ==
        "give both ends one MTU: on h3 `sudo ip link set dev tb2 mtu 1500` (or raise the other "
        "end to 9000)");

  // On a Mac, networksetup names the interface.
  auto m = testing::mac_mesh(2, 1);
  testing::port(m, "m1", "en2").interface->mtu = 9000;
  ClusterGraph gm(m);
  auto fm = of_check(run_checks(gm), "mtu-mismatch");
  REQUIRE(fm.size() == 1);
  CHECK(fm[0].fix ==
        "give both ends one MTU: on m1 `sudo networksetup -setMTU en2 1500` (or raise the other "
        "end to 9000)");

  // An interface name as a host reported it reaches the advice shell-quoted.
  auto q = testing::mac_mesh(2, 1);
  testing::port(q, "m1", "en2").interface->mtu = 9000;
  testing::port(q, "m1", "en2").interface->name = "en2$(id)";
  for (auto& c : q.cables) {
    for (auto* end : {&c.a, &c.b}) {
      if (end->host == "m1" && end->interface == "en2") end->interface = "en2$(id)";
    }
  }
  ClusterGraph gq(q);
  auto fq = of_check(run_checks(gq), "mtu-mismatch");
  REQUIRE(fq.size() == 1);
  CHECK(fq[0].fix ==
        "give both ends one MTU: on m1 `sudo networksetup -setMTU 'en2$(id)' 1500` (or raise the "
        "other end to 9000)");

  // The same MTU on both ends, or one not reported (0), is no finding.
  testing::port(s, "h2", "tb2").interface->mtu = 9000;
  testing::port(s, "h1", "tb1").interface->mtu = 0;
  ClusterGraph g2(s);
  CHECK(of_check(run_checks(g2), "mtu-mismatch").empty());
}

TEST_CASE("topology checks: one IPv4 address on two ports, or on two hosts") {
  // A trial on the lab: `ip addr add` of h1 tb2's address on tb1 too. Traffic to that /31 left
  // by tb1 alone, so the h1 - h3 cable went unused and the ranks routed over it waited for
  // their connect timeout; `network verify` (pings that name their interface) and verify-mesh
  // said all was well.
  auto s = lab_mesh(3);
  testing::port(s, "h1", "tb1").interface->ipv4 = {"10.231.0.1", "10.231.0.3"};
  testing::port(s, "h1", "tb2").interface->ipv4 = {"10.231.0.3"};
  testing::port(s, "h3", "tb1").interface->ipv4 = {"10.231.0.2"};
  ClusterGraph g(s);
  auto f = of_check(run_checks(g), "duplicate-address");
  REQUIRE(f.size() == 1);
  CHECK(f[0].severity == Severity::kFail);
  CHECK(f[0].hosts == Strings{"h1"});
  CHECK(f[0].ports.size() == 2);
  CHECK(f[0].message ==
        "h1 has 10.231.0.3 on 2 interfaces, h1 tb1, h1 tb2: it sends to that subnet out of one "
        "of them only, so the other cable is not used (a ping that names its interface still "
        "answers)");
  // It belongs on tb2, whose cable's other end (h3 tb1) has an address of its /31.
  CHECK(f[0].fix ==
        "keep 10.231.0.3 on h1 tb2 alone (its cable's other end, h3 tb1, is in its subnet): "
        "remove it from the other (on h1 `sudo ip addr del 10.231.0.3/PREFIX dev tb1`; PREFIX as "
        "`ip -br addr` shows it)");

  // Two hosts: h2 took h3's cable address as well.
  auto t = lab_mesh(3);
  testing::port(t, "h2", "tb2").interface->ipv4 = {"10.231.0.9"};
  testing::port(t, "h3", "tb2").interface->ipv4 = {"10.231.0.9"};
  ClusterGraph gt(t);
  auto ft = of_check(run_checks(gt), "duplicate-address");
  REQUIRE(ft.size() == 1);
  CHECK(ft[0].hosts == Strings{"h2", "h3"});
  CHECK(ft[0].message ==
        "10.231.0.9 is on h2 tb2, h3 tb2: hosts that share an address answer for it in turn, "
        "so a connection to it may reach either");
  CHECK(ft[0].fix ==
        "keep 10.231.0.9 only on the port of the cable it addresses, and remove it from the rest "
        "(on h2 `sudo ip addr del 10.231.0.9/PREFIX dev tb2` or on h3 `sudo ip addr del "
        "10.231.0.9/PREFIX dev tb2`; PREFIX as `ip -br addr` shows it), or give each cable a "
        "subnet of its own (`clusterctl network plan`, then `network apply`)");

  // An address on no cabled port (en0 and Wi-Fi on one LAN), or distinct ones: no finding.
  auto u = lab_mesh(2);
  for (const char* name : {"wlan0", "en0"}) {
    cc::discovery::NetInterface itf;
    itf.name = name;
    itf.ipv4 = {"10.0.0.5"};
    testing::host(u, "h1").interfaces.push_back(itf);
  }
  ClusterGraph gu(u);
  CHECK(of_check(run_checks(gu), "duplicate-address").empty());
  const auto v = lab_mesh(4);
  CHECK(of_check(run_checks(ClusterGraph(v)), "duplicate-address").empty());
}

TEST_CASE("topology checks: a port that is administratively down is no missing cable") {
  // The trial: `ip link set tb3 down` on h2 of a 4-host lab. Neighbour probing gets no answer
  // over a port that is down, so h2-h4 has no cable in the state; verify-mesh said "plug h2 tb3
  // into h4 tb2" although the cable was plugged in there.
  auto s = lab_mesh(4, {{2, 4}});
  testing::port(s, "h2", "tb3").interface->up = false;
  ClusterGraph g(s);
  auto f = run_checks(g);
  CHECK(of_check(f, "missing-cable").empty());
  auto down = of_check(f, "port-down");
  REQUIRE(down.size() == 1);
  CHECK(down[0].severity == Severity::kFail);
  CHECK(down[0].hosts == Strings{"h2", "h4"});
  REQUIRE(down[0].ports.size() == 1);
  CHECK(down[0].ports[0].host == "h2");
  CHECK(down[0].ports[0].interface == "tb3");
  CHECK(down[0].message ==
        "h2 and h4 have no cable that answers, and h2 tb3 is administratively down: a cable "
        "plugged into a port that is down is not seen (that its cable is this pair's is a "
        "guess: nothing records the host it faced, so down ports are matched to missing pairs "
        "in pair order)");
  CHECK(down[0].fix ==
        "bring it up: on h2 `sudo ip link set dev tb3 up`; do not move its cable. Then check "
        "again: if h2 and h4 still have no cable, the cabling plan then says where to plug one");
  // pair_checks (what `network verify` without a file judges by) gives exactly these.
  auto pairs = pair_checks(g);
  CHECK(check_ids(pairs) == Strings{"port-down"});
  CHECK(pairs[0].fix == down[0].fix);

  // Both ends down: both named, each with its command.
  testing::port(s, "h4", "tb3").interface->up = false;
  ClusterGraph g2(s);
  auto both = of_check(run_checks(g2), "port-down");
  REQUIRE(both.size() == 1);
  CHECK(both[0].ports.size() == 2);
  CHECK(both[0].message ==
        "h2 and h4 have no cable that answers, and h2 tb3 and h4 tb3 are administratively down: "
        "a cable plugged into a port that is down is not seen (that their cables are this "
        "pair's is a guess: nothing records the host they faced, so down ports are matched to "
        "missing pairs in pair order)");
  CHECK(both[0].fix ==
        "bring them up: on h2 `sudo ip link set dev tb3 up`, on h4 `sudo ip link set dev tb3 up`; "
        "do not move its cable. Then check again: if h2 and h4 still have no cable, the cabling "
        "plan then says where to plug one");
}

TEST_CASE("topology checks: the network plan's record, not pair order, says which pair a down "
          "port explains") {
  // h2 misses h3 and h4; h2 tb3 is down. In pair order h2-h3 would get it, but the saved plan
  // (kept by `network apply` / `discover -o` while the cable is down) joins h2 tb3 to h4 tb3.
  auto s = lab_mesh(4, {{2, 3}, {2, 4}});
  testing::port(s, "h2", "tb3").interface->up = false;
  discovery::LinkAddress l;
  l.a = {"h2", "tb3", std::nullopt, std::nullopt};
  l.b = {"h4", "tb3", std::nullopt, std::nullopt};
  l.subnet = "10.231.0.8/31";
  s.network.push_back(l);
  ClusterGraph g(s);
  auto pairs = pair_checks(g);
  REQUIRE(check_ids(pairs) == Strings{"missing-cable", "port-down"});
  CHECK(pairs[0].hosts == Strings{"h2", "h3"});
  CHECK(pairs[1].hosts == Strings{"h2", "h4"});
  CHECK(pairs[1].message ==
        "h2 and h4 have no cable that answers, and h2 tb3 is administratively down: a cable "
        "plugged into a port that is down is not seen (the network plan of the cluster state "
        "records it: h2 tb3 faced h4 tb3)");
  const auto down = down_pairs(g);
  REQUIRE(down.size() == 1);
  const DownPair& d = down.begin()->second;
  CHECK(d.a == 1);
  CHECK(d.b == 3);
  CHECK(d.recorded());
  REQUIRE(d.ends.size() == 1);
  REQUIRE(d.ends[0].recorded_peer);
  CHECK(discovery::end_label(*d.ends[0].recorded_peer) == "h4 tb3");

  // A plan entry whose pair is cabled anyway (a second cable, down): the port is taken by it
  // and explains no other pair, so h2-h3 and h2-h4 stay missing cables.
  auto m = lab_mesh(4, {{2, 3}, {2, 4}});
  testing::port(m, "h2", "tb3").interface->up = false;
  l.b = {"h1", "tb3", std::nullopt, std::nullopt};
  m.network.push_back(l);
  ClusterGraph gm(m);
  CHECK(check_ids(pair_checks(gm)) == Strings{"missing-cable", "missing-cable"});
  CHECK(down_pairs(gm).empty());
}

TEST_CASE("topology checks: each down port explains one missing pair, a spare one none") {
  // h2 misses h3 and h4 and has one port down: the first pair gets it, the other stays a
  // missing cable.
  auto s = lab_mesh(4, {{2, 3}, {2, 4}});
  testing::port(s, "h2", "tb2").interface->up = false;
  ClusterGraph g(s);
  auto pairs = pair_checks(g);
  CHECK(check_ids(pairs) == Strings{"port-down", "missing-cable"});
  CHECK(pairs[0].hosts == Strings{"h2", "h3"});
  CHECK(pairs[1].hosts == Strings{"h2", "h4"});
  CHECK(pairs[1].message ==
        "h2 and h4 have no direct cable (RDMA cannot route: every pair of a mesh needs its own "
        "cable)");

  // A full mesh with a spare port down: nothing is missing, nothing to say.
  auto full = lab_mesh(3, {}, {}, 3);
  testing::port(full, "h1", "tb3").interface->up = false;
  ClusterGraph gf(full);
  CHECK(pair_checks(gf).empty());
  CHECK(of_check(run_checks(gf), "port-down").empty());
  // self-cable is no pair check.
  auto self = lab_mesh(2, {}, {}, 3);
  discovery::Cable c;
  c.a = {"h1", "tb2", std::nullopt, std::nullopt};
  c.b = {"h1", "tb3", std::nullopt, std::nullopt};
  c.sources = {CableSource::kNeighbour};
  c.seen_from_a = c.seen_from_b = true;
  self.cables.push_back(c);
  ClusterGraph gs(self);
  CHECK(of_check(run_checks(gs), "self-cable").size() == 1);
  CHECK(pair_checks(gs).empty());
}

TEST_CASE("topology checks: a Mac's port down is brought up with ifconfig, shell-quoted") {
  auto m = testing::mac_mesh(3, 3);
  // m2 - m3 pulled (its cable gone from the state), m2's port of it down under an odd name.
  m.cables.erase(std::remove_if(m.cables.begin(), m.cables.end(),
                                [](const discovery::Cable& c) {
                                  return c.a.host == "m2" && c.b.host == "m3";
                                }),
                 m.cables.end());
  auto& p = testing::port(m, "m2", "en3");
  p.interface->up = false;
  p.interface->name = "en3$(id)";
  ClusterGraph g(m);
  auto down = pair_checks(g);
  REQUIRE(down.size() == 1);
  CHECK(down[0].check == "port-down");
  CHECK(down[0].fix.starts_with("bring it up: on m2 `sudo ifconfig 'en3$(id)' up`; "));
  CHECK(link_up_command(testing::host(m, "m1"), "en2") == "sudo ifconfig en2 up");
  CHECK(link_up_command(testing::host(m, "m1"), "a b") == "sudo ifconfig 'a b' up");
}

TEST_CASE("topology checks: a host with fewer ports than n - 1") {
  auto s = lab_mesh(4, {{1, 2}}, {}, 2);
  ClusterGraph g(s);
  auto f = of_check(run_checks(g), "too-few-ports");
  REQUIRE(f.size() == 2);
  CHECK(f[0].hosts == Strings{"h1"});
  CHECK(f[0].severity == Severity::kFail);
  CHECK(f[0].message ==
        "h1 has 2 ports; a full mesh of 4 hosts needs 3 per host, so h1 can never be in it");
  CHECK(f[1].hosts == Strings{"h2"});
}

TEST_CASE("topology checks: cables seen from one side") {
  auto s = lab_mesh(3);
  s.cables[0].seen_from_b = false;
  ClusterGraph g(s);
  auto f = of_check(run_checks(g), "one-sided-cable");
  REQUIRE(f.size() == 1);
  CHECK(f[0].severity == Severity::kWarn);
  CHECK(f[0].message == "h1 tb1 - h2 tb1 was seen from h1 only");
  CHECK(f[0].fix ==
        "check that h2 tb1 is up with carrier, then run `clusterctl discover` again; reseat "
        "the cable if it persists");
  CHECK(f[0].ports.size() == 2);
}

TEST_CASE("topology checks: cables seen by one source only") {
  auto s = testing::mac_mesh(3, 2);
  ClusterGraph plain(s);
  // Every cable by Thunderbolt only, and no neighbour probing anywhere: nothing to say.
  CHECK(of_check(run_checks(plain), "one-source-cable").empty());

  s.cables[0].sources = {CableSource::kThunderbolt, CableSource::kNeighbour};
  s.cables[2].sources = {CableSource::kNeighbour};
  ClusterGraph g(s);
  auto f = of_check(run_checks(g), "one-source-cable");
  REQUIRE(f.size() == 2);
  CHECK(f[0].message ==
        "m1 receptacle 2 (en3) - m3 receptacle 1 (en2) was seen by Thunderbolt only, not by "
        "neighbour probing");
  CHECK(f[1].message ==
        "m2 receptacle 2 (en3) - m3 receptacle 2 (en3) was seen by neighbour probing only, not "
        "by Thunderbolt");

  // Linux lab hosts report no Thunderbolt identity: never a one-source warning.
  auto lab = lab_mesh(3);
  lab.cables[0].sources = {CableSource::kThunderbolt, CableSource::kNeighbour};
  ClusterGraph gl(lab);
  CHECK(of_check(run_checks(gl), "one-source-cable").empty());
}

TEST_CASE("topology checks: foreign host, hub and dock on ports") {
  discovery::ClusterState s = testing::mac_mesh(2, 4);
  auto& p2 = s.hosts[0].ports[1];  // m1 receptacle 2 (en3): a MacBook outside the cluster
  Peer outsider;
  outsider.kind = Peer::Kind::kHost;
  outsider.name = "MacBook Pro";
  outsider.model = "Mac17,6";
  outsider.domain_uuid = "AAAA-outside";
  p2.peers = {outsider};
  auto& p3 = s.hosts[0].ports[2];  // m1 receptacle 3 (en4): a dock with a Mac behind it
  Peer dock;
  dock.name = "SB-XTM5";
  dock.vendor = "Sabrent";
  Peer behind = outsider;
  behind.depth = 2;
  p3.peers = {dock, behind};
  ClusterGraph g(s);
  auto f = run_checks(g);
  auto foreign = of_check(f, "foreign-host");
  REQUIRE(foreign.size() == 1);
  CHECK(foreign[0].severity == Severity::kWarn);
  CHECK(foreign[0].message ==
        "m1 receptacle 2 (en3) is cabled to a host outside the cluster: MacBook Pro (Mac17,6)");
  auto hub = of_check(f, "behind-hub");
  REQUIRE(hub.size() == 1);
  CHECK(hub[0].message ==
        "m1 receptacle 3 (en4) reaches MacBook Pro (Mac17,6) through a hub or dock (depth 2): "
        "hub-mediated links do not carry RDMA");
  auto device = of_check(f, "device-port");
  REQUIRE(device.size() == 1);
  CHECK(device[0].severity == Severity::kInfo);
  CHECK(device[0].message ==
        "m1 receptacle 3 (en4) has a device on its cable: SB-XTM5 (Sabrent); the port is not free");
}

TEST_CASE("topology checks: unprobed hosts and the expected host count") {
  auto s = lab_mesh(3);
  s.problems.push_back({"h4", 3, "h4: cannot connect to 10.77.0.4:22 (timed out after 10 s)"});
  s.problems.push_back({"h5", 1, "h5: ip -j addr: not JSON"});
  ClusterGraph g(s);
  auto f = run_checks(g, CheckOptions{4});
  CHECK(check_ids(f) ==
        Strings{"unreachable", "probe-failed", "host-count", "no-rdma", "no-rdma", "no-rdma"});
  CHECK(f[0].severity == Severity::kFail);
  CHECK(f[0].hosts == Strings{"h4"});
  CHECK(f[0].message == "h4: cannot connect to 10.77.0.4:22 (timed out after 10 s)");
  CHECK(f[2].message == "expected 4 hosts, the cluster has 5: h1, h2, h3, h4, h5");
  CHECK(of_check(run_checks(g, CheckOptions{5}), "host-count").empty());
  CHECK(of_check(run_checks(g), "host-count").empty());
}

TEST_CASE("topology checks: a cable from a host to itself") {
  auto s = lab_mesh(2, {}, {}, 3);
  discovery::Cable c;
  c.a = {"h1", "tb2", std::nullopt, std::nullopt};
  c.b = {"h1", "tb3", std::nullopt, std::nullopt};
  c.sources = {CableSource::kNeighbour};
  c.seen_from_a = c.seen_from_b = true;
  s.cables.push_back(c);
  ClusterGraph g(s);
  auto f = of_check(run_checks(g), "self-cable");
  REQUIRE(f.size() == 1);
  CHECK(f[0].message == "h1 tb2 is cabled to h1 tb3, on the same host");
  CHECK(g.multiplicity(0, 1) == 1);
}

}  // namespace
}  // namespace cc::topology
