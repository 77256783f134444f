#include "discovery/cluster_state.h"

#include <unistd.h>
#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "util/atomic_file.h"

using namespace cc::discovery;
using nlohmann::json;

namespace {

// Two Macs a and b, receptacles 1 and 2 (en1, en2) each, one cable a:1 - b:1; `edit` changes it.
json state_json() {
  auto mac = [](const char* name) {
    json ports = json::array();
    for (int r = 1; r <= 2; ++r) {
      ports.push_back({{"receptacle", r},
                       {"interface", {{"name", "en" + std::to_string(r)}}},
                       {"rdma_device", "rdma_en" + std::to_string(r)}});
    }
    return json{{"host", name}, {"os", {{"name", "macOS"}}}, {"ports", ports}};
  };
  auto end = [](const char* host, int r) {
    return json{{"host", host},
                {"interface", "en" + std::to_string(r)},
                {"receptacle", r},
                {"rdma_device", "rdma_en" + std::to_string(r)}};
  };
  return json{{"schema", kClusterSchema},
              {"hosts", {mac("a"), mac("b")}},
              {"cables", {{{"a", end("a", 1)}, {"b", end("b", 1)}, {"sources", {"thunderbolt"}}}}},
              {"problems", json::array()},
              {"network", json::array()}};
}

std::string error_of(const json& j) {
  auto s = cluster_state_from_json(j);
  REQUIRE(!s.ok());
  CHECK(s.error().code == cc::util::ExitCode::kUsage);
  return s.error().message;
}

}  // namespace

TEST_CASE("cluster state: a consistent state reads, and survives a round trip") {
  auto s = cluster_state_from_json(state_json());
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
  CHECK(s->hosts.size() == 2);
  REQUIRE(s->cables.size() == 1);
  CHECK(s->cables[0].b.host == "b");
  CHECK(cluster_state_from_json(json(*s)).ok());
}

TEST_CASE("cluster state: the lab it was discovered on is kept, and only written when set") {
  auto s = cluster_state_from_json(state_json());
  REQUIRE(s.ok());
  CHECK(s->lab.empty());
  CHECK_FALSE(json(*s).contains("lab"));  // real hosts: no key
  s->lab = "t3a";
  const json written = json(*s);
  CHECK(written.at("lab") == "t3a");
  auto back = cluster_state_from_json(written);
  REQUIRE(back.ok());
  CHECK(back->lab == "t3a");
  json bad = written;
  bad["lab"] = 7;
  CHECK(error_of(bad).find("lab") != std::string::npos);
}

TEST_CASE("cluster state: cables must name hosts and ports of the state") {
  json j = state_json();
  j["cables"][0]["b"]["host"] = "ghost";
  CHECK(error_of(j) ==
        "cluster state: cables[0].b.host: \"ghost\" is not a host of this state (its hosts: a, b)");

  j = state_json();
  j["cables"][0]["a"]["interface"] = "en99";
  CHECK(error_of(j) ==
        "cluster state: cables[0].a: interface \"en99\" is not a port of a (its ports: "
        "receptacle 1 (en1), receptacle 2 (en2))");

  j = state_json();
  j["cables"][0]["a"]["interface"] = "";
  j["cables"][0]["a"]["receptacle"] = -5;
  CHECK(error_of(j) ==
        "cluster state: cables[0].a: receptacle -5 is not a receptacle number (they count from 1)");

  j = state_json();
  j["cables"][0]["a"]["interface"] = "";
  j["cables"][0]["a"]["receptacle"] = 7;
  CHECK(error_of(j) ==
        "cluster state: cables[0].a: receptacle 7 is not a port of a (its ports: receptacle 1 "
        "(en1), receptacle 2 (en2))");

  j = state_json();
  j["cables"][0]["a"]["receptacle"] = 2;  // en1 is receptacle 1
  CHECK(error_of(j) ==
        "cluster state: cables[0].a: receptacle 2 is not a's receptacle of en1 (its ports: "
        "receptacle 1 (en1), receptacle 2 (en2))");

  j = state_json();
  j["cables"][0]["b"] = j["cables"][0]["a"];
  j["cables"][0]["b"]["interface"] = "en2";
  j["cables"][0]["b"]["receptacle"] = 2;
  CHECK(error_of(j) ==
        "cluster state: cables[0]: joins a to itself (receptacle 1 (en1) and receptacle 2 (en2)): "
        "a cable joins two hosts; remove it");
}

