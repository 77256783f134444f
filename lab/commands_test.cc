#include "lab/commands.h"

#include <string>

#include <doctest/doctest.h>

#include "remote/fake_executor.h"

using cc::lab::parse_ip_links;
using cc::lab::run_checked;
using cc::remote::CommandResult;
using cc::remote::FakeExecutor;
using cc::util::ExitCode;
using namespace std::chrono_literals;

TEST_CASE("commands: a failed command is named with its stderr") {
  FakeExecutor local("local");
  CommandResult fail;
  fail.exit_status = 2;
  fail.err = "RTNETLINK answers: File exists\n";
  local.on("ip -batch -", fail);
  auto r = run_checked(local, {"ip", "-batch", "-"}, 1s, std::string("link add x\n"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUsage);
  CHECK(r.error().message ==
        "`ip -batch -` failed (exit status 2): RTNETLINK answers: File exists");

  auto missing = run_checked(local, {"ssh-keygen", "-q"}, 1s, std::nullopt, ExitCode::kCheckFailed);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ExitCode::kCheckFailed);
  CHECK(missing.error().message.find("apt-get install openssh-client") != std::string::npos);

  CommandResult ok;
  ok.exit_status = 0;
  ok.out = "[]";
  local.on("ip -j link show", ok);
  auto good = run_checked(local, {"ip", "-j", "link", "show"}, 1s);
  REQUIRE(good.ok());
  CHECK(good->out == "[]");
}

TEST_CASE("commands: a command that times out says so") {
  FakeExecutor local("local");
  local.set_delay(50ms);
  auto r = run_checked(local, {"ip", "netns", "list"}, 10ms);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "`ip netns list` timed out after 0.01 s");
}

TEST_CASE("commands: ip -j link show") {
  auto links = parse_ip_links(R"([{"ifindex":1,"ifname":"lo"},
      {"ifindex":9,"ifname":"cc12ab34br","ifalias":"clusterctl-lab:t","operstate":"UP"}])");
  REQUIRE(links.ok());
  REQUIRE(links->size() == 2);
  CHECK((*links)[0].name == "lo");
  CHECK((*links)[0].alias.empty());
  CHECK((*links)[1].alias == "clusterctl-lab:t");
  CHECK((*links)[0].operstate.empty());
  CHECK((*links)[1].operstate == "UP");
  CHECK_FALSE(parse_ip_links("oops").ok());
}
