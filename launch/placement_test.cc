// Placement from the job's hosts or cluster and an in-memory inventory.
#include "launch/placement.h"

#include <fstream>
#include <regex>

#include <doctest/doctest.h>

#include "remote/inventory.h"
#include "tests/temp_dir.h"

using namespace cc::launch;

namespace {

cc::remote::Inventory inventory() {
  cc::remote::Inventory inv;
  inv.hosts = {{"h1", "admin@10.0.0.1", "10.0.0.1"}, {"h2", "h2.lab", "10.0.0.2"}};
  return inv;
}

InventoryLoader loader(std::optional<cc::remote::Inventory> inv) {
  return [inv]() -> cc::util::Result<std::optional<cc::remote::Inventory>> { return inv; };
}

JobSpec spec_of(const std::string& yaml) {
  auto s = parse_job_spec(yaml, "/tmp/job.yaml");
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
  return *s;
}

}  // namespace

TEST_CASE("placement: hosts: names in rank order, the inventory's address and ssh where known") {
  auto p = place(spec_of("name: j\nhosts: [h2, other]\ncommand: [true]\n"), loader(inventory()));
  REQUIRE(p.ok());
  REQUIRE(p->hosts.size() == 2);
  CHECK(p->hosts[0].name == "h2");
  CHECK(p->hosts[0].address == "10.0.0.2");
  CHECK(p->hosts[0].ssh == "h2.lab");
  CHECK(p->hosts[1].name == "other");
  CHECK(p->hosts[1].address.empty());
  CHECK(p->names == std::vector<std::string>{"h2", "other"});
  CHECK_FALSE(p->mlx);
}

TEST_CASE("placement: cluster: lab:NAME takes every host of the inventory, in its order") {
  auto p = place(spec_of("name: j\ncluster: lab:default\ncommand: [true]\n"), loader(inventory()));
  REQUIRE(p.ok());
  REQUIRE(p->hosts.size() == 2);
  CHECK(p->hosts[0].name == "h1");
  CHECK(p->hosts[0].ssh == "admin@10.0.0.1");
  CHECK(p->names == std::vector<std::string>{"h1", "h2"});
}

TEST_CASE("placement: no hosts anywhere is an error naming the job file") {
  auto p = place(spec_of("name: j\ncluster: lab:default\ncommand: [true]\n"), loader(std::nullopt));
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().code == cc::util::ExitCode::kUsage);
  CHECK(p.error().message == "/tmp/job.yaml: no hosts");
}

TEST_CASE("placement: the inventory's error comes back as it is") {
  auto p = place(spec_of("name: j\nhosts: [a]\ncommand: [true]\n"),
                 []() -> cc::util::Result<std::optional<cc::remote::Inventory>> {
                   return cc::util::error(cc::util::ExitCode::kUsage, "no lab named 'x'");
                 });
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().message == "no lab named 'x'");
}

TEST_CASE("placement: check_coordinator refuses a self-assigned or link-local rank 0 address") {
  // Rank 0's address (else its name) is every other rank's CLUSTERCOMM_COORDINATOR.
  CHECK(check_coordinator({{"h1", "10.0.0.1", ""}, {"h2", "10.0.0.2", ""}}).ok());
  CHECK(check_coordinator({{"h1", "169.254.3.1", ""}}).ok());  // one host: nothing connects
  CHECK(check_coordinator({{"h1", "", ""}, {"h2", "169.254.3.2", ""}}).ok());  // not rank 0's
  auto self = check_coordinator({{"h1", "169.254.3.1", ""}, {"h2", "10.0.0.2", ""}});
  REQUIRE_FALSE(self.ok());
  CHECK(self.error().code == cc::util::ExitCode::kUsage);
  CHECK(self.error().message ==
        "host h1 (rank 0's: the coordinator) would be reached by the other hosts at 169.254.3.1, "
        "a self-assigned IPv4 address (169.254/16), which each host reaches through whichever "
        "port holds its one route for 169.254/16, not the one the address is on "
        "(docs/platform.md#self-assigned-addresses): give h1 an `address:` in the inventory "
        "that every host reaches (IPv4, or a global IPv6 address; for a cluster state, reach h1 "
        "at one and discover it again); nothing was started");
  // A name that is the address (no `address:`), scoped or not.
  for (const char* ll : {"fe80::1%en0", "fe80::1"}) {
    CAPTURE(ll);
    auto v6 = check_coordinator({{ll, "", ""}, {"h2", "", ""}});
    REQUIRE_FALSE(v6.ok());
    CHECK(v6.error().message.find(std::string("would be reached by the other hosts at ") + ll +
                                  ", a link-local IPv6 address, which names an interface of "
                                  "one machine only: ") != std::string::npos);
  }
}

