// Placement from the job's hosts or cluster and an in-memory inventory.
#include "launch/placement.h"

#include <doctest/doctest.h>

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
