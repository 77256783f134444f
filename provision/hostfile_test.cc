#include "provision/hostfile.h"

#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "provision/hostfile_test_states.h"
#include "provision/mlx_hostfile.h"
#include "topology/test_states.h"

namespace cc::provision {
namespace {

using discovery::ClusterState;
using testing::addressed_lab;
using testing::macs;
using testing::mesh3;
using topology::testing::cable_macs;
using topology::testing::lab_mesh;
using topology::testing::port;
using util::ExitCode;
using Cells = std::vector<MlxCell>;

std::vector<std::string> ssh_names(const MlxHostfile& hf) {
  std::vector<std::string> out;
  for (const auto& h : hf.hosts) out.push_back(h.ssh);
  return out;
}

TEST_CASE("hostfile: format names") {
  CHECK(hostfile_format_names() == std::vector<std::string>{"clusterctl", "mlx-jaccl",
                                                            "mlx-jaccl-ring", "mlx-ring", "mpi",
                                                            "mpich"});
  for (const auto& name : hostfile_format_names()) {
    REQUIRE(hostfile_format(name).has_value());
    CHECK(to_string(*hostfile_format(name)) == name);
  }
  CHECK(hostfile_format("jaccl") == std::nullopt);
  CHECK(hostfile_format("") == std::nullopt);
}

TEST_CASE("hostfile: mlx-jaccl device matrix with a doubled pair, k-th entry the same cable") {
  const ClusterState s = mesh3();
  auto hf = make_mlx_hostfile(s, HostfileFormat::kMlxJaccl, {"MLX_METAL_FAST_SYNCH=1"});
  REQUIRE(hf.ok());
  CHECK(hf->backend == "jaccl");
  CHECK(hf->envs == std::vector<std::string>{"MLX_METAL_FAST_SYNCH=1"});
  CHECK(ssh_names(*hf) == std::vector<std::string>{"m1", "m2", "m3"});
  CHECK(hf->hosts[0].ips == std::vector<std::string>{"10.0.0.11"});  // the coordinator
  CHECK(hf->hosts[1].ips == std::vector<std::string>{"10.0.0.12"});
  CHECK(hf->hosts[2].ips == std::vector<std::string>{"10.0.0.13"});
  // Cables in state order: m1 en2 - m2 en3, m1 en3 - m2 en2, m1 en4 - m3 en2, m2 en4 - m3 en3.
  CHECK(hf->hosts[0].rdma == Cells{{}, {"rdma_en2", "rdma_en3"}, {"rdma_en4"}});
  CHECK(hf->hosts[1].rdma == Cells{{"rdma_en3", "rdma_en2"}, {}, {"rdma_en4"}});
  CHECK(hf->hosts[2].rdma == Cells{{"rdma_en2"}, {"rdma_en3"}, {}});
  CHECK(check_against(*hf, s, {}).ok());
}

TEST_CASE("hostfile: mlx-jaccl rendered text") {
  ClusterState s = macs(2, 1);
  cable_macs(s, "m1", 1, "m2", 1);
  auto text = render_hostfile(s, {HostfileFormat::kMlxJaccl, {"A=1"}, 1});
  REQUIRE(text.ok());
  CHECK(*text == R"({
  "backend": "jaccl",
  "envs": [
    "A=1"
  ],
  "hosts": [
    {
      "ssh": "m1",
      "ips": [
        "10.0.0.11"
      ],
      "rdma": [
        null,
        "rdma_en2"
      ]
    },
    {
      "ssh": "m2",
      "ips": [
        "10.0.0.12"
      ],
      "rdma": [
        "rdma_en2",
        null
      ]
    }
  ]
}
)");
}

TEST_CASE("hostfile: mlx-jaccl names every missing pair") {
  auto hf = make_mlx_hostfile(lab_mesh(4, {{1, 3}, {2, 4}}), HostfileFormat::kMlxJaccl);
  REQUIRE(!hf.ok());
  CHECK(hf.error().code == ExitCode::kCheckFailed);
  CHECK(hf.error().message ==
        "no mlx-jaccl hostfile: no cable between h1-h3, h2-h4: jaccl needs a direct cable "
        "between every pair (RDMA cannot route); `clusterctl verify-mesh CLUSTER.json` says "
        "what to plug where");
}

TEST_CASE("hostfile: mlx-jaccl needs an RDMA device on both ends of a pair's cable") {
  ClusterState s = macs(2, 1);
  cable_macs(s, "m1", 1, "m2", 1);
  topology::testing::disable_rdma(s, "m2");
  auto hf = make_mlx_hostfile(s, HostfileFormat::kMlxJaccl);
  REQUIRE(!hf.ok());
  CHECK(hf.error().code == ExitCode::kCheckFailed);
  CHECK(hf.error().message ==
        "no mlx-jaccl hostfile: no RDMA cable between m1-m2 (no RDMA device on m2 receptacle 1 "
        "(en2)): `clusterctl rdma status CLUSTER.json` says why");
}

TEST_CASE("hostfile: jaccl formats need rank 0's management address for the coordinator") {
  ClusterState s = mesh3();
  s.hosts[0].management_address.clear();
  for (auto f : {HostfileFormat::kMlxJaccl, HostfileFormat::kMlxJacclRing}) {
    auto hf = make_mlx_hostfile(s, f);
    REQUIRE(!hf.ok());
    CHECK(hf.error().code == ExitCode::kCheckFailed);
    CHECK(hf.error().message ==
          fmt::format("no {} hostfile: rank 0 (m1) has no management address (no "
                      "SSH_CONNECTION was recorded) and no IPv4 address on en0, and its ips[0] "
                      "is the coordinator's: discover it over SSH (`clusterctl discover -o "
                      "CLUSTER.json`)",
                      to_string(f)));
  }
  s = mesh3();
  s.hosts[2].management_address.clear();  // another rank: an empty ips list
  auto hf = make_mlx_hostfile(s, HostfileFormat::kMlxJaccl);
  REQUIRE(hf.ok());
  CHECK(hf->hosts[2].ips.empty());
}

TEST_CASE("hostfile: jaccl ips fall back to a Mac's en0 address, with a note") {
  // A recorded Mac without SSH_CONNECTION: MLX itself would take en0's address.
  ClusterState s = mesh3();
  s.hosts[0].management_address.clear();
  discovery::NetInterface en0;
  en0.name = "en0";
  en0.up = true;
  en0.ipv4 = {"169.254.3.3", "10.0.0.21"};
  s.hosts[0].interfaces.push_back(en0);
  for (auto f : {HostfileFormat::kMlxJaccl, HostfileFormat::kMlxJacclRing}) {
    std::vector<std::string> notes;
    auto hf = make_mlx_hostfile(s, f, {}, &notes);
    REQUIRE(hf.ok());
    bool found = false;
    for (const auto& h : hf->hosts) {
      if (h.ssh != "m1") continue;
      found = true;
      CHECK(h.ips == std::vector<std::string>{"10.0.0.21"});
    }
    CHECK(found);
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].find("(m1): no management address was recorded (no SSH_CONNECTION), so its "
                        "ips are en0's address 10.0.0.21") != std::string::npos);
  }
  std::vector<std::string> notes;
  auto text = render_hostfile(s, {HostfileFormat::kMlxJaccl, {}, 1}, &notes);
  REQUIRE(text.ok());
  CHECK(nlohmann::json::parse(*text)["hosts"][0]["ips"] == nlohmann::json::array({"10.0.0.21"}));
  CHECK(notes == std::vector<std::string>{"rank 0 (m1): no management address was recorded (no "
                                          "SSH_CONNECTION), so its ips are en0's address "
                                          "10.0.0.21"});
  // With a management address, it wins and there is no note.
  notes.clear();
  CHECK(render_hostfile(mesh3(), {HostfileFormat::kMlxJaccl, {}, 1}, &notes).ok());
  CHECK(notes.empty());
}