TEST_CASE("placement: a ring hostfile's ips are cable ends, never a host's (the coordinator's) "
          "address") {
  // `clusterctl hostfile cluster.json --format mlx-ring`: ips[0] of h1 is its cable to its left
  // neighbour, which only that neighbour reaches. Before, it was rank 0's address and so every
  // rank's coordinator (runtime clustercomm): ranks 1 and 2 had no route to it.
  cc::test::TempDir dir;
  const std::string ring = (dir.path / "ring.json").string();
  std::ofstream(ring) << R"({"backend": "ring", "hosts": [
      {"ssh": "h1", "ips": ["10.2.1.1"]}, {"ssh": "h2", "ips": ["10.1.2.2"]}]})";
  const std::string job = "name: j\ncluster: hostfile:" + ring + "\ncommand: [true]\n";
  for (const char* runtime : {"clustercomm", "mlx-ring"}) {
    CAPTURE(runtime);
    auto p = place(spec_of(job + "runtime: " + runtime + "\n"), loader(inventory()));
    REQUIRE_MESSAGE(p.ok(), (p.ok() ? "" : p.error().message));
    REQUIRE(p->hosts.size() == 2);
    CHECK(p->hosts[0].name == "h1");
    CHECK(p->hosts[0].address == "10.0.0.1");  // the inventory's
    CHECK(p->hosts[1].address == "10.0.0.2");
    REQUIRE(p->mlx);
    CHECK(p->mlx->hosts[0].ips == std::vector<std::string>{"10.2.1.1"});  // for MLX's ring
  }
  // No inventory entry: no address, so launch gives the name ssh reaches (cmd_launch.cc).
  auto bare = place(spec_of(job), loader(std::nullopt));
  REQUIRE(bare.ok());
  CHECK(bare->hosts[0].address.empty());
  // A file without "backend" and without a device matrix is a ring one too.
  std::ofstream(ring) << R"([{"ssh": "h1", "ips": ["10.2.1.1"]}, {"ssh": "h2", "ips": ["10.1.2.2"]}])";
  auto plain = place(spec_of(job), loader(inventory()));
  REQUIRE(plain.ok());
  CHECK(plain->hosts[0].address == "10.0.0.1");
}

TEST_CASE("placement: a jaccl hostfile's ips[0] is the host's address, as MLX's coordinator") {
  cc::test::TempDir dir;
  const std::string mesh = (dir.path / "mesh.json").string();
  std::ofstream(mesh) << R"({"backend": "jaccl", "hosts": [
      {"ssh": "h1", "ips": ["192.168.5.1"], "rdma": [null, "rdma_en2"]},
      {"ssh": "h2", "ips": ["192.168.5.2"], "rdma": ["rdma_en2", null]}]})";
  auto p = place(spec_of("name: j\ncluster: hostfile:" + mesh + "\ncommand: [true]\n"),
                 loader(inventory()));
  REQUIRE_MESSAGE(p.ok(), (p.ok() ? "" : p.error().message));
  CHECK(p->hosts[0].address == "192.168.5.1");
  CHECK(p->hosts[1].address == "192.168.5.2");
}

