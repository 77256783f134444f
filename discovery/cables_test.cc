#include "discovery/cables.h"

#include <string>

#include <doctest/doctest.h>

#include "discovery/discover.h"
#include "remote/replay_executor.h"

using namespace cc::discovery;
using namespace std::chrono_literals;

namespace {

const std::string kBundle = std::string(CLUSTERCTL_TEST_DATA) + "/bundles/mac-pair";

// A Linux lab-like host: ports tb1..tbN, tbK with link-local fe80::H:K.
HostFacts linux_host(int h, int ports) {
  HostFacts f;
  f.host = "h" + std::to_string(h);
  f.os.name = "Debian GNU/Linux";
  for (int k = 1; k <= ports; ++k) {
    NetInterface i;
    i.name = "tb" + std::to_string(k);
    i.up = i.running = true;
    i.kind = "veth";
    i.ipv6 = {"fe80::" + std::to_string(h) + ":" + std::to_string(k)};
    Port p;
    p.interface = i;
    f.ports.push_back(p);
  }
  return f;
}

std::string ll(int h, int k) {
  return "fe80::" + std::to_string(h) + ":" + std::to_string(k);
}

}  // namespace

TEST_CASE("cables: the Mac pair's one cable, from the Thunderbolt identities, docks ignored") {
  std::vector<HostFacts> hosts;
  for (const char* name : {"a", "b"}) {
    cc::remote::ReplayExecutor ex(kBundle, name);
    auto outputs = run_host_probe(ex, ProbeMode::kEach, 5s);
    REQUIRE(outputs.ok());
    auto facts = facts_from_probe(name, *outputs, "");
    REQUIRE_MESSAGE(facts.ok(), (facts.ok() ? "" : facts.error().message));
    hosts.push_back(*facts);
  }
  auto cables = merge_cables(hosts, {{}, {}});
  REQUIRE(cables.size() == 1);
  const Cable& c = cables[0];
  CHECK(c.a == CableEnd{"a", "en6", 2, std::nullopt});
  CHECK(c.b == CableEnd{"b", "en6", 2, std::string("rdma_en6")});
  CHECK(c.link_speed_gbps == 80);
  CHECK(c.sources == std::vector<CableSource>{CableSource::kThunderbolt});
  CHECK(c.seen_from_a);
  CHECK(c.seen_from_b);
  CHECK(end_label(c.a) == "a receptacle 2 (en6)");
}

TEST_CASE("cables: neighbour answers become cables, self, shared segments and strangers don't") {
  std::vector<HostFacts> hosts{linux_host(1, 3), linux_host(2, 3), linux_host(3, 3)};
  std::vector<std::vector<NeighbourAnswers>> answers(3);
  answers[0] = {{"tb1", {ll(1, 1), ll(2, 1)}},            // h1 tb1 - h2 tb1
                {"tb2", {ll(3, 2), ll(3, 2)}},            // h1 tb2 - h3 tb2
                {"tb3", {ll(2, 3), ll(3, 3)}}};           // a switch: two other hosts
  answers[1] = {{"tb1", {ll(1, 1)}},                      // h2 sees h1 too
                {"tb2", {"fe80::99"}}};                   // nobody we know
  auto cables = merge_cables(hosts, answers);
  REQUIRE(cables.size() == 2);
  CHECK(cables[0].a == CableEnd{"h1", "tb1", std::nullopt, std::nullopt});
  CHECK(cables[0].b == CableEnd{"h2", "tb1", std::nullopt, std::nullopt});
  CHECK(cables[0].seen_from_a);
  CHECK(cables[0].seen_from_b);
  CHECK(cables[1].a.interface == "tb2");
  CHECK(cables[1].b == CableEnd{"h3", "tb2", std::nullopt, std::nullopt});
  CHECK(cables[1].seen_from_a);
  CHECK_FALSE(cables[1].seen_from_b);  // h3 ran no probe
  CHECK(cables[1].sources == std::vector<CableSource>{CableSource::kNeighbour});
  CHECK(cables[1].link_speed_gbps == 0);
}

TEST_CASE("cables: neighbour pings are asked only on ports with carrier, and parsed per port") {
  HostFacts h = linux_host(1, 3);
  h.ports[2].interface->running = false;  // tb3 unplugged
  auto cmds = neighbour_commands(h);
  REQUIRE(cmds.size() == 2);
  CHECK(cmds[0].argv ==
        std::vector<std::string>{"ping", "-6", "-n", "-w", "1", "-i", "0.2", "ff02::1%tb1"});
  CHECK(neighbour_ping(true, "en6").argv ==
        std::vector<std::string>{"ping6", "-c", "2", "ff02::1%en6"});

  ProbeOutputs o;
  o.by_key[cmds[0].key()] = RawOutput{
      "PING ff02::1%tb1(ff02::1%tb1) 56 data bytes\n"
      "64 bytes from fe80::1:1%tb1: icmp_seq=1 ttl=64 time=0.030 ms\n"
      "64 bytes from fe80::2:1%tb1: icmp_seq=1 ttl=64 time=0.061 ms (DUP!)\n",
      "", 0};
  o.by_key[cmds[1].key()] = RawOutput{"", "", 1};  // nobody answered
  auto answers = neighbour_answers(h, o);
  REQUIRE(answers.ok());
  REQUIRE(answers->size() == 1);
  CHECK((*answers)[0].interface == "tb1");
  CHECK((*answers)[0].addresses == std::vector<std::string>{"fe80::1:1", "fe80::2:1"});
}

TEST_CASE("discover: the replayed Mac pair gives two hosts, one cable, no problems") {
  cc::remote::ReplayExecutor a(kBundle, "a"), b(kBundle, "b"), c(kBundle, "c");
  std::vector<DiscoverTarget> targets{{&a, "10.0.0.5"}, {&b, "10.0.0.6"}};
  DiscoverOptions opts;
  opts.mode = ProbeMode::kEach;
  auto state = discover(targets, opts, cc::util::OutputStyle{});
  CHECK(state.problems.empty());
  REQUIRE(state.hosts.size() == 2);
  CHECK(state.hosts[1].management_address == "10.0.0.6");
  REQUIRE(state.cables.size() == 1);
  CHECK(state.created_at.size() == 20);

  targets.push_back({&c, ""});
  auto with_missing = discover(targets, opts, cc::util::OutputStyle{});
  CHECK(with_missing.hosts.size() == 2);
  REQUIRE(with_missing.problems.size() == 1);
  CHECK(with_missing.problems[0].host == "c");
  CHECK(with_missing.problems[0].exit_code == 3);
}