TEST_CASE("hostfile: a host SSH reached over IPv6 gets no IPv6 ips, which MLX cannot parse") {
  // MLX cuts MLX_JACCL_COORDINATOR at its first ':' (mlx/distributed/utils.cpp parse_address):
  // "[fe80::1%en0]:32323" or "fe80::1%en0:32323" stops every rank with "Can't parse address".
  ClusterState s = mesh3();
  s.hosts[0].management_address = "fe80::1%en5";
  for (auto f : {HostfileFormat::kMlxJaccl, HostfileFormat::kMlxJacclRing}) {
    auto hf = make_mlx_hostfile(s, f);
    REQUIRE(!hf.ok());
    CHECK(hf.error().code == ExitCode::kCheckFailed);
    CHECK(
        hf.error().message ==
        fmt::format(
            "no {} hostfile: rank 0 (m1) was reached over SSH on fe80::1%en5: 'fe80::1%en5' is an "
            "IPv6 address, and MLX cuts each HOST:PORT it is given "
            "(MLX_JACCL_COORDINATOR, MLX_HOSTFILE) at the first ':', so its ranks "
            "would stop with \"Can't parse address\", and en0 has no routable IPv4 address; "
            "its ips[0] is the coordinator's: reach it by an IPv4 address (an "
            "inventory `address:` or a HostName in the SSH config) and discover it "
            "again (`clusterctl discover -o CLUSTER.json`)",
            to_string(f)));
  }
  // A Mac with an IPv4 address on en0 falls back to it, as without SSH_CONNECTION.
  discovery::NetInterface en0;
  en0.name = "en0";
  en0.up = true;
  en0.ipv4 = {"10.0.0.21"};
  s.hosts[0].interfaces.push_back(en0);
  s.hosts[2].management_address = "2001:db8::3";  // another rank: no ips, and a note
  std::vector<std::string> notes;
  auto text = render_hostfile(s, {HostfileFormat::kMlxJaccl, {}, 1}, &notes);
  REQUIRE_MESSAGE(text.ok(), (text.ok() ? "" : text.error().message));
  const auto j = nlohmann::json::parse(*text);
  CHECK(j["hosts"][0]["ips"] == nlohmann::json::array({"10.0.0.21"}));
  CHECK(j["hosts"][2]["ips"] == nlohmann::json::array());
  REQUIRE(notes.size() == 2);
  CHECK(notes == std::vector<std::string>{
                     "rank 0 (m1): SSH reached it on fe80::1%en5, an IPv6 address, which MLX "
                     "cannot take, so its ips are en0's address 10.0.0.21",
                     "rank 2 (m3): SSH reached it on 2001:db8::3, an IPv6 address, which MLX "
                     "cannot take, so its ips are left empty (JACCL reads only rank 0's)"});
}

TEST_CASE("hostfile: a host SSH reached on a self-assigned or loopback address gets no such ips") {
  // parse_mlx_hostfile refuses them in a hostfile of several hosts: the writer never writes one.
  ClusterState s = mesh3();
  s.hosts[0].management_address = "169.254.7.1";
  for (auto f : {HostfileFormat::kMlxJaccl, HostfileFormat::kMlxJacclRing}) {
    auto hf = make_mlx_hostfile(s, f);
    REQUIRE(!hf.ok());
    CHECK(hf.error().code == ExitCode::kCheckFailed);
    CHECK(hf.error().message ==
          fmt::format("no {} hostfile: rank 0 (m1) was reached over SSH on 169.254.7.1, which is "
                      "a self-assigned IPv4 address (169.254/16): a host routes all of "
                      "169.254/16 out of one interface, so a connection to it leaves by "
                      "whichever port holds that route, not the one it is on "
                      "(docs/platform.md#self-assigned-addresses), and en0 has no routable IPv4 "
                      "address; its ips[0] is the coordinator's, where every other rank "
                      "connects: reach it by an address the other hosts reach it on (an "
                      "inventory `address:` or a HostName in the SSH config) and discover it "
                      "again (`clusterctl discover -o CLUSTER.json`)",
                      to_string(f)));
  }
  discovery::NetInterface en0;
  en0.name = "en0";
  en0.up = true;
  en0.ipv4 = {"10.0.0.21"};
  s.hosts[0].interfaces.push_back(en0);
  s.hosts[2].management_address = "127.0.0.1";
  std::vector<std::string> notes;
  auto text = render_hostfile(s, {HostfileFormat::kMlxJaccl, {}, 1}, &notes);
  REQUIRE_MESSAGE(text.ok(), (text.ok() ? "" : text.error().message));
  const auto j = nlohmann::json::parse(*text);
  CHECK(j["hosts"][0]["ips"] == nlohmann::json::array({"10.0.0.21"}));
  CHECK(j["hosts"][2]["ips"] == nlohmann::json::array());
  REQUIRE(notes.size() == 2);
  CHECK(notes[0].starts_with("rank 0 (m1): SSH reached it on 169.254.7.1, which is a "
                             "self-assigned IPv4 address (169.254/16)"));
  CHECK(notes[0].ends_with(", so its ips are en0's address 10.0.0.21"));
  CHECK(notes[1] == "rank 2 (m3): SSH reached it on 127.0.0.1, which is a loopback address: on "
                    "every host it names that host itself, so its ips are left empty (JACCL "
                    "reads only rank 0's)");
  // What it wrote reads back: no ips entry the reader refuses.
  auto back = parse_mlx_hostfile(*text, "hosts.json");
  CHECK_MESSAGE(back.ok(), (back.ok() ? "" : back.error().message));
  // Our own format names the coordinator outright: rank 0's management address, never one the
  // other hosts cannot reach there.
  for (const char* bad : {"169.254.7.1", "fe80::1%en5", "127.0.0.1"}) {
    CAPTURE(bad);
    s.hosts[0].management_address = bad;
    auto ours = render_clusterctl_hostfile(s, {});
    REQUIRE_FALSE(ours.ok());
    CHECK(ours.error().code == ExitCode::kCheckFailed);
    CHECK(ours.error().message.starts_with(
        fmt::format("no clusterctl hostfile: rank 0 (m1) was reached over SSH on {}, which is a ",
                    bad)));
    CHECK(ours.error().message.ends_with(
        "its management address is the coordinator, where every other rank connects: reach it "
        "by an address the other hosts reach it on (an inventory `address:` or a HostName in "
        "the SSH config) and discover it again (`clusterctl discover -o CLUSTER.json`)"));
  }
  s.hosts[0].management_address = "10.0.0.11";
  CHECK(render_clusterctl_hostfile(s, {}).ok());
}