TEST_CASE("placement: an MPI hostfile naming a host twice gets suggestions that are accepted") {
  // `printf 'h1 slots=1\nh1 slots=1\n'` as `cluster: hostfile:`: the suggested `--hosts h1,h1`
  // and `hosts: [h1, h1]` were both refused ("names host 'h1' twice").
  cc::test::TempDir dir;
  const std::string mpi = (dir.path / "mpidup.txt").string();
  std::ofstream(mpi) << "h1 slots=1\nh1 slots=1\n";
  auto p = place(spec_of("name: j\ncluster: hostfile:" + mpi + "\ncommand: [true]\n"),
                 loader(inventory()), "--lab L");
  REQUIRE_FALSE(p.ok());
  const std::string m = p.error().message;
  CAPTURE(m);
  CHECK(m.find(" h1 is named on 2 lines (" + mpi + ":1, " + mpi +
               ":2): clusterctl names each host once. For its 2 ranks per host, set "
               "`ranks_per_host: 2` in the job") != std::string::npos);
  // Each suggestion, run as printed.
  std::smatch cmd;
  REQUIRE(std::regex_search(m, cmd, std::regex("`clusterctl --lab L hostfile --hosts (\\S+) ")));
  CHECK(cmd[1] == "h1");
  CHECK(cc::remote::check_distinct_hosts(cc::remote::split_host_list(cmd[1].str()), "--hosts")
            .ok());
  std::smatch yaml;
  REQUIRE(std::regex_search(m, yaml, std::regex("`(hosts: \\[[^\\]]*\\])`")));
  std::smatch per_host;
  REQUIRE(std::regex_search(m, per_host, std::regex("`(ranks_per_host: \\d+)`")));
  auto fixed = place(spec_of("name: j\n" + yaml[1].str() + "\n" + per_host[1].str() +
                             "\ncommand: [true]\n"),
                     loader(inventory()));
  REQUIRE_MESSAGE(fixed.ok(), (fixed.ok() ? "" : fixed.error().message));
  CHECK(fixed->names == std::vector<std::string>{"h1"});

  // Hosts with different counts: each count said, no single ranks_per_host suggested.
  std::ofstream(mpi) << "h1 slots=2\nh2\n";
  auto uneven = place(spec_of("name: j\ncluster: hostfile:" + mpi + "\ncommand: [true]\n"),
                      loader(inventory()));
  REQUIRE_FALSE(uneven.ok());
  CHECK(uneven.error().message.find(
            " It gives the hosts different rank counts (h1 2, h2 1); a job runs `ranks_per_host` "
            "ranks on every one of its hosts.") != std::string::npos);
  CHECK(uneven.error().message.find("`hosts: [h1, h2]`") != std::string::npos);
  // A host with slots=0 (ompi#9221) runs no rank: the suggested job leaves it out, and the
  // others' count is the ranks_per_host suggested.
  std::ofstream(mpi) << "h3 slots=0\nh1 slots=2\nh2 slots=2\n";
  auto idle = place(spec_of("name: j\ncluster: hostfile:" + mpi + "\ncommand: [true]\n"),
                    loader(inventory()));
  REQUIRE_FALSE(idle.ok());
  const std::string im = idle.error().message;
  CAPTURE(im);
  CHECK(im.find("`hosts: [h1, h2]`") != std::string::npos);
  CHECK(im.find("set `ranks_per_host: 2`") != std::string::npos);
  CHECK(im.find("h3 (" + mpi + ":1) slots=0") != std::string::npos);
  // One rank per host, each once: nothing more is said.
  std::ofstream(mpi) << "h1\nh2 slots=1\n";
  auto plain = place(spec_of("name: j\ncluster: hostfile:" + mpi + "\ncommand: [true]\n"),
                     loader(inventory()));
  REQUIRE_FALSE(plain.ok());
  CHECK(plain.error().message.find("ranks_per_host") == std::string::npos);
  CHECK(plain.error().message.find("named on") == std::string::npos);
}
