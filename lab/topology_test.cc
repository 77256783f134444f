#include "lab/topology.h"

#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

using cc::lab::CablePair;
using cc::lab::kMaxHosts;
using cc::lab::kMinHosts;
using cc::lab::mesh_cables;
using cc::lab::parse_cable_pair;
using cc::lab::parse_host_name;
using cc::lab::parse_topology_file;
using cc::lab::resolve_topology;
using cc::lab::ring_cables;
using cc::lab::topology_names;
using cc::lab::TopologyRequest;
using cc::util::ExitCode;

namespace {

// The error message of parsing `text` as file "t.yaml", or "" when it parsed.
std::string file_error(const std::string& text, int hosts = 4, bool hosts_given = false) {
  auto r = parse_topology_file(text, "t.yaml", hosts, hosts_given);
  if (r.ok()) return "";
  CHECK(r.error().code == ExitCode::kUsage);
  return r.error().message;
}

}  // namespace

TEST_CASE("topology: host names are h1..hN") {
  CHECK(*parse_host_name("h1", 4) == 1);
  CHECK(*parse_host_name("h16", 16) == 16);
  for (const char* bad : {"h0", "h5", "h", "x1", "h01", "h1x", "H1", ""}) {
    auto r = parse_host_name(bad, 4);
    CHECK_FALSE(r.ok());
  }
  CHECK(parse_host_name("h5", 4).error().message.find("h1..h4") != std::string::npos);
}

TEST_CASE("topology: cable pairs hA-hB") {
  CHECK(*parse_cable_pair("h1-h2", 4) == CablePair{1, 2});
  CHECK(*parse_cable_pair("h4-h3", 4) == CablePair{4, 3});
  CHECK_FALSE(parse_cable_pair("h1-h1", 4).ok());
  CHECK_FALSE(parse_cable_pair("h1h2", 4).ok());
  CHECK_FALSE(parse_cable_pair("h1-h2-h3", 4).ok());
  CHECK_FALSE(parse_cable_pair("h1-h9", 4).ok());
}

TEST_CASE("topology: mesh has n(n-1)/2 cables, ring has n") {
  CHECK(mesh_cables(1).empty());
  CHECK(mesh_cables(4).size() == 6);
  CHECK(mesh_cables(16).size() == 120);
  CHECK(mesh_cables(3) == std::vector<CablePair>{{1, 2}, {1, 3}, {2, 3}});
  CHECK(ring_cables(1).empty());
  CHECK(ring_cables(2) == std::vector<CablePair>{{1, 2}, {2, 1}});
  CHECK(ring_cables(4) == std::vector<CablePair>{{1, 2}, {2, 3}, {3, 4}, {4, 1}});
}

TEST_CASE("topology: --omit removes one cable, --extra adds one") {
  TopologyRequest req;
  req.hosts = 4;
  req.omit = {"h2-h1"};
  req.extra = {"h1-h3"};
  auto t = resolve_topology(req);
  REQUIRE(t.ok());
  CHECK(t->kind == "mesh without h2-h1, plus h1-h3");
  CHECK(t->cables == std::vector<CablePair>{{1, 3}, {1, 4}, {2, 3}, {2, 4}, {3, 4}, {1, 3}});

  req.extra.clear();
  req.omit = {"h1-h2", "h1-h2"};  // only one h1-h2 cable exists
  auto twice = resolve_topology(req);
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().message.find("--omit h1-h2") != std::string::npos);

  req.omit = {"h1-h7"};
  CHECK_FALSE(resolve_topology(req).ok());
}

TEST_CASE("topology: host count out of range is a usage error") {
  for (int n : {0, -1, 17}) {
    TopologyRequest req;
    req.hosts = n;
    auto r = resolve_topology(req);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ExitCode::kUsage);
  }
}

TEST_CASE("topology: a missing file or unknown name is explained") {
  TopologyRequest req;
  req.topology = "/nonexistent/star.yaml";
  auto r = resolve_topology(req);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("not 'mesh', 'ring' or a readable file") != std::string::npos);
  CHECK(r.error().message.find("did you mean") == std::string::npos);
}