TEST_CASE("hostfile: a 40 Gb/s cable is no RDMA cable, even with rdma_en devices on both ends") {
  // exo#1813: macOS makes rdma_enX devices on Thunderbolt 4 ports too.
  ClusterState s = macs(2, 2);
  cable_macs(s, "m1", 1, "m2", 1, 40, 4);
  for (auto f : {HostfileFormat::kMlxJaccl, HostfileFormat::kMlxJacclRing}) {
    auto r = render_hostfile(s, {f, {}, 1});
    REQUIRE(!r.ok());
    CHECK(r.error().code == ExitCode::kCheckFailed);
    if (f == HostfileFormat::kMlxJaccl) {
      CHECK(r.error().message.find(
                "no RDMA cable between m1-m2 (m1 receptacle 1 (en2) - m2 receptacle 1 (en2) "
                "links below Thunderbolt 5 speed): a link below Thunderbolt 5 speed (40 Gb/s: a "
                "Thunderbolt 4 port or cable) carries no RDMA, even with rdma_en devices on both "
                "ends: use --format mlx-ring (TCP over the cables) or a Thunderbolt 5 cable "
                "between Thunderbolt 5 ports; `clusterctl rdma status CLUSTER.json` says "
                "why") !=
            std::string::npos);
    }
  }
  CHECK(render_hostfile(s, {HostfileFormat::kMlxRing, {}, 1}).ok());
  // A second, 80 Gb/s cable between them carries RDMA: the hostfile names only its devices.
  cable_macs(s, "m1", 2, "m2", 2);
  auto r = render_hostfile(s, {HostfileFormat::kMlxJaccl, {}, 1});
  REQUIRE(r.ok());
  CHECK(r->find("\"rdma_en3\"") != std::string::npos);
  CHECK(r->find("\"rdma_en2\"") == std::string::npos);
}

TEST_CASE("hostfile: slow links of several pairs: the pairs listed, the advice said once") {
  ClusterState s = macs(3, 2);
  cable_macs(s, "m1", 1, "m2", 1, 40, 4);
  cable_macs(s, "m1", 2, "m3", 1, 40, 4);
  cable_macs(s, "m2", 2, "m3", 2, 40, 4);
  auto r = render_hostfile(s, {HostfileFormat::kMlxJaccl, {}, 1});
  REQUIRE(!r.ok());
  const std::string& m = r.error().message;
  CHECK(m ==
        "no mlx-jaccl hostfile: no RDMA cable between m1-m2 (m1 receptacle 1 (en2) - m2 "
        "receptacle 1 (en2) links below Thunderbolt 5 speed); m1-m3 (m1 receptacle 2 (en3) - m3 "
        "receptacle 1 (en2) links below Thunderbolt 5 speed); m2-m3 (m2 receptacle 2 (en3) - m3 "
        "receptacle 2 (en3) links below Thunderbolt 5 speed): a link below Thunderbolt 5 speed "
        "(40 Gb/s: a Thunderbolt 4 port or cable) carries no RDMA, even with rdma_en devices on "
        "both ends: use --format mlx-ring (TCP over the cables) or a Thunderbolt 5 cable between "
        "Thunderbolt 5 ports; `clusterctl rdma status CLUSTER.json` says why");
  std::size_t advice = 0;
  for (auto at = m.find("use --format mlx-ring"); at != std::string::npos;
       at = m.find("use --format mlx-ring", at + 1)) {
    ++advice;
  }
  CHECK(advice == 1);
}

TEST_CASE("hostfile: a cable through a hub or dock is refused, naming it") {
  ClusterState s = macs(2, 2);
  cable_macs(s, "m1", 1, "m2", 1);
  topology::testing::through_dock(s, 0);
  for (auto f : {HostfileFormat::kClusterctl, HostfileFormat::kMlxJaccl,
                 HostfileFormat::kMlxJacclRing, HostfileFormat::kMlxRing}) {
    auto r = render_hostfile(s, {f, {}, 1});
    REQUIRE(!r.ok());
    CHECK(r.error().code == ExitCode::kCheckFailed);
    CHECK(r.error().message ==
          fmt::format("no {} hostfile: m1 receptacle 1 (en2) - m2 receptacle 1 (en2) runs through "
                      "a hub or dock, which is not a direct link (no RDMA, not part of the mesh): "
                      "plug it directly between the two hosts, then run `clusterctl discover -o "
                      "CLUSTER.json` again",
                      to_string(f)));
  }
  // mpi lists hosts only (no cable in it): still written.
  CHECK(render_hostfile(s, {HostfileFormat::kMpi, {}, 1}).ok());
}

TEST_CASE("hostfile: mlx-jaccl-ring lists hosts in ring order, neighbours' cells only") {
  // Cabled as the ring m1 - m3 - m2 - m4 - m1, no diagonals.
  ClusterState s = macs(4, 2);
  cable_macs(s, "m1", 1, "m3", 1);
  cable_macs(s, "m2", 1, "m3", 2);
  cable_macs(s, "m2", 2, "m4", 1);
  cable_macs(s, "m1", 2, "m4", 2);
  CHECK(!make_mlx_hostfile(s, HostfileFormat::kMlxJaccl).ok());  // m1-m2, m3-m4 missing
  auto hf = make_mlx_hostfile(s, HostfileFormat::kMlxJacclRing);
  REQUIRE(hf.ok());
  CHECK(hf->backend == "jaccl-ring");
  CHECK(ssh_names(*hf) == std::vector<std::string>{"m1", "m3", "m2", "m4"});
  CHECK(hf->hosts[0].ips == std::vector<std::string>{"10.0.0.11"});
  CHECK(hf->hosts[1].ips == std::vector<std::string>{"10.0.0.13"});
  CHECK(hf->hosts[0].rdma == Cells{{}, {"rdma_en2"}, {}, {"rdma_en3"}});
  CHECK(hf->hosts[1].rdma == Cells{{"rdma_en2"}, {}, {"rdma_en3"}, {}});
  CHECK(hf->hosts[2].rdma == Cells{{}, {"rdma_en2"}, {}, {"rdma_en3"}});
  CHECK(hf->hosts[3].rdma == Cells{{"rdma_en3"}, {}, {"rdma_en2"}, {}});
  CHECK(check_against(*hf, s, {}).ok());
}