TEST_CASE("cluster state: duplicate cables and hosts, null names, every problem at once") {
  json j = state_json();
  json swapped = j["cables"][0];
  std::swap(swapped["a"], swapped["b"]);
  j["cables"].push_back(swapped);  // the same cable, ends the other way round
  CHECK(error_of(j) ==
        "cluster state: cables[1]: the same cable as cables[0] (b receptacle 1 (en1) - a "
        "receptacle 1 (en1)): list each cable once; remove one of them");

  j = state_json();
  j["hosts"].push_back(j["hosts"][0]);
  CHECK(error_of(j) ==
        "cluster state: hosts[2].host: \"a\" is already hosts[0]: a host is "
        "listed once; remove one of them");

  j = state_json();
  j["hosts"][1]["host"] = nullptr;
  j["cables"][0]["a"]["host"] = "ghost";
  j["cables"].push_back(j["cables"][0]);
  j["cables"][1]["a"]["host"] = "a";
  j["cables"][1]["a"]["interface"] = "en99";
  j["network"].push_back({{"a", {{"host", "a"}, {"interface", "en1"}}},
                          {"b", {{"host", nullptr}, {"interface", "en1"}}}});
  CHECK(error_of(j) ==
        "cluster state: 6 problems:\n"
        "  hosts[1].host: missing, null or empty: every host needs the name it is reached by "
        "(its SSH name)\n"
        "  cables[0].a.host: \"ghost\" is not a host of this state (its hosts: a)\n"
        "  cables[0].b.host: \"b\" is not a host of this state (its hosts: a)\n"
        "  cables[1].a: interface \"en99\" is not a port of a (its ports: receptacle 1 (en1), "
        "receptacle 2 (en2))\n"
        "  cables[1].b.host: \"b\" is not a host of this state (its hosts: a)\n"
        "  network[0].b.host: missing, null or empty: name a host of this state (its hosts: a)");
}

namespace {
// state_json() with a second cable a:2 - b:2 and a network plan for both cables.
json planned_state() {
  json j = state_json();
  json second = j["cables"][0];
  second["a"]["interface"] = "en2";
  second["a"]["receptacle"] = 2;
  second["b"]["interface"] = "en2";
  second["b"]["receptacle"] = 2;
  j["cables"].push_back(second);
  auto link = [&](std::size_t c, const char* subnet, const char* a, const char* b) {
    return json{{"a", j["cables"][c]["a"]}, {"b", j["cables"][c]["b"]}, {"subnet", subnet},
                {"a_address", a},           {"b_address", b},           {"prefix_length", 30}};
  };
  j["network"] = {link(0, "10.231.0.4/30", "10.231.0.5", "10.231.0.6"),
                  link(1, "10.231.0.8/30", "10.231.0.9", "10.231.0.10")};
  return j;
}
}  // namespace

TEST_CASE("cluster state: a network plan with one address on two ports is refused, naming both") {
  auto planned = cluster_state_from_json(planned_state());
  REQUIRE_MESSAGE(planned.ok(), (planned.ok() ? "" : planned.error().message));
  json j = planned_state();
  j["network"][1]["b_address"] = "10.231.0.5";  // a's end of the first cable (exo#2067)
  CHECK(error_of(j) ==
        "cluster state: network[1].b_address (b receptacle 2 (en2)): 10.231.0.5 is also "
        "network[0].a_address (a receptacle 1 (en1)): one address belongs to one port; give one "
        "of them another address, or plan again with `clusterctl network plan`");
  j = planned_state();
  j["network"][0]["b_address"] = "10.231.0.5";  // both ends of one cable
  CHECK(
      error_of(j).starts_with("cluster state: network[0].b_address (b receptacle 1 (en1)): "
                              "10.231.0.5 is also network[0].a_address (a receptacle 1 (en1))"));
  j = planned_state();
  j["network"][1]["a_address"] = "10.231.0.300";
  CHECK(error_of(j) ==
        "cluster state: network[1].a_address: '10.231.0.300' is not an IPv4 address: 300 is not "
        "a number from 0 to 255");
}