TEST_CASE("topology: a misspelt name is told the name it is close to") {
  TopologyRequest req;
  req.topology = "rign";
  auto r = resolve_topology(req);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUsage);
  CHECK(r.error().message.find("--topology rign: not 'mesh', 'ring' or a readable file (") == 0);
  CHECK(r.error().message.ends_with(" (did you mean 'ring'?)"));
  CHECK(topology_names() == std::vector<std::string>{"mesh", "ring"});
}

TEST_CASE("topology: a file lists cables, with optional hosts") {
  auto t = parse_topology_file("hosts: 3\ncables:\n  - [h1, h2]\n  - [h2, h3]\n  - [h3, h2]\n",
                               "t.yaml", 4, false);
  REQUIRE(t.ok());
  CHECK(t->hosts == 3);
  CHECK(t->kind == "file:t.yaml");
  CHECK(t->cables == std::vector<CablePair>{{1, 2}, {2, 3}, {3, 2}});

  auto flow = parse_topology_file("cables: [[h1, h2], [h2, h3]]", "t.yaml", 4, false);
  REQUIRE(flow.ok());
  CHECK(flow->hosts == 4);
  CHECK(flow->cables.size() == 2);

  auto none = parse_topology_file("cables:\n", "t.yaml", 2, false);
  REQUIRE(none.ok());
  CHECK(none->cables.empty());
}

TEST_CASE("topology: file errors carry file:line:column, every one at once") {
  CHECK(file_error("cables:\n  - [h1, h2]\n  - [h1, h9]\n") ==
        "t.yaml:3:5: 'cables[1]': unknown host 'h9': this lab's hosts are h1..h4");
  CHECK(file_error("cables:\n  - [h1, h1]\n") ==
        "t.yaml:2:5: 'cables[0]': cable [h1, h1] connects a host to itself");
  CHECK(file_error("cables:\n  - [h1]\n") ==
        "t.yaml:2:5: 'cables[0]': each cable must be a pair of host names, e.g. [h1, h2]");
  CHECK(file_error("cable:\n  - [h1, h2]\n") ==
        "t.yaml:1:1: unknown key 'cable' in the topology file (did you mean 'cables'?)\n"
        "t.yaml:1:1: missing 'cables' (a list of [hA, hB] pairs)");
  CHECK(file_error("hosts: 3\n") == "t.yaml:1:1: missing 'cables' (a list of [hA, hB] pairs)");
  CHECK(file_error("hosts: 5\ncables: []\n", 4, true) ==
        "t.yaml:1:8: 'hosts': 5 disagrees with --hosts 4; give one of them, or the same number");
  CHECK(file_error("hosts: 40\ncables: []\n") ==
        fmt::format("t.yaml:1:8: 'hosts': expected a number of hosts from {} to {}, got '40'",
                    kMinHosts, kMaxHosts));
  CHECK(file_error("cables: [[h1, h2]\n").rfind("t.yaml:", 0) == 0);  // YAML syntax error
  CHECK(file_error("- [h1, h2]\n") ==
        "t.yaml:1:1: expected a mapping with a 'cables' list (see --help), got a list");
  CHECK(file_error("cables:\n  - [h1, h9]\n  - h2\n  - [h2, h3]\n") ==
        "t.yaml:2:5: 'cables[0]': unknown host 'h9': this lab's hosts are h1..h4\n"
        "t.yaml:3:5: 'cables[1]': each cable must be a pair of host names, e.g. [h1, h2]");
  // Both ends of one cable: two mistakes, both said.
  CHECK(file_error("cables:\n  - [h9, h7]\n") ==
        "t.yaml:2:5: 'cables[0]': unknown host 'h9': this lab's hosts are h1..h4\n"
        "t.yaml:2:5: 'cables[0]': unknown host 'h7': this lab's hosts are h1..h4");
}