TEST_CASE("hostfile: mlx-jaccl-ring lists the ring's smallest cable count in every cell") {
  // The ring m1 - m2 - m3 - m4 - m1 with m1-m2 doubled: JACCL's ring needs every neighbour
  // cell of one length, so each lists one device (the first of m1-m2's two cables).
  ClusterState s = macs(4, 3);
  cable_macs(s, "m1", 1, "m2", 1);
  cable_macs(s, "m1", 2, "m2", 2);
  cable_macs(s, "m2", 3, "m3", 1);
  cable_macs(s, "m3", 2, "m4", 1);
  cable_macs(s, "m4", 2, "m1", 3);
  auto hf = make_mlx_hostfile(s, HostfileFormat::kMlxJacclRing);
  REQUIRE(hf.ok());
  CHECK(ssh_names(*hf) == std::vector<std::string>{"m1", "m2", "m3", "m4"});
  CHECK(hf->hosts[0].rdma == Cells{{}, {"rdma_en2"}, {}, {"rdma_en4"}});
  CHECK(hf->hosts[1].rdma == Cells{{"rdma_en2"}, {}, {"rdma_en4"}, {}});
  CHECK(hf->hosts[2].rdma == Cells{{}, {"rdma_en2"}, {}, {"rdma_en3"}});
  CHECK(hf->hosts[3].rdma == Cells{{"rdma_en3"}, {}, {"rdma_en2"}, {}});
  CHECK(validate_mlx_hostfile(*hf, {}).ok());
  CHECK(check_against(*hf, s, {}).ok());
  // The 3-Mac mesh: m1-m2 doubled, the other pairs single: one device per neighbour, and the
  // first cable's two ends.
  auto three = make_mlx_hostfile(mesh3(), HostfileFormat::kMlxJacclRing);
  REQUIRE(three.ok());
  for (const auto& h : three->hosts) {
    for (std::size_t j = 0; j < h.rdma.size(); ++j)
      CHECK(h.rdma[j].size() == (h.ssh == three->hosts[j].ssh ? 0u : 1u));
  }
  CHECK(check_against(*three, mesh3(), {}).ok());
}

TEST_CASE("hostfile: every mlx-jaccl* file in tests/data/expected passes JACCL's rules") {
  int seen = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(CLUSTERCTL_TEST_DATA) + "/expected")) {
    const std::string path = e.path().string();
    if (e.path().extension() != ".json") continue;
    ++seen;
    auto hf = read_mlx_hostfile(path);
    REQUIRE_MESSAGE(hf.ok(), (hf.ok() ? "" : hf.error().message));
    CHECK(validate_mlx_hostfile(*hf, {}).ok());
    std::vector<std::vector<MlxCell>> m;
    for (const auto& h : hf->hosts) m.push_back(h.rdma);
    const auto want = hf->backend == "jaccl-ring" ? JacclGroup::kRing : JacclGroup::kMesh;
    CHECK_MESSAGE(check_jaccl_devices(m, want, {}, path).ok(), path);
  }
  CHECK(seen >= 2);
}

TEST_CASE("hostfile: mlx-jaccl-ring on a mesh of 4 keeps the non-neighbours null") {
  ClusterState s = macs(4, 3);
  for (auto [a, ra, b, rb] : std::vector<std::tuple<int, int, int, int>>{
           {1, 1, 2, 1}, {1, 2, 3, 1}, {1, 3, 4, 1}, {2, 2, 3, 2}, {2, 3, 4, 2}, {3, 3, 4, 3}}) {
    cable_macs(s, fmt::format("m{}", a), ra, fmt::format("m{}", b), rb);
  }
  auto hf = make_mlx_hostfile(s, HostfileFormat::kMlxJacclRing);
  REQUIRE(hf.ok());
  CHECK(ssh_names(*hf) == std::vector<std::string>{"m1", "m2", "m3", "m4"});
  CHECK(hf->hosts[0].rdma == Cells{{}, {"rdma_en2"}, {}, {"rdma_en4"}});
  CHECK(hf->hosts[1].rdma == Cells{{"rdma_en2"}, {}, {"rdma_en3"}, {}});
  CHECK(hf->hosts[2].rdma == Cells{{}, {"rdma_en3"}, {}, {"rdma_en4"}});
  CHECK(hf->hosts[3].rdma == Cells{{"rdma_en2"}, {}, {"rdma_en4"}, {}});
}

TEST_CASE("hostfile: mlx-ring takes each rank's addresses on its cables to its left neighbour") {
  // h1-h2 doubled: the ring's smallest count is 1, so every rank lists one address.
  const ClusterState s = addressed_lab(3, {}, {{1, 2}});
  auto hf = make_mlx_hostfile(s, HostfileFormat::kMlxRing);
  REQUIRE(hf.ok());
  CHECK(hf->backend == "ring");
  CHECK(ssh_names(*hf) == std::vector<std::string>{"h1", "h2", "h3"});
  CHECK(hf->hosts[0].ips == std::vector<std::string>{"192.0.2.12"});  // h1 tb2 - h3
  CHECK(hf->hosts[1].ips == std::vector<std::string>{"192.0.2.21"});  // h2 tb1 - h1 tb1
  CHECK(hf->hosts[2].ips == std::vector<std::string>{"192.0.2.32"});  // h3 tb2 - h2 tb2
  for (const auto& h : hf->hosts) CHECK(h.rdma.empty());
  CHECK(check_against(*hf, s, {}).ok());

  // Two hosts with two cables: both cables, in cable order, on both ends.
  auto two = make_mlx_hostfile(addressed_lab(2, {}, {{1, 2}}), HostfileFormat::kMlxRing);
  REQUIRE(two.ok());
  CHECK(two->hosts[0].ips == std::vector<std::string>{"192.0.2.11", "192.0.2.12"});
  CHECK(two->hosts[1].ips == std::vector<std::string>{"192.0.2.21", "192.0.2.22"});
}

TEST_CASE("hostfile: mlx-ring names a cable end without IPv4") {
  ClusterState s = addressed_lab(3);
  port(s, "h2", "tb1").interface->ipv4.clear();
  auto hf = make_mlx_hostfile(s, HostfileFormat::kMlxRing);
  REQUIRE(!hf.ok());
  CHECK(hf.error().code == ExitCode::kCheckFailed);
  CHECK(hf.error().message ==
        "no mlx-ring hostfile: h2 tb1 has no IPv4 address in this cluster state: run `clusterctl "
        "network apply CLUSTER.json` (it addresses the cables and updates the file)");
  port(s, "h3", "tb2").interface->ipv4.clear();
  CHECK(make_mlx_hostfile(s, HostfileFormat::kMlxRing).error().message ==
        "no mlx-ring hostfile: h2 tb1, h3 tb2 have no IPv4 address in this cluster state: run "
        "`clusterctl network apply CLUSTER.json` (it addresses the cables and updates the file)");
}

