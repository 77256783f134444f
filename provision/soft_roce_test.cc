#include "provision/soft_roce.h"

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "remote/quote.h"
#include "topology/test_states.h"

namespace cc::provision {
namespace {

using remote::CommandResult;
using std::chrono::milliseconds;
using Strings = std::vector<std::string>;

// A fake host whose answers to a command change from call to call (the last one repeats), as
// `rdma -j link` does once a device was added. Unscripted commands exit 127.
class SequenceExecutor final : public remote::Executor {
 public:
  explicit SequenceExecutor(std::string host) : host_(std::move(host)) {}
  std::map<std::string, std::deque<CommandResult>> answers;
  Strings calls;
  const std::string& host() const override { return host_; }
  util::Result<CommandResult> run(const remote::Command& cmd, const remote::RunOptions&) override {
    const std::string line = remote::shell_quote(cmd.argv);
    calls.push_back(line);
    auto it = answers.find(line);
    if (it == answers.end()) return CommandResult{127, false, "", line + ": not found\n", {}, false};
    CommandResult r = it->second.front();
    if (it->second.size() > 1) it->second.pop_front();
    return r;
  }
  util::Status upload(const std::filesystem::path&, const std::string&, unsigned,
                      milliseconds) override {
    return {};
  }

 private:
  std::string host_;
};

CommandResult ok(std::string out = "") {
  return {0, false, std::move(out), "", {}};
}
CommandResult err(int status, std::string text) {
  return {status, false, "", std::move(text), {}};
}

const char* kNoSubsystem = "Failed to open NETLINK_RDMA socket\n";
const char* kRxeTb1 =
    R"([{"ifindex":0,"ifname":"rxe_tb1","port":1,"state":"ACTIVE","physical_state":"LINK_UP","netdev":"tb1","netdev_index":3}])";
const char* kRxeBoth =
    R"([{"ifindex":0,"ifname":"rxe_tb1","port":1,"state":"ACTIVE","physical_state":"LINK_UP","netdev":"tb1","netdev_index":3},)"
    R"({"ifindex":1,"ifname":"rxe_tb2","port":1,"state":"ACTIVE","physical_state":"LINK_UP","netdev":"tb2","netdev_index":4}])";

TEST_CASE("rdma soft-roce: the cabled interfaces and the commands for the missing devices") {
  auto s = topology::testing::lab_mesh(3);
  CHECK(cabled_interfaces(s, "h1") == Strings{"tb1", "tb2"});
  CHECK(cabled_interfaces(s, "nobody").empty());

  discovery::RdmaLinks links;
  discovery::RdmaDevice d;
  d.name = "rxe_tb1";
  d.netdev = "tb1";
  links.devices.push_back(d);
  auto plan = plan_soft_roce("h1", {"tb1", "tb2"}, links);
  CHECK(plan.present == Strings{"tb1 (rxe_tb1)"});
  CHECK(plan.add == Strings{"tb2"});
  REQUIRE(plan.commands.size() == 2);
  CHECK(plan.commands[0] == Strings{"modprobe", "rdma_rxe"});
  CHECK(plan.commands[1] ==
        Strings{"rdma", "link", "add", "rxe_tb2", "type", "rxe", "netdev", "tb2"});
  CHECK(plan_soft_roce("h1", {"tb1"}, links).commands.empty());  // idempotent
}

TEST_CASE("rdma soft-roce: as root: modprobe, one rdma link add per interface, verified") {
  SequenceExecutor ex("h1");
  ex.answers["rdma -j link"] = {err(1, kNoSubsystem), ok(kRxeBoth)};
  ex.answers["id -u"] = {ok("0\n")};
  ex.answers["modprobe rdma_rxe"] = {ok()};
  ex.answers["rdma link add rxe_tb1 type rxe netdev tb1"] = {ok()};
  ex.answers["rdma link add rxe_tb2 type rxe netdev tb2"] = {ok()};
  auto r = create_soft_roce(ex, {"tb1", "tb2"}, false, milliseconds(1000), {});
  REQUIRE(r.ok());
  CHECK(r->add == Strings{"tb1", "tb2"});
  CHECK(ex.calls == Strings{"rdma -j link", "id -u", "modprobe rdma_rxe",
                            "rdma link add rxe_tb1 type rxe netdev tb1",
                            "rdma link add rxe_tb2 type rxe netdev tb2", "rdma -j link"});

  // Run again: everything is there, nothing runs but the listing.
  ex.calls.clear();
  r = create_soft_roce(ex, {"tb1", "tb2"}, false, milliseconds(1000), {});
  REQUIRE(r.ok());
  CHECK(r->add.empty());
  CHECK(ex.calls == Strings{"rdma -j link"});
}

TEST_CASE("rdma soft-roce: through sudo -n, dry run, no privileges") {
  SequenceExecutor ex("h1");
  ex.answers["rdma -j link"] = {ok(kRxeTb1), ok(kRxeBoth)};
  ex.answers["id -u"] = {ok("1000\n")};
  ex.answers["sudo -n true"] = {ok()};
  ex.answers["sudo -n modprobe rdma_rxe"] = {ok()};
  ex.answers["sudo -n rdma link add rxe_tb2 type rxe netdev tb2"] = {ok()};
  auto dry = create_soft_roce(ex, {"tb1", "tb2"}, true, milliseconds(1000), {});
  REQUIRE(dry.ok());
  CHECK(dry->add == Strings{"tb2"});
  CHECK(ex.calls == Strings{"rdma -j link"});
  ex.answers["rdma -j link"] = {ok(kRxeTb1), ok(kRxeBoth)};
  auto r = create_soft_roce(ex, {"tb1", "tb2"}, false, milliseconds(1000), {});
  REQUIRE(r.ok());
  CHECK(ex.calls.back() == "rdma -j link");
  CHECK(std::find(ex.calls.begin(), ex.calls.end(),
                  "sudo -n rdma link add rxe_tb2 type rxe netdev tb2") != ex.calls.end());

  SequenceExecutor user("h2");
  user.answers["rdma -j link"] = {ok("[]")};
  user.answers["id -u"] = {ok("1000\n")};
  user.answers["sudo -n true"] = {err(1, "sudo: a password is required\n")};
  auto none = create_soft_roce(user, {"tb1"}, false, milliseconds(1000),
                               discovery::FixCommand{"--lab t3a", "my lab.json", ""});
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == util::ExitCode::kCheckFailed);
  CHECK(none.error().message ==
        "h2: neither root nor passwordless sudo: run these on h2 yourself, then run `clusterctl "
        "rdma status --lab t3a 'my lab.json'` again:\n  sudo modprobe rdma_rxe\n  sudo rdma link "
        "add rxe_tb1 type rxe netdev tb1");
}

TEST_CASE("rdma soft-roce: a missing kernel module, a failing rdma link add, no device after") {
  SequenceExecutor ex("h1");
  ex.answers["rdma -j link"] = {ok("[]")};
  ex.answers["id -u"] = {ok("0\n")};
  ex.answers["modprobe rdma_rxe"] = {
      err(1, "modprobe: FATAL: Module rdma_rxe not found in directory /lib/modules/6.18.0\n")};
  auto r = create_soft_roce(ex, {"tb1"}, false, milliseconds(1000), {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.rfind("h1: the kernel module rdma_rxe is missing (modprobe: FATAL: "
                                "Module rdma_rxe not found",
                                0) == 0);
  CHECK(r.error().message.find("CONFIG_RDMA_RXE") != std::string::npos);

  ex.answers["modprobe rdma_rxe"] = {err(127, "sh: modprobe: command not found\n")};
  CHECK(create_soft_roce(ex, {"tb1"}, false, milliseconds(1000), {})
            .error()
            .message.find("install kmod") != std::string::npos);

  ex.answers["modprobe rdma_rxe"] = {ok()};
  ex.answers["rdma link add rxe_tb1 type rxe netdev tb1"] = {
      err(2, "error: Invalid argument\nfailed to init crc32 algorithm\n")};
  CHECK(create_soft_roce(ex, {"tb1"}, false, milliseconds(1000), {}).error().message ==
        "h1: `rdma link add rxe_tb1 type rxe netdev tb1` failed (exit status 2): error: Invalid "
        "argument");

  ex.answers["rdma link add rxe_tb1 type rxe netdev tb1"] = {ok()};
  CHECK(create_soft_roce(ex, {"tb1"}, false, milliseconds(1000), {})
            .error()
            .message.find("lists no device on tb1") != std::string::npos);

  SequenceExecutor bare("h3");  // no iproute2 `rdma`
  CHECK(create_soft_roce(bare, {"tb1"}, false, milliseconds(1000), {})
            .error()
            .message.find("install iproute2") != std::string::npos);
}

}  // namespace
}  // namespace cc::provision
