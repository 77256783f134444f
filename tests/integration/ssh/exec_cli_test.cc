// The real binary ($CLUSTERCTL) against the lab: `clusterctl --lab ct8 exec ...`.
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "remote/local_executor.h"
#include "tests/integration/ssh/lab_fixture.h"
#include "util/atomic_file.h"

using cc::test::Lab;
using cc::test::TempDir;
using namespace std::chrono_literals;

namespace {

std::string binary() {
  const char* path = std::getenv("CLUSTERCTL");
  REQUIRE_MESSAGE(path != nullptr, "set CLUSTERCTL to the clusterctl binary");
  return path;
}

cc::remote::CommandResult clusterctl(std::vector<std::string> args) {
  args.insert(args.begin(), binary());
  cc::remote::LocalExecutor local;
  cc::remote::RunOptions o;
  o.timeout = 60s;
  auto r = local.run({args}, o);
  REQUIRE(r.ok());
  REQUIRE_FALSE(r->timed_out);
  return *r;
}

}  // namespace

TEST_CASE("cli: exec --hosts all -- uname -n prints the 8 hosts' names, exit 0") {
  Lab lab;
  auto r = clusterctl({"--lab", lab.name, "exec", "--hosts", "all", "--", "uname", "-n"});
  INFO("stdout:\n" << r.out << "stderr:\n" << r.err);
  CHECK(r.exit_status == 0);
  CHECK(r.err == "");
  // One block per host: a rule, "hN (1)", a rule, "hN".
  std::set<std::string> names;
  for (const auto& h : lab.inventory.hosts) {
    std::string block = "---------------\n" + h.name + " (1)\n---------------\n" + h.name + "\n";
    CHECK(r.out.find(block) != std::string::npos);
    names.insert(h.name);
  }
  CHECK(names.size() == 8);
}

TEST_CASE("cli: identical outputs collapse into one group naming all hosts") {
  Lab lab;
  auto r = clusterctl({"--lab", lab.name, "exec", "--hosts", "all", "--", "uname", "-s"});
  CHECK(r.exit_status == 0);
  CHECK(r.out ==
        "---------------------------\n"
        "h1,h2,h3,h4,h5,h6,h7,h8 (8)\n"
        "---------------------------\n"
        "Linux\n");
}

TEST_CASE("cli: --json gives one object per host in order") {
  Lab lab;
  auto r =
      clusterctl({"--lab", lab.name, "--json", "exec", "--hosts", "h3,h1", "--", "uname", "-n"});
  CHECK(r.exit_status == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.size() == 2);
  CHECK(j[0]["host"] == "h3");
  CHECK(j[0]["stdout"] == "h3\n");
  CHECK(j[0]["exit_status"] == 0);
  CHECK(j[0]["error"].is_null());
  CHECK(j[1]["host"] == "h1");
  CHECK(j[1]["stdout"] == "h1\n");
}

TEST_CASE("cli: exit status is the worst remote one, 124 on timeout, 3 when unreachable") {
  Lab lab;
  auto r = clusterctl({"--lab", lab.name, "exec", "--hosts", "h1,h2", "--shell", "--",
                       "test \"$(uname -n)\" = h2 && exit 7; exit 0"});
  CHECK(r.exit_status == 7);
  CHECK(r.err.find("h2: exit status 7") != std::string::npos);
  r = clusterctl(
      {"--lab", lab.name, "exec", "--hosts", "h1", "--timeout", "1", "--", "sleep", "10"});
  CHECK(r.exit_status == 124);
  CHECK(r.err.find("h1: timed out after 1 s") != std::string::npos);

  // The lab's inventory plus a host that does not exist.
  TempDir tmp;
  cc::remote::Inventory inv = lab.inventory;
  std::string addr = inv.hosts[0].address;
  inv.hosts.push_back({"ghost", "root@" + addr.substr(0, addr.rfind('.')) + ".201", ""});
  REQUIRE(cc::remote::save_inventory(tmp.path / "inventory.yaml", inv).ok());
  r = clusterctl({"--inventory", (tmp.path / "inventory.yaml").string(), "--connect-timeout", "1",
                  "exec", "--hosts", "h1,ghost", "--", "uname", "-n"});
  CHECK(r.exit_status == 3);
  CHECK(r.out.find("h1 (1)") != std::string::npos);
  CHECK(r.err.find("ghost: ") != std::string::npos);
}

TEST_CASE("cli: a host not in the lab is a usage error with a suggestion") {
  Lab lab;
  auto r = clusterctl({"--lab", lab.name, "exec", "--hosts", "h1,hh2", "--", "true"});
  CHECK(r.exit_status == 2);
  CHECK(r.err.find("no host 'hh2'") != std::string::npos);
  CHECK(r.err.find("did you mean 'h2'?") != std::string::npos);
}