TEST_CASE("hostfile: the missing-address fix names the state file, quoted, so it runs as printed") {
  ClusterState s = addressed_lab(3);
  port(s, "h2", "tb1").interface->ipv4.clear();
  HostfileOptions opts;
  opts.format = HostfileFormat::kMlxRing;
  opts.fix = discovery::FixCommand{"--lab t3a", "my lab.json", ""};
  auto text = render_hostfile(s, opts);
  REQUIRE(!text.ok());
  CHECK(text.error().message ==
        "no mlx-ring hostfile: h2 tb1 has no IPv4 address in this cluster state: run `clusterctl "
        "network apply --lab t3a 'my lab.json'` (it addresses the cables and updates the file)");
  opts.fix =
      discovery::FixCommand{"--lab t3a", "", "h1,h2,h3"};  // discovered live: no file to update
  CHECK(render_hostfile(s, opts).error().message ==
        "no mlx-ring hostfile: h2 tb1 has no IPv4 address in this cluster state: run `clusterctl "
        "network apply --lab t3a --hosts h1,h2,h3` (it addresses the cables)");
  // Every other fix of a hostfile error names the cluster the same way.
  opts.fix = discovery::FixCommand{"--lab t3a", "my lab.json", ""};
  opts.format = HostfileFormat::kMlxJaccl;
  CHECK(render_hostfile(lab_mesh(3, {{1, 3}}), opts).error().message.ends_with(
      "`clusterctl verify-mesh --lab t3a 'my lab.json'` says what to plug where"));
  CHECK(render_hostfile(ClusterState{}, opts).error().message ==
        "the cluster state has no hosts: discover some (`clusterctl --lab t3a discover -o 'my "
        "lab.json'`)");
}

TEST_CASE("hostfile: ring formats without a ring") {
  const ClusterState path = lab_mesh(3, {{1, 3}});  // h1 - h2 - h3
  auto ring = make_mlx_hostfile(path, HostfileFormat::kMlxRing);
  REQUIRE(!ring.ok());
  CHECK(ring.error().code == ExitCode::kCheckFailed);
  CHECK(ring.error().message ==
        "no mlx-ring hostfile: no ring through all 3 hosts uses only cabled pairs (pairs "
        "without: h1-h3): `clusterctl verify-mesh CLUSTER.json` says what to plug where");
  // Lab hosts have no RDMA: no pair counts for jaccl-ring. The cables form a ring, so nothing
  // is to be plugged: rdma status says why they carry no RDMA.
  CHECK(make_mlx_hostfile(lab_mesh(3), HostfileFormat::kMlxJacclRing).error().message ==
        "no mlx-jaccl-ring hostfile: no ring through all 3 hosts uses only pairs with an RDMA "
        "device on both ends of an 80 Gb/s cable (pairs without: h1-h2, h1-h3, h2-h3): "
        "`clusterctl rdma status CLUSTER.json` says why those cables carry no RDMA");
  // Without a ring of cables, verify-mesh says what to plug where.
  CHECK(make_mlx_hostfile(path, HostfileFormat::kMlxJacclRing)
            .error()
            .message.ends_with("`clusterctl verify-mesh CLUSTER.json` says what to plug where"));
  CHECK(make_mlx_hostfile(lab_mesh(1), HostfileFormat::kMlxRing).error().message ==
        "no mlx-ring hostfile: a ring needs at least 2 hosts");
}

TEST_CASE("hostfile: a cable end's address prefers the planned one, then a routable one") {
  ClusterState s = lab_mesh(2);
  port(s, "h1", "tb1").interface->ipv4 = {"169.254.3.3", "10.231.0.5"};
  port(s, "h2", "tb1").interface->ipv4 = {"169.254.4.4", "10.1.1.1", "10.231.0.6"};
  discovery::LinkAddress link{s.cables[0].a, s.cables[0].b, "10.231.0.4/30",
                              "10.231.0.5",  "10.231.0.6",  30};
  s.network = {link};
  {
    const topology::ClusterGraph g(s);
    CHECK(cable_end_address(g, 0, 0) == "10.231.0.5");
    CHECK(cable_end_address(g, 0, 1) == "10.231.0.6");
  }
  s.network.clear();
  {
    const topology::ClusterGraph g(s);
    CHECK(cable_end_address(g, 0, 0) == "10.231.0.5");  // the first outside 169.254/16
    CHECK(cable_end_address(g, 0, 1) == "10.1.1.1");
  }
  // Only a self-assigned address: none (it was the fallback, and traffic to it left by the
  // port holding the host's one 169.254/16 route, not this cable).
  port(s, "h1", "tb1").interface->ipv4 = {"169.254.3.3"};
  port(s, "h2", "tb1").interface->ipv4.clear();
  const topology::ClusterGraph g(s);
  CHECK(cable_end_address(g, 0, 0) == std::nullopt);
  CHECK(cable_end_address(g, 0, 1) == std::nullopt);
}

TEST_CASE("hostfile: a self-assigned 169.254 address is never a ring's, nor a cable's in JSON") {
  // Three Macs as macOS leaves them before `network apply`: each Thunderbolt port holds only
  // its self-assigned 169.254 address.
  ClusterState s = mesh3();
  for (auto& h : s.hosts) {
    for (std::size_t k = 0; k < h.ports.size(); ++k) {
      h.ports[k].interface->ipv4 = {fmt::format("169.254.{}.{}", h.host.back() - '0', k + 1)};
    }
  }
  auto ring = make_mlx_hostfile(s, HostfileFormat::kMlxRing);
  REQUIRE(!ring.ok());
  CHECK(ring.error().code == ExitCode::kCheckFailed);
  CHECK(ring.error().message ==
        "no mlx-ring hostfile: m1 receptacle 3 (en4) (169.254.1.3), m2 receptacle 2 (en3) "
        "(169.254.2.2), m3 receptacle 2 (en3) (169.254.3.2) have only a self-assigned 169.254 "
        "address, and a host routes all of 169.254/16 out of one port, so a ring connection to "
        "them would take that port, not their cable (docs/platform.md#self-assigned-addresses): "
        "run `clusterctl network apply CLUSTER.json` (it gives every cable an address of its own "
        "and updates the file), then write the hostfile again");
  // One end addressed by `network apply`, the rest not yet: only those are named.
  for (auto& h : s.hosts) {
    for (auto& p : h.ports) p.interface->ipv4.push_back("10.254.0." + h.host.substr(1));
  }
  port(s, "m2", "en3").interface->ipv4 = {"169.254.2.2"};
  port(s, "m3", "en3").interface->ipv4.clear();
  CHECK(make_mlx_hostfile(s, HostfileFormat::kMlxRing).error().message ==
        "no mlx-ring hostfile: m2 receptacle 2 (en3) (169.254.2.2) has only a self-assigned "
        "169.254 address, and a host routes all of 169.254/16 out of one port, so a ring "
        "connection to it would take that port, not its cable "
        "(docs/platform.md#self-assigned-addresses); m3 receptacle 2 (en3) has no IPv4 address "
        "at all: run `clusterctl network apply CLUSTER.json` (it gives every cable an address of "
        "its own and updates the file), then write the hostfile again");
  // The clusterctl format writes such an end's address as null.
  auto json = render_clusterctl_hostfile(s, {});
  REQUIRE(json.ok());
  const auto doc = nlohmann::json::parse(*json);
  bool seen = false;
  for (const auto& rank : doc["ranks"]) {
    for (const auto& peer : rank["peers"]) {
      for (const auto& c : peer["cables"]) {
        if (rank["host"] == "m2" && c["interface"] == "en3") {
          seen = true;
          CHECK(c["address"].is_null());
        }
        CHECK(c["address"] != "169.254.2.2");
        CHECK(c["peer_address"] != "169.254.2.2");
      }
    }
  }
  CHECK(seen);
}