TEST_CASE("cluster state: a network plan with one subnet on two cables is refused, naming both") {
  json j = planned_state();
  j["network"][1]["subnet"] = "10.231.0.4/30";
  CHECK(error_of(j) ==
        "cluster state: network[1].subnet (a receptacle 2 (en2) - b receptacle 2 (en2)): "
        "10.231.0.4/30 is also network[0].subnet 10.231.0.4/30 (a receptacle 1 (en1) - b "
        "receptacle 1 (en1)): one subnet belongs to one cable; give one of them another subnet, "
        "or plan again with `clusterctl network plan`");
  j = planned_state();
  j["network"][1]["subnet"] = "10.231.0.0/29";  // holds 10.231.0.4/30
  CHECK(
      error_of(j).starts_with("cluster state: network[1].subnet (a receptacle 2 (en2) - b "
                              "receptacle 2 (en2)): 10.231.0.0/29 overlaps network[0].subnet"));
  j = planned_state();
  j["network"][0]["subnet"] = "10.231.0.4";
  CHECK(error_of(j) ==
        "cluster state: network[0].subnet: '10.231.0.4' is not an IPv4 subnet "
        "(like 10.231.0.4/30)");
}

TEST_CASE("cluster state: host names that differ in case or a final dot are one host") {
  json j = state_json();
  j["hosts"].push_back(j["hosts"][0]);
  j["hosts"][2]["host"] = "A.";
  CHECK(error_of(j) ==
        "cluster state: hosts[2].host: \"A.\" is hosts[0] (\"a\") again (host names ignore case "
        "and a final dot): a host is listed once; remove one of them");
}

TEST_CASE("cluster state: a wrong field type names its index") {
  json j = state_json();
  j["cables"][0]["a"]["receptacle"] = "one";
  CHECK(error_of(j).find("cluster state: cables[0].a.receptacle: ") == 0);
  j = state_json();
  j["hosts"] = 3;
  CHECK(error_of(j) == "cluster state: hosts: must be a list, but is number");
}

TEST_CASE("cluster state: every value of the wrong type at once, in each list") {
  json j = state_json();
  j["cables"][0]["a"]["receptacle"] = "one";
  j["hosts"][1]["ports"] = "none";
  j["network"] = json::array({{{"subnet", 5}}});
  j["lab"] = 5;
  const std::string e = error_of(j);
  CAPTURE(e);
  CHECK(e.starts_with("cluster state: 4 problems:\n  hosts[1].ports: "));
  CHECK(e.find("\n  cables[0].a.receptacle: ") != std::string::npos);
  CHECK(e.find("\n  network[0].subnet: ") != std::string::npos);
  CHECK(e.find("\n  lab: ") != std::string::npos);
}

TEST_CASE("cluster state: load_cluster_state names the file and the JSON path") {
  const auto path = std::filesystem::temp_directory_path() /
                    ("cc-cluster-state-test-" + std::to_string(::getpid()) + ".json");
  json j = state_json();
  j["cables"][0]["b"]["host"] = "ghost";
  REQUIRE(cc::util::write_file_atomic(path.string(), j.dump(2)).ok());
  auto s = load_cluster_state(path.string());
  std::filesystem::remove(path);
  REQUIRE(!s.ok());
  CHECK(s.error().code == cc::util::ExitCode::kUsage);
  CHECK(s.error().message ==
        path.string() +
            ": cables[0].b.host: \"ghost\" is not a host of this state (its hosts: a, b) (fix it, "
            "or write it again with `clusterctl discover -o " +
            path.string() + "`)");
}

