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