TEST_CASE("hostfile: a Mac's self-assigned en0 address is never the coordinator") {
  ClusterState s = mesh3();
  s.hosts[0].management_address.clear();
  discovery::NetInterface en0;
  en0.name = "en0";
  en0.up = true;
  en0.ipv4 = {"169.254.3.3"};
  s.hosts[0].interfaces.push_back(en0);
  auto hf = make_mlx_hostfile(s, HostfileFormat::kMlxJaccl);
  REQUIRE(!hf.ok());
  CHECK(hf.error().code == ExitCode::kCheckFailed);
  CHECK(hf.error().message.find(
            "rank 0 (m1) has no management address (no SSH_CONNECTION was recorded) and only the "
            "self-assigned 169.254.3.3 on en0, which the other hosts would reach through "
            "whichever port holds their 169.254/16 route") != std::string::npos);
}

TEST_CASE("hostfile: mpi and mpich") {
  const ClusterState s = lab_mesh(3);
  CHECK(*render_hostfile(s, {HostfileFormat::kMpi, {}, 1}) ==
        "h1 slots=1\nh2 slots=1\nh3 slots=1\n");
  CHECK(*render_hostfile(s, {HostfileFormat::kMpich, {}, 4}) == "h1:4\nh2:4\nh3:4\n");
  auto env = render_hostfile(s, {HostfileFormat::kMpi, {"A=1"}, 1});
  REQUIRE(!env.ok());
  CHECK(env.error().code == ExitCode::kUsage);
  CHECK(env.error().message ==
        "--env has no place in an Open MPI hostfile: give it to mpirun (-x NAME=VALUE)");
  CHECK(render_hostfile(s, {HostfileFormat::kMpich, {"A=1"}, 1}).error().message ==
        "--env has no place in an MPICH hostfile: give it to mpiexec (-genv NAME VALUE)");
  CHECK(render_hostfile(s, {HostfileFormat::kMpi, {}, 0}).error().code == ExitCode::kUsage);
}

TEST_CASE("hostfile: a host name Open MPI's mpirun refuses is named before it is written") {
  // open-mpi/ompi#6656: Open MPI 4.1 stops at once on an IPv6 address in its hostfile ("Open RTE
  // detected a parse error in the hostfile") and on a '_' in a node name ("the regex parser has
  // detected the presence of an illegal character"); the hostfile used to be written anyway.
  CHECK(open_mpi_host_problem("studio1") == std::nullopt);
  CHECK(open_mpi_host_problem("mac-2.local") == std::nullopt);
  CHECK(open_mpi_host_problem("admin@studio2.local") == std::nullopt);  // USER@ is taken
  CHECK(open_mpi_host_problem("10.0.0.11") == std::nullopt);
  CHECK(open_mpi_host_problem("fe80::1%en0") == "'fe80::1%en0' is an IPv6 address");
  CHECK(open_mpi_host_problem("admin@[2001:db8::1]") == "'admin@[2001:db8::1]' is an IPv6 address");
  CHECK(open_mpi_host_problem("mac_studio") == "'mac_studio' has a '_'");
  CHECK(open_mpi_host_problem("admin@") == "'admin@' names no host");
  // A whole character, never a lone byte of one; a control character escaped.
  CHECK(open_mpi_host_problem("st\xc3\xbc" "dio2") ==
        "\"st\xc3\xbc" "dio2\" has a \"\xc3\xbc\"");
  CHECK(open_mpi_host_problem("h\t1") == "\"h\\t1\" has a \"\\t\"");
  CHECK(open_mpi_host_fix("st\xc3\xbc" "dio2", "st\xc3\xbc" "dio2").starts_with(
      "give it a name Open MPI takes: in the SSH config, `Host st-dio2` with"));
  CHECK(open_mpi_host_fix("mac_studio", "admin@fe80::1%en0") ==
        "give it a name Open MPI takes: in the SSH config, `Host mac-studio` with `HostName "
        "fe80::1%en0` and `User admin`, and name the host `mac-studio` (in an inventory, without "
        "`ssh:`)");
  ClusterState s = lab_mesh(3);
  s.hosts[1].host = "fe80::2%en0";
  auto out = render_hostfile(s, {HostfileFormat::kMpi, {}, 1});
  REQUIRE_FALSE(out.ok());
  CHECK(out.error().code == ExitCode::kUsage);
  CHECK(out.error().message ==
        "1 of 3 hosts has a name that Open MPI's mpirun does not take in its hostfile (letters, "
        "digits, '.' and '-', after an optional USER@): it would stop before any rank starts:\n"
        "  host fe80::2%en0: 'fe80::2%en0' is an IPv6 address: give it a name Open MPI takes: in "
        "the SSH config, `Host fe80-2-en0` with `HostName fe80::2%en0`, and name the host "
        "`fe80-2-en0` (in an inventory, without `ssh:`)");
  // MPICH's format is not Open MPI's: not judged by these rules.
  CHECK(render_hostfile(s, {HostfileFormat::kMpich, {}, 1}).ok());
}