TEST_CASE("cluster state: the fix of a bad or missing file runs as printed, with its lab") {
  // In a directory of its own: a missing file with one of a close name beside it gets "did you
  // mean" instead (another run's file in /tmp would be one).
  const auto dir = std::filesystem::temp_directory_path() /
                   ("cc-cluster-state-" + cc::util::random_hex(4));
  std::filesystem::create_directories(dir);
  const auto path = dir / ("cc cluster state " + std::to_string(::getpid()) + ".json");
  const std::string quoted = "'" + path.string() + "'";
  json j = state_json();
  j["cables"][0]["b"]["host"] = "ghost";
  j["lab"] = "t3a";  // the file still says which lab it was discovered on
  REQUIRE(cc::util::write_file_atomic(path.string(), j.dump(2)).ok());
  auto s = load_cluster_state(path.string());
  REQUIRE(!s.ok());
  CHECK(s.error().message.ends_with("(fix it, or write it again with `clusterctl --lab t3a "
                                    "discover -o " + quoted + "`)"));
  // The command's own options that select the hosts win.
  auto given = load_cluster_state(path.string(), "--inventory 'my inv.yaml'");
  REQUIRE(!given.ok());
  CHECK(given.error().message.ends_with("`clusterctl --inventory 'my inv.yaml' discover -o " +
                                        quoted + "`)"));
  // A lab field that is no lab name is not repeated into the command.
  j["lab"] = "t3a; rm -rf ~";
  REQUIRE(cc::util::write_file_atomic(path.string(), j.dump(2)).ok());
  auto odd = load_cluster_state(path.string());
  REQUIRE(!odd.ok());
  CHECK(odd.error().message.ends_with("`clusterctl discover -o " + quoted + "`)"));
  std::filesystem::remove(path);
  auto missing = load_cluster_state(path.string(), "--lab t3a");
  REQUIRE(!missing.ok());
  CHECK(missing.error().message.ends_with("(make one with `clusterctl --lab t3a discover -o " +
                                          quoted + "`)"));
  // A typo of a file beside it: "did you mean" that file, not a new discovery.
  REQUIRE(cc::util::write_file_atomic(dir / "cluster.json", j.dump(2)).ok());
  auto typo = load_cluster_state((dir / "cluster.jsn").string(), "--lab t3a");
  REQUIRE(!typo.ok());
  CHECK(typo.error().message == (dir / "cluster.jsn").string() +
                                    ": cannot read: No such file or directory (did you mean '" +
                                    (dir / "cluster.json").string() + "'?)");
  std::filesystem::remove_all(dir);
}

TEST_CASE("cluster state: same_machines finds one machine under two names") {
  auto mac = [](const char* name, const char* addr, std::vector<std::string> uuids) {
    HostFacts h;
    h.host = name;
    h.management_address = addr;
    int r = 0;
    for (auto& u : uuids) {
      Port p;
      p.receptacle = ++r;
      p.domain_uuid = u;
      h.ports.push_back(p);
    }
    return h;
  };
  const std::string u1 = "00000001-0000-4000-8000-000000000001";
  const std::string u2 = "00000002-0000-4000-8000-000000000002";
  const std::string u3 = "00000003-0000-4000-8000-000000000003";
  // studio1.local is studio1: the same UUIDs and address.
  std::vector<HostFacts> hosts = {mac("studio1", "10.0.0.11", {u1, u2}),
                                  mac("studio2", "10.0.0.12", {u3}),
                                  mac("studio1.local", "10.0.0.11", {u1, u2})};
  auto same = same_machines(hosts);
  REQUIRE(same.size() == 1);
  CHECK(same[0].first == 0);
  CHECK(same[0].second == 2);
  // Every piece of evidence, the first shared UUID for the Thunderbolt identity.
  CHECK(same[0].why == "both have Thunderbolt domain UUID " + u1 +
                           " (receptacle 1 on studio1, receptacle 1 on studio1.local); both "
                           "have the management address 10.0.0.11");
  CHECK(same[0].advice.empty());
  // Same address, different machines by their Thunderbolt identity (two NATs): not flagged.
  hosts[2] = mac("other", "10.0.0.11", {"00000009-0000-4000-8000-000000000009"});
  CHECK(same_machines(hosts).empty());
  // Same address, no Thunderbolt identity on either (Linux hosts): the same machine.
  hosts = {mac("h1", "10.0.0.1", {}), mac("h1-alias", "10.0.0.1", {}), mac("h2", "", {}),
           mac("h3", "", {})};
  same = same_machines(hosts);
  REQUIRE(same.size() == 1);
  CHECK(same[0].why == "both have the management address 10.0.0.1");
  // In a state file: refused with both paths.
  json j = state_json();
  j["hosts"][0]["management_address"] = "10.0.0.11";
  j["hosts"].push_back(j["hosts"][0]);
  j["hosts"][2]["host"] = "a.local";
  CHECK(error_of(j) ==
        "cluster state: hosts[2].host: \"a.local\" is the same machine as hosts[0] (\"a\": both "
        "have the management address 10.0.0.11): list each machine once, under one name");
}

