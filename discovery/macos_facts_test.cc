#include "discovery/macos_facts.h"

#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "discovery/test_fixtures.h"

using namespace cc::discovery;
using cc::discovery::testing::fixture;

namespace {

// ifconfig -a for the pair's MacBook Pros (not recorded: written after ifconfig-en2.txt and
// ifconfig-bridge0-default.txt): bridge0 active with the three Thunderbolt interfaces.
std::string ifconfig(const std::string& en6_ipv4) {
  std::string en6 =
      "en6: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n"
      "\tether 02:00:00:00:00:02\n";
  if (!en6_ipv4.empty()) en6 += "\tinet " + en6_ipv4 + " netmask 0xffff0000\n";
  en6 += "\tstatus: active\n";
  return "en0: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n"
         "\tinet 10.0.0.5 netmask 0xffffff00 broadcast 10.0.0.255\n"
         "\tstatus: active\n"
         "en1: flags=8963<UP,BROADCAST,SMART,RUNNING,PROMISC,SIMPLEX,MULTICAST> mtu 1500\n"
         "\tstatus: inactive\n" +
         en6 +
         "en2: flags=8963<UP,BROADCAST,SMART,RUNNING,PROMISC,SIMPLEX,MULTICAST> mtu 1500\n"
         "\tstatus: active\n"
         "bridge0: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n"
         "\tmember: en1 flags=3<LEARNING,DISCOVER>\n"
         "\tmember: en6 flags=3<LEARNING,DISCOVER>\n"
         "\tmember: en2 flags=3<LEARNING,DISCOVER>\n"
         "\tstatus: active\n";
}

MacosOutputs outputs(char mac) {
  bool b = mac == 'b';
  MacosOutputs o;
  o.sw_vers.out = "ProductName:\t\tmacOS\nProductVersion:\t\t27.0\nBuildVersion:\t\t27A5\n";
  o.sysctl.out = "Mac17,6\n137438953472\nApple M5 Max\n";
  o.system_profiler.out =
      fixture(std::string("macos/pair-") + mac + ".system_profiler-SPThunderboltDataType.json");
  o.networksetup.out = fixture("macos/pair.networksetup-listallhardwareports.txt");
  o.ifconfig.out = ifconfig(b ? "" : "169.254.10.1");
  o.rdma_ctl.out = b ? "enabled\n" : "disabled\n";
  o.ibv_devices.out = fixture(std::string("macos/pair-") + mac + ".ibv_devices.txt");
  o.ibv_devinfo.out = b ? fixture("macos/pair-b.ibv_devinfo.txt") : "No IB devices found\n";
  return o;
}

}  // namespace

TEST_CASE("macOS facts: Mac a, RDMA disabled, receptacle 2 = en6 cabled to b") {
  auto f = assemble_macos_facts("a", outputs('a'));
  REQUIRE_MESSAGE(f.ok(), (f.ok() ? "" : f.error().message));
  CHECK(f->host == "a");
  CHECK(f->os.version == "27.0");
  CHECK(f->model == "Mac17,6");
  CHECK(f->cpu == "Apple M5 Max");
  CHECK(f->memory_bytes == 137438953472ULL);
  CHECK(f->rdma.state == RdmaState::kDisabled);
  CHECK(f->rdma.devices.empty());
  REQUIRE(f->ports.size() == 3);
  const Port& p2 = f->ports[1];
  CHECK(p2.receptacle == 2);
  REQUIRE(p2.interface);
  CHECK(p2.interface->name == "en6");
  CHECK(p2.interface->ipv4 == std::vector<std::string>{"169.254.10.1"});
  CHECK(p2.interface->bridge == "bridge0");
  CHECK_FALSE(p2.rdma_device);
  CHECK(p2.link_speed_gbps == 80);
  REQUIRE(p2.peers.size() == 1);
  CHECK(p2.peers[0].domain_uuid == "00000003-0000-4000-8000-000000000003");
  CHECK(p2.peers[0].rdma_enabled);
  CHECK(f->ports[0].interface->name == "en1");
  CHECK(f->ports[2].interface->name == "en2");
  CHECK(f->ports[2].peers[0].kind == Peer::Kind::kDevice);  // the dock
  REQUIRE(f->interfaces.size() == 2);
  CHECK(f->interfaces[0].name == "en0");
  CHECK(f->interfaces[1].name == "bridge0");
  CHECK(f->interfaces[1].members == std::vector<std::string>{"en1", "en2", "en6"});
}