TEST_CASE("hostfile: mpi names with a '.' get the note Open MPI 4 needs to keep them whole") {
  // open-mpi/ompi#4732, #11136: without orte_keep_fqdn_hostnames Open MPI 4.1.4 sshes to the
  // part of a name before its first '.' and takes node.1.foo and node.2.foo for one node "node";
  // with "slots=1" on each line it stops with "multiple definitions of the slot count" (lab).
  CHECK(open_mpi_fqdn_note({"h1", "h2", "10.0.0.11"}) == "");
  CHECK(open_mpi_fqdn_note({"studio1.local", "admin@studio2.local", "h3"}) ==
        "Open MPI 4 cuts a host name at its first '.' unless told not to: mpirun would ssh to "
        "'studio1' for studio1.local, 'admin@studio2' for admin@studio2.local; run it with "
        "`--mca orte_keep_fqdn_hostnames 1`");
  CHECK(open_mpi_fqdn_note({"node.1.foo", "Node.2.foo"}) ==
        "Open MPI 4 cuts a host name at its first '.' unless told not to: mpirun would ssh to "
        "'node' for node.1.foo, 'Node' for Node.2.foo, and take node.1.foo and Node.2.foo for "
        "one node 'node'; run it with `--mca orte_keep_fqdn_hostnames 1`");
  ClusterState s = lab_mesh(2);
  s.hosts[0].host = "node.1.foo";
  s.hosts[1].host = "node.2.foo";
  std::vector<std::string> notes;
  CHECK(*render_hostfile(s, {HostfileFormat::kMpi, {}, 1}, &notes) ==
        "node.1.foo slots=1\nnode.2.foo slots=1\n");
  REQUIRE(notes.size() == 1);
  CHECK(
      notes[0].ends_with("and take node.1.foo and node.2.foo for one node 'node'; run it with "
                         "`--mca orte_keep_fqdn_hostnames 1`"));
  notes.clear();
  CHECK(render_hostfile(s, {HostfileFormat::kMpich, {}, 1}, &notes).ok());  // not Open MPI's
  CHECK(notes.empty());
}

TEST_CASE("hostfile: a bad --env is a usage error") {
  const std::pair<const char*, const char*> cases[] = {
      {"FOO", "there is no '=' (an empty value is NAME=)"},
      {"=1", "there is no name before '='"},
      {"1A=2",
       "'1A' is not a valid environment variable name: use letters, digits and '_', not "
       "starting with a digit"},
      {"A-B=1",
       "'A-B' is not a valid environment variable name: use letters, digits and '_', not "
       "starting with a digit"}};
  for (const auto& c : cases) {
    auto r = render_hostfile(mesh3(), {HostfileFormat::kMlxJaccl, {"OK=1", c.first}, 1});
    REQUIRE(!r.ok());
    CHECK(r.error().code == ExitCode::kUsage);
    CHECK(r.error().message ==
          fmt::format("--env {}: expected NAME=VALUE, but {}", c.first, c.second));
  }
  CHECK(render_hostfile(mesh3(), {HostfileFormat::kClusterctl, {"A="}, 1}).ok());
  // Every bad entry is named in one run, in the order given, not only the first.
  auto all = render_hostfile(mesh3(), {HostfileFormat::kMlxJaccl, {"FOO", "OK=1", "=1"}, 1});
  REQUIRE(!all.ok());
  CHECK(all.error().message ==
        "--env FOO: expected NAME=VALUE, but there is no '=' (an empty value is NAME=)\n"
        "--env =1: expected NAME=VALUE, but there is no name before '='");
}

TEST_CASE("hostfile: every format refuses a cluster with unreachable hosts") {
  ClusterState s = mesh3();
  s.problems.push_back({"m4", 3, "m4: cannot connect to 10.0.0.14:22 (connection refused)"});
  for (const auto& name : hostfile_format_names()) {
    auto r = render_hostfile(s, {*hostfile_format(name), {}, 1});
    REQUIRE(!r.ok());
    CHECK(r.error().code == ExitCode::kUnreachable);
    CHECK(r.error().message ==
          "a hostfile needs every host, and one could not be probed:\n"
          "  m4: cannot connect to 10.0.0.14:22 (connection refused)");
  }
  CHECK(render_hostfile(ClusterState{}, {}).error().code == ExitCode::kUsage);

  // Every host unreachable (`hostfile --hosts a,b`): exit 3 naming them, not "no hosts" (2).
  ClusterState none;
  none.problems = {{"a", 3, "a: cannot connect to a:22 (connection refused)"},
                   {"b", 3, "b: cannot connect to b:22 (timed out after 10 s)"}};
  for (const auto& name : hostfile_format_names()) {
    auto r = render_hostfile(none, {*hostfile_format(name), {}, 1});
    REQUIRE(!r.ok());
    CHECK(r.error().code == ExitCode::kUnreachable);
    CHECK(r.error().message ==
          "a hostfile needs every host, and none could be probed:\n"
          "  a: cannot connect to a:22 (connection refused)\n"
          "  b: cannot connect to b:22 (timed out after 10 s)");
  }
}

TEST_CASE("hostfile: clusterctl.hostfile/1") {
  ClusterState s = macs(2, 2);
  cable_macs(s, "m1", 1, "m2", 2);
  cable_macs(s, "m1", 2, "m2", 1);
  auto text = render_clusterctl_hostfile(s, {"A=1"});
  REQUIRE(text.ok());
  CHECK(text->back() == '\n');
  CHECK(nlohmann::json::parse(*text) == nlohmann::json::parse(R"({
    "schema": "clusterctl.hostfile/1", "world_size": 2, "coordinator": "10.0.0.11",
    "ring": [0, 1], "envs": ["A=1"],
    "ranks": [
      {"rank": 0, "host": "m1", "ssh": "m1", "management_address": "10.0.0.11",
       "peers": [{"rank": 1, "host": "m2", "cables": [
         {"interface": "en2", "receptacle": 1, "rdma_device": "rdma_en2",
          "address": "10.254.11.1", "peer_interface": "en3", "peer_receptacle": 2,
          "peer_rdma_device": "rdma_en3", "peer_address": "10.254.22.2", "link_speed_gbps": 80},
         {"interface": "en3", "receptacle": 2, "rdma_device": "rdma_en3",
          "address": "10.254.12.1", "peer_interface": "en2", "peer_receptacle": 1,
          "peer_rdma_device": "rdma_en2", "peer_address": "10.254.21.2",
          "link_speed_gbps": 80}]}]},
      {"rank": 1, "host": "m2", "ssh": "m2", "management_address": "10.0.0.12",
       "peers": [{"rank": 0, "host": "m1", "cables": [
         {"interface": "en3", "receptacle": 2, "rdma_device": "rdma_en3",
          "address": "10.254.22.2", "peer_interface": "en2", "peer_receptacle": 1,
          "peer_rdma_device": "rdma_en2", "peer_address": "10.254.11.1", "link_speed_gbps": 80},
         {"interface": "en2", "receptacle": 1, "rdma_device": "rdma_en2",
          "address": "10.254.21.2", "peer_interface": "en3", "peer_receptacle": 2,
          "peer_rdma_device": "rdma_en3", "peer_address": "10.254.12.1",
          "link_speed_gbps": 80}]}]}]})"));
}