namespace {

HostFacts linux_host(const char* name, const char* addr, std::optional<std::string> id,
                     std::optional<std::string> key) {
  HostFacts h;
  h.host = name;
  h.os.name = "Debian GNU/Linux";
  h.management_address = addr;
  h.machine_id = std::move(id);
  h.ssh_host_key = std::move(key);
  return h;
}

const std::string kId1 = "4c0e2b6f9a1d4e3f8b7a6c5d4e3f2a1b";
const std::string kId2 = "9d8c7b6a5f4e4d3c8b2a19f8e7d6c5b4";
const std::string kKey1 = "SHA256:Zk3r8pQwVh2mB9xTn4LsYc7uJd1eGf6aHk0oPi5vRtE";
const std::string kKey2 = "SHA256:Qm7tX2wLp9sVb4nHc8rKz1yJf6uDg3eAo5iWq0xNvPk";

}  // namespace

TEST_CASE("cluster state: same_machines by machine ID, reached over two addresses") {
  // gpu1 over its LAN address and over its VPN address: nothing but the machine ID and the
  // host key says it is one machine.
  std::vector<HostFacts> hosts = {linux_host("gpu1", "10.0.0.5", kId1, kKey1),
                                  linux_host("gpu2", "10.0.0.6", kId2, kKey2),
                                  linux_host("gpu1-ts", "100.64.0.5", kId1, kKey1)};
  auto same = same_machines(hosts);
  REQUIRE(same.size() == 1);
  CHECK(same[0].first == 0);
  CHECK(same[0].second == 2);
  CHECK(same[0].why ==
        "both have machine ID " + kId1 + " (/etc/machine-id); both have SSH host key " + kKey1);
  // Clones of one image share both: say how to tell them apart.
  CHECK(same[0].advice.find("give one of them its own machine ID (`sudo rm /etc/machine-id && "
                            "sudo systemd-machine-id-setup`, then reboot it)") !=
        std::string::npos);
  CHECK(same[0].advice.find("its own SSH host keys (`sudo rm /etc/ssh/ssh_host_*_key* && sudo "
                            "ssh-keygen -A`") != std::string::npos);
  // The machine ID alone is enough; so is the host key alone.
  hosts[2].ssh_host_key.reset();
  same = same_machines(hosts);
  REQUIRE(same.size() == 1);
  CHECK(same[0].why == "both have machine ID " + kId1 + " (/etc/machine-id)");
  CHECK(same[0].advice.find("ssh-keygen") == std::string::npos);
  hosts[2].machine_id = "1111111111111111111111111111111a";
  hosts[2].ssh_host_key = kKey1;
  same = same_machines(hosts);
  REQUIRE(same.size() == 1);
  CHECK(same[0].why == "both have SSH host key " + kKey1);
  CHECK(same[0].advice.find("systemd-machine-id-setup") == std::string::npos);
  // Nothing shared: three machines.
  hosts[2].ssh_host_key = "SHA256:ZZZZ";
  CHECK(same_machines(hosts).empty());
}

TEST_CASE("cluster state: same_machines by a Mac's hardware UUID, no clone advice") {
  auto mac = [](const char* name, const char* addr) {
    HostFacts h;
    h.host = name;
    h.os.name = "macOS";
    h.management_address = addr;
    h.machine_id = "5E0F1C2A-7B3D-5A49-9C1E-0D2F3A4B5C6D";
    return h;
  };
  auto same = same_machines({mac("studio1", "10.0.0.11"), mac("studio1-wifi", "10.0.1.11")});
  REQUIRE(same.size() == 1);
  CHECK(same[0].why ==
        "both have hardware UUID 5E0F1C2A-7B3D-5A49-9C1E-0D2F3A4B5C6D (IOPlatformUUID)");
  CHECK(same[0].advice.empty());  // a Mac's hardware UUID is its own, not a disk image's
}