TEST_CASE("macOS facts: Mac b, RDMA enabled, rdma_en6 PORT_DOWN because a has RDMA off") {
  auto f = assemble_macos_facts("b", outputs('b'));
  REQUIRE_MESSAGE(f.ok(), (f.ok() ? "" : f.error().message));
  CHECK(f->rdma.state == RdmaState::kEnabled);
  REQUIRE(f->rdma.devices.size() == 3);
  CHECK(f->rdma.devices[0].name == "rdma_en1");
  CHECK(f->rdma.devices[1].name == "rdma_en2");
  CHECK(f->rdma.devices[2].name == "rdma_en6");
  CHECK(f->rdma.devices[2].netdev == "en6");
  const Port& p2 = f->ports[1];
  CHECK(p2.receptacle == 2);
  CHECK(p2.rdma_device == "rdma_en6");
  CHECK(p2.interface->ipv4.empty());  // no IPv4: no ::ffff: GID
  CHECK(p2.peers[0].domain_uuid == "00000004-0000-4000-8000-000000000004");
  CHECK_FALSE(p2.peers[0].rdma_enabled);
  CHECK(f->ports[2].link_speed_gbps == 40);
  // What a port can do is known only while it is idle: receptacle 1 says "Up to 120 Gb/s";
  // receptacle 3, a Thunderbolt 5 port, says only "40 Gb/s" with its Thunderbolt 3 dock.
  CHECK(f->ports[0].idle_speed_gbps == 120);
  CHECK(f->ports[1].idle_speed_gbps == 0);
  CHECK(f->ports[2].idle_speed_gbps == 0);
  CHECK(f->rdma.devices[2].ports[0].state == "PORT_DOWN");
  // The facts survive a JSON round trip.
  nlohmann::json j = *f;
  auto back = host_facts_from_json(j);
  REQUIRE(back.ok());
  CHECK(nlohmann::json(*back) == j);
}

TEST_CASE("macOS facts: an older macOS without the RDMA tools is unsupported, not an error") {
  MacosOutputs o = outputs('a');
  o.rdma_ctl = RawOutput{"", "zsh:1: command not found: rdma_ctl\n", 127};
  o.ibv_devices = RawOutput{"", "zsh:1: command not found: ibv_devices\n", 127};
  o.ibv_devinfo = RawOutput{"", "zsh:1: command not found: ibv_devinfo\n", 127};
  auto f = assemble_macos_facts("old", o);
  REQUIRE(f.ok());
  CHECK(f->rdma.state == RdmaState::kUnsupported);
  CHECK(f->rdma.devices.empty());
}

TEST_CASE("macOS facts: a bad or missing required output is an error naming host and command") {
  MacosOutputs o = outputs('b');
  o.system_profiler.out = "{\"SPThunderboltDataType\": ";
  auto f = assemble_macos_facts("b", o);
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().message.find("b: `system_profiler SPThunderboltDataType -json` output: ") == 0);

  o = outputs('b');
  o.networksetup = RawOutput{"", "sh: networksetup: command not found", 127};
  f = assemble_macos_facts("b", o);
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().message ==
        "b: `networksetup -listallhardwareports` output: command not found on this host");

  o = outputs('b');
  o.rdma_ctl = RawOutput{"", "rdma_ctl: internal error", 1};
  f = assemble_macos_facts("b", o);
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().message ==
        "b: `rdma_ctl status` output: exit status 1: \"rdma_ctl: internal error\"");
}