TEST_CASE("hostfile: clusterctl format on a lab without a ring or addresses") {
  auto text = render_hostfile(lab_mesh(3, {{1, 3}}), {HostfileFormat::kClusterctl, {}, 1});
  REQUIRE(text.ok());
  const auto j = nlohmann::json::parse(*text);
  CHECK(j["schema"] == "clusterctl.hostfile/1");
  CHECK(j["coordinator"] == "10.77.0.1");
  CHECK(j["ring"].is_null());
  CHECK(j["envs"] == nlohmann::json::array());
  CHECK(j["ranks"][0]["peers"] == nlohmann::json::parse(R"([{"rank": 1, "host": "h2",
    "cables": [{"interface": "tb1", "receptacle": null, "rdma_device": null, "address": null,
                "peer_interface": "tb1", "peer_receptacle": null, "peer_rdma_device": null,
                "peer_address": null, "link_speed_gbps": 0}]}])"));
  CHECK(j["ranks"][1]["peers"].size() == 2);
  CHECK(j["ranks"][2]["peers"][0]["rank"] == 1);
}

TEST_CASE("hostfile_ssh_hint: how mpirun and mlx.launch reach a lab's hosts") {
  // As cli's fix_command fills it for --lab t3a.
  discovery::FixCommand lab{"--lab t3a", "cluster.json", ""};
  lab.ssh_config = "/state/labs/t3a/ssh_config";
  lab.ssh_options = "-F /state/labs/t3a/ssh_config";
  CHECK(hostfile_ssh_hint(HostfileFormat::kMpi, lab, "hosts-mpi.txt", true) ==
        "its host names resolve only through the SSH config /state/labs/t3a/ssh_config, which "
        "ssh reads only when told: run `mpirun --hostfile hosts-mpi.txt --mca plm_rsh_agent "
        "\"ssh -F /state/labs/t3a/ssh_config\" --allow-run-as-root PROGRAM` (README, "
        "\"Hostfiles\")");
  CHECK(hostfile_ssh_hint(HostfileFormat::kMpi, lab, "", false).find(
            "`mpirun --hostfile FILE --mca plm_rsh_agent \"ssh -F /state/labs/t3a/ssh_config\" "
            "PROGRAM`") != std::string::npos);
  for (auto f : {HostfileFormat::kMlxRing, HostfileFormat::kMlxJaccl,
                 HostfileFormat::kMlxJacclRing}) {
    CHECK(hostfile_ssh_hint(f, lab, "hosts.json", true) ==
          "its host names resolve only through the SSH config /state/labs/t3a/ssh_config, "
          "which ssh reads only when told: for mlx.launch, put `Include "
          "/state/labs/t3a/ssh_config` at the top of ~/.ssh/config (README, \"Hostfiles\")");
  }
  CHECK(hostfile_ssh_hint(HostfileFormat::kMpich, lab, "h.txt", true)
            .ends_with("for mpiexec, put `Include /state/labs/t3a/ssh_config` at the top of "
                       "~/.ssh/config (README, \"Hostfiles\")"));
  // A path Open MPI cannot take (it splits its agent at blanks): the Include, quoted as
  // ssh_config quotes.
  discovery::FixCommand spaced = lab;
  spaced.ssh_config = "/my labs/ssh_config";
  spaced.ssh_options = "-F '/my labs/ssh_config'";
  CHECK(hostfile_ssh_hint(HostfileFormat::kMpi, spaced, "h.txt", true)
            .ends_with("for mpirun, put `Include \"/my labs/ssh_config\"` at the top of "
                       "~/.ssh/config (README, \"Hostfiles\")"));
  // Names ssh knows by itself, and our own format (launch reads the config): nothing to say.
  CHECK(hostfile_ssh_hint(HostfileFormat::kMpi, discovery::FixCommand{}, "h.txt", true) == "");
  CHECK(hostfile_ssh_hint(HostfileFormat::kClusterctl, lab, "h.json", true) == "");
}

TEST_CASE("hostfile_output: every format hostfile writes is one to replace, nothing else") {
  const auto own = hostfile_output();
  for (auto f : {HostfileFormat::kClusterctl, HostfileFormat::kMlxJaccl,
                 HostfileFormat::kMlxJacclRing, HostfileFormat::kMpi, HostfileFormat::kMpich}) {
    CAPTURE(to_string(f));
    auto text = render_hostfile(mesh3(), {f, {}, 1});
    REQUIRE_MESSAGE(text.ok(), (text.ok() ? "" : text.error().message));
    CHECK(own.is_one(*text));
  }
  CHECK(own.is_one(R"([{"ssh": "a", "ips": ["169.254.1.1"]}, {"ssh": "b"}])"));  // bad, still MLX
  // A cluster state has "hosts" too: `hostfile -o cluster.json` must not replace it.
  CHECK_FALSE(own.is_one(R"({"schema": "clusterctl.cluster/1", "hosts": []})"));
  CHECK_FALSE(own.is_one("name: job\ncommand: [true]\nhosts: [h1, h2]\n"));
  CHECK_FALSE(own.is_one(R"({"schema": "clusterctl.health-baseline/1"})"));
  CHECK_FALSE(own.is_one("[1, 2]"));
}

TEST_CASE("hostfile_output: a text is an MPI hostfile only when it has a host count") {
  const auto own = hostfile_output();
  // Words, one a line, are valid host names too: replacing them said exit 0 and lost the file.
  CHECK_FALSE(own.is_one("TODO\nbackup\nrestore\n"));
  CHECK_FALSE(own.is_one("precious\n"));
  CHECK_FALSE(own.is_one("h1\nh2\n"));  // a bare host list: --force
  CHECK_FALSE(own.is_one("# only a comment\n"));
  CHECK_FALSE(own.is_one("milk eggs=2\n"));             // not Open MPI's key
  CHECK_FALSE(own.is_one("h1 slots=two\n"));            // no count
  CHECK_FALSE(own.is_one("h1 slots=2\nbuy milk\n"));    // a line of prose
  CHECK_FALSE(own.is_one("note:1 slots=2 x\n"));
  CHECK_FALSE(own.is_one("ti/me:5\n"));
  // A hand-written Open MPI hostfile (a bare line among counted ones), MPICH's, and ours.
  CHECK(own.is_one("# my hosts\nh1 slots=2 max_slots=4\nh2 slots=2\nlocalhost\n"));
  CHECK(own.is_one("10.0.0.1:2\nh2.example.com:4\n"));
  CHECK(own.is_one("alice@h1 slots=1\n"));
  // MLX's JSON beside other JSON with a "hosts" list.
  CHECK(own.is_one(R"({"backend": "jaccl", "envs": [], "hosts": [{"ssh": "a"}]})"));
  CHECK_FALSE(own.is_one(R"({"hosts": ["a", "b"]})"));
  CHECK_FALSE(own.is_one(R"({"all": {}, "hosts": [{"ssh": "a"}]})"));
}

}  // namespace
}  // namespace cc::provision