TEST_CASE("cluster state: one address, told apart by machine ID or host key, is two machines") {
  // Two machines behind two NATs, both reached as 192.168.1.10 (no Thunderbolt on either).
  std::vector<HostFacts> hosts = {linux_host("site-a", "192.168.1.10", kId1, kKey1),
                                  linux_host("site-b", "192.168.1.10", kId2, kKey2)};
  CHECK(same_machines(hosts).empty());
  hosts[1].machine_id.reset();  // only the host keys differ: still two
  CHECK(same_machines(hosts).empty());
  hosts[1].ssh_host_key.reset();  // nothing known on b: the address decides, as before
  auto same = same_machines(hosts);
  REQUIRE(same.size() == 1);
  CHECK(same[0].why == "both have the management address 192.168.1.10");
  CHECK(same[0].advice.empty());
  // Same address and same machine ID: both pieces of evidence are named, no clone advice
  // (a clone would not have the same address).
  hosts[1].machine_id = kId1;
  same = same_machines(hosts);
  REQUIRE(same.size() == 1);
  CHECK(same[0].why == "both have machine ID " + kId1 +
                           " (/etc/machine-id); both have the management address "
                           "192.168.1.10");
  CHECK(same[0].advice.empty());
}

TEST_CASE("cluster state: a state file with one machine twice by machine ID is refused") {
  json j = state_json();
  j["hosts"][0]["os"]["name"] = "Debian GNU/Linux";
  j["hosts"][1]["os"]["name"] = "Debian GNU/Linux";
  j["hosts"][0]["machine_id"] = kId1;
  j["hosts"][1]["machine_id"] = kId1;
  std::string e = error_of(j);
  CHECK(e.find("cluster state: hosts[1].host: \"b\" is the same machine as hosts[0] (\"a\": both "
               "have machine ID " +
               kId1 +
               " (/etc/machine-id)): list each machine once, under "
               "one name; if they are two machines cloned from one image, give one of them its "
               "own machine ID (`sudo rm /etc/machine-id && sudo systemd-machine-id-setup`, then "
               "reboot it)") == 0);
  // Files written before machine_id and ssh_host_key existed load as before.
  json old = state_json();
  CHECK(cluster_state_from_json(old).ok());
  j["hosts"][1]["machine_id"] = nullptr;
  j["hosts"][1]["ssh_host_key"] = nullptr;
  CHECK(cluster_state_from_json(j).ok());
}

TEST_CASE("host_problem: the probe's exit code is kept for unreachable and refused destinations") {
  using cc::util::ExitCode;
  const auto gone = host_problem("h1", cc::util::error(ExitCode::kUnreachable, "h1: timed out"));
  CHECK(gone.exit_code == 3);
  CHECK(gone.unreachable());
  CHECK(gone.code() == ExitCode::kUnreachable);
  CHECK(gone.message == "h1: timed out");
  // A destination refused before any connection (an unscoped fe80::1): the operator's to fix.
  const auto refused = host_problem("h2", cc::util::error(ExitCode::kUsage, "'fe80::1' is ..."));
  CHECK(refused.exit_code == 2);
  CHECK(refused.bad_destination());
  CHECK_FALSE(refused.unreachable());
  CHECK(refused.code() == ExitCode::kUsage);
  CHECK(refused.message == "h2: 'fe80::1' is ...");
  // Anything else is a probe that failed; a number written by hand too.
  CHECK(host_problem("h3", cc::util::error(ExitCode::kJobFailed, "x")).exit_code == 1);
  CHECK(HostProblem{"h4", 7, "h4: ?"}.code() == ExitCode::kCheckFailed);
}

TEST_CASE("cluster_state_output: what discover -o replaces without --force") {
  const auto own = cluster_state_output();
  CHECK(own.is_one(R"({"schema": "clusterctl.cluster/1", "hosts": []})"));
  CHECK(own.is_one(R"({"schema": "clusterctl.cluster/1", "hosts": 5})"));  // bad, but a state
  CHECK_FALSE(own.is_one("name: job\ncommand: [true]\n"));
  CHECK_FALSE(own.is_one(R"({"schema": "clusterctl.hostfile/1"})"));
  CHECK_FALSE(own.is_one(R"([{"ssh": "h1"}])"));
  CHECK_FALSE(own.is_one("{\"schema\": \"clusterctl.cluster/1\""));  // cut short: not JSON
  CHECK(own.what.starts_with("a clusterctl cluster state"));
}
