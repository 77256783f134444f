#include "topology/report.h"

#include <algorithm>
#include <chrono>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "topology/test_states.h"
#include "util/interrupt.h"

namespace cc::topology {
namespace {

using Strings = std::vector<std::string>;

TEST_CASE("topology report: summary lines and exit codes") {
  auto mac = verify_mesh(testing::mac_mesh(4, 3));
  CHECK(mac.summary.text == "4 hosts, 6 of 6 cables: full mesh, RDMA ready");
  CHECK(mac.summary.rdma_ready);
  CHECK(exit_code(mac) == util::ExitCode::kOk);

  auto lab = verify_mesh(testing::lab_mesh(4));
  CHECK(lab.summary.text ==
        "4 hosts, 6 of 6 cables: full mesh, no RDMA on 4 of 4 hosts (TCP "
        "fallback)");
  CHECK(lab.summary.warn == 4);
  CHECK(exit_code(lab) == util::ExitCode::kOk);

  auto five = verify_mesh(testing::lab_mesh(5, {{2, 4}}, {{1, 3}}));
  CHECK(five.summary.text == "5 hosts, 9 of 10 pairs cabled: h2-h4 missing; 1 doubled pair");
  CHECK(five.summary.pairs == 10);
  CHECK(five.summary.pairs_cabled == 9);
  CHECK(five.summary.cables == 10);
  CHECK(five.summary.multi_rail_pairs == 1);
  CHECK(five.summary.fail == 1);
  CHECK(five.summary.warn == 5);
  CHECK(five.summary.info == 1);
  CHECK(exit_code(five) == util::ExitCode::kCheckFailed);
  // Severity order, and the missing cable's fix is its plug step.
  CHECK(testing::check_ids(five.findings) == Strings{"missing-cable", "no-rdma", "no-rdma",
                                                     "no-rdma", "no-rdma", "no-rdma",
                                                     "multi-rail"});
  CHECK(five.findings[0].fix == "plug h2 tb4 into h4 tb4");
  REQUIRE(five.findings[0].ports.size() == 2);
  CHECK(five.findings[0].ports[1].interface == "tb4");

  auto doubled = testing::mac_mesh(3, 3);
  testing::cable_macs(doubled, "m1", 3, "m2", 3);
  CHECK(verify_mesh(doubled).summary.text ==
        "3 hosts, 3 of 3 pairs cabled (4 cables): full mesh; 1 doubled pair, RDMA ready");

  auto down = testing::mac_mesh(3, 2);
  testing::disable_rdma(down, "m1");
  CHECK(verify_mesh(down).summary.text ==
        "3 hosts, 3 of 3 cables: full mesh, not ready: 3 "
        "checks failed");

  auto gone = testing::mac_mesh(3, 2);
  gone.problems.push_back({"m4", 3, "m4: cannot connect (timed out after 10 s)"});
  auto r = verify_mesh(gone);
  CHECK(exit_code(r) == util::ExitCode::kUnreachable);
  CHECK(r.summary.text ==
        "4 hosts, 3 probed, 3 of 6 cables: not a full mesh; 1 host not probed: m4");
  CHECK_FALSE(r.summary.full_mesh);
  CHECK(r.summary.expected_hosts == 4);
  CHECK(r.summary.pairs == 6);
  gone.problems[0].exit_code = 1;
  CHECK(exit_code(verify_mesh(gone)) == util::ExitCode::kCheckFailed);
  // A destination refused before any connection (fe80::1 without its scope) is the operator's
  // input to fix: exit 2, its own finding with where to fix it; 3 still wins over it.
  gone.problems[0].exit_code = 2;
  auto refused = verify_mesh(gone);
  CHECK(exit_code(refused) == util::ExitCode::kUsage);
  CHECK(refused.summary.bad_destination == 1);
  CHECK(refused.summary.probe_failed == 0);
  CHECK(refused.summary.text ==
        "4 hosts, 3 probed, 3 of 6 cables: not a full mesh; 1 host not probed: m4");
  auto finding = std::find_if(refused.findings.begin(), refused.findings.end(),
                              [](const Finding& f) { return f.check == "bad-destination"; });
  REQUIRE(finding != refused.findings.end());
  CHECK(finding->fix == "fix how m4 is named (--hosts, the inventory's `ssh:` or the SSH "
                        "config's HostName), as the message says");
  CHECK(nlohmann::json::parse(render_json(refused))["summary"]["bad_destination"] == 1);
  gone.problems.push_back({"m5", 3, "m5: cannot connect (timed out after 10 s)"});
  CHECK(exit_code(verify_mesh(gone)) == util::ExitCode::kUnreachable);

  auto one = verify_mesh(testing::mac_mesh(1, 2));
  CHECK(one.summary.text == "1 host (m1): nothing to cable");
  CHECK(one.ring.status == RingStatus::kTooFewHosts);
  CHECK(verify_mesh(discovery::ClusterState{}).summary.text == "no hosts");
}

TEST_CASE("topology report: --expect-hosts") {
  VerifyOptions opts;
  opts.expect_hosts = 5;
  auto r = verify_mesh(testing::lab_mesh(4), opts);
  CHECK(r.findings[0].check == "host-count");
  CHECK(r.findings[0].message == "expected 5 hosts, the cluster has 4: h1, h2, h3, h4");
  CHECK(exit_code(r) == util::ExitCode::kCheckFailed);

  auto partial = verify_mesh(testing::lab_mesh(4, {{1, 3}}), opts);
  CHECK(partial.summary.text ==
        "5 hosts expected, 4 probed, 5 of 10 cables: not a full mesh; h1-h3 missing; 1 other "
        "check failed");
}

TEST_CASE("topology report: a host not probed: the expected hosts' mesh is not full") {
  // The trial: 3 hosts named, h3 not probed; the headline said "2 hosts, 1 of 1 cables: full
  // mesh".
  auto s = testing::lab_mesh(2);
  s.problems.push_back({"h3", 1, "h3: the probe failed: rerun `clusterctl discover`"});
  VerifyOptions opts;
  opts.expect_hosts = 3;
  auto r = verify_mesh(s, opts);
  CHECK(r.summary.text ==
        "3 hosts expected, 2 probed, 1 of 3 cables: not a full mesh; 1 host not probed: h3");
  CHECK_FALSE(r.summary.full_mesh);
  CHECK_FALSE(r.summary.rdma_ready);
  CHECK(r.summary.hosts == 2);
  CHECK(r.summary.expected_hosts == 3);
  CHECK(r.summary.pairs == 3);
  CHECK(r.summary.pairs_cabled == 1);
  CHECK(exit_code(r) == util::ExitCode::kCheckFailed);
  CHECK(testing::of_check(r.findings, "host-count").empty());  // 3 named: the count is right
  // Without --expect-hosts the cluster is still the 3 hosts named.
  CHECK(verify_mesh(s).summary.text ==
        "3 hosts, 2 probed, 1 of 3 cables: not a full mesh; 1 host not probed: h3");
  const auto j = report_json(verify_mesh(s, opts));
  CHECK(j["summary"]["expected_hosts"] == 3);
  CHECK(j["summary"]["full_mesh"] == false);
  CHECK(j["summary"]["missing_pairs"] == 2);
  // Every host unreachable: nothing probed.
  discovery::ClusterState none;
  none.problems = {{"a", 3, "a: unreachable"}, {"b", 3, "b: unreachable"}};
  CHECK(verify_mesh(none).summary.text == "no host probed; 2 hosts not probed: a, b");
}

TEST_CASE("topology report: a cable through a dock is no direct link: not RDMA ready, exit 1") {
  auto s = testing::mac_mesh(2, 1);
  testing::through_dock(s, 0);
  auto r = verify_mesh(s);
  CHECK(r.summary.text == "2 hosts, 0 of 1 pairs cabled: m1-m2 only through a hub or dock");
  CHECK_FALSE(r.summary.full_mesh);
  CHECK_FALSE(r.summary.rdma_ready);
  CHECK(r.summary.hub_cables == 1);
  CHECK(exit_code(r) == util::ExitCode::kCheckFailed);
  auto hub = testing::of_check(r.findings, "behind-hub");
  REQUIRE(hub.size() == 1);  // one per cable, not one per end
  CHECK(hub[0].severity == Severity::kFail);
  CHECK(hub[0].hosts == Strings{"m1", "m2"});
  CHECK(hub[0].message ==
        "m1 receptacle 1 (en2) - m2 receptacle 1 (en2) runs through a hub or dock (m1 receptacle "
        "1 (en2) sees SB-XTM5 (Sabrent), Mac (Mac16,11)): it is not a direct link, and "
        "hub-mediated links do not carry RDMA");
  CHECK(hub[0].fix ==
        "plug m1 receptacle 1 (en2) directly into m2 receptacle 1 (en2) (no hub or dock between "
        "them), then run `clusterctl discover` again");

  // verify-mesh's fixes name the cluster as VerifyOptions::fix says (cli/ fills it).
  VerifyOptions named;
  named.fix = discovery::FixCommand{"--lab t3a", "my lab.json", ""};
  CHECK(testing::of_check(verify_mesh(s, named).findings, "behind-hub")[0].fix ==
        "plug m1 receptacle 1 (en2) directly into m2 receptacle 1 (en2) (no hub or dock between "
        "them), then run `clusterctl --lab t3a discover -o 'my lab.json'` again");

  // Beside a direct cable, the hub cable still fails, and the mesh is full but not ready.
  auto two = testing::mac_mesh(2, 2);
  testing::cable_macs(two, "m1", 2, "m2", 2);
  testing::through_dock(two, 1);
  auto r2 = verify_mesh(two);
  CHECK(r2.summary.text ==
        "2 hosts, 1 of 1 pairs cabled (2 cables): full mesh; 1 doubled pair, not ready: 1 check "
        "failed");
  CHECK(exit_code(r2) == util::ExitCode::kCheckFailed);
}

TEST_CASE("topology report: text of the 5-host lab") {
  auto r = verify_mesh(testing::lab_mesh(5, {{2, 4}}, {{1, 3}}));
  const std::string expected =
      "5 hosts, 9 of 10 pairs cabled: h2-h4 missing; 1 doubled pair\n"
      "\n"
      "Findings:\n"
      "  FAIL missing-cable: h2 and h4 have no direct cable (RDMA cannot route: every pair of a "
      "mesh needs its own cable)\n"
      "       fix: plug h2 tb4 into h4 tb4\n"
      "  WARN no-rdma: h1 has no RDMA device (rdma status: no-device): collectives fall back to TCP\n"
      "       fix: no RDMA subsystem in its kernel: boot one with the rdma_rxe module, then "
      "`clusterctl rdma enable --soft-roce`\n"
      "  WARN no-rdma: h2 has no RDMA device (rdma status: no-device): collectives fall back to TCP\n"
      "       fix: no RDMA subsystem in its kernel: boot one with the rdma_rxe module, then "
      "`clusterctl rdma enable --soft-roce`\n"
      "  WARN no-rdma: h3 has no RDMA device (rdma status: no-device): collectives fall back to TCP\n"
      "       fix: no RDMA subsystem in its kernel: boot one with the rdma_rxe module, then "
      "`clusterctl rdma enable --soft-roce`\n"
      "  WARN no-rdma: h4 has no RDMA device (rdma status: no-device): collectives fall back to TCP\n"
      "       fix: no RDMA subsystem in its kernel: boot one with the rdma_rxe module, then "
      "`clusterctl rdma enable --soft-roce`\n"
      "  WARN no-rdma: h5 has no RDMA device (rdma status: no-device): collectives fall back to TCP\n"
      "       fix: no RDMA subsystem in its kernel: boot one with the rdma_rxe module, then "
      "`clusterctl rdma enable --soft-roce`\n"
      "  INFO multi-rail: h1 and h3 are joined by 2 cables (multi-rail): h1 tb2 - h3 tb1, h1 "
      "tb5 - h3 tb5\n"
      "\n"
      "Cables per pair:\n"
      "     h1 h2 h3 h4 h5\n"
      "  h1  -  1  2  1  1\n"
      "  h2  1  -  1  .  1\n"
      "  h3  2  1  -  1  1\n"
      "  h4  1  .  1  -  1\n"
      "  h5  1  1  1  1  -\n"
      "\n"
      "Ring: h1 - h3 - h2 - h5 - h4 - h1 (at least 1 cable per pair, 6 in all)\n"
      "\n"
      "Cabling plan:\n"
      "  1. plug h2 tb4 into h4 tb4\n";
  CHECK(render_text(r, util::OutputStyle{}) == expected);
}

TEST_CASE("topology report: colour only when the style asks for it") {
  auto r = verify_mesh(testing::lab_mesh(5, {{2, 4}}, {{1, 3}}));
  CHECK(render_text(r, util::OutputStyle{}).find('\x1b') == std::string::npos);
  util::OutputStyle colour;
  colour.color = true;
  std::string text = render_text(r, colour);
  CHECK(text.find("\x1b[") != std::string::npos);
  CHECK(text.find("FAIL") != std::string::npos);
}

TEST_CASE("topology report: long host names number the matrix columns") {
  discovery::ClusterState s;
  for (int i = 1; i <= 4; ++i) {
    s.hosts.push_back(testing::mac_host(fmt::format("studio-rack{}-shelf-long-name", i), 3));
  }
  for (int a = 0; a < 4; ++a) {
    for (int b = a + 1; b < 4; ++b) {
      testing::cable_macs(s, s.hosts[static_cast<std::size_t>(a)].host, b,
                          s.hosts[static_cast<std::size_t>(b)].host, a + 1);
    }
  }
  std::string text = render_text(verify_mesh(s), util::OutputStyle{});
  INFO(text);
  CHECK(text.find("Cables per pair:\n"
                  "                                 1 2 3 4\n"
                  "  1 studio-rack1-shelf-long-name - 1 1 1\n"
                  "  2 studio-rack2-shelf-long-name 1 - 1 1\n") != std::string::npos);
}

TEST_CASE("topology report: ring of two hosts and no ring") {
  auto two = verify_mesh(testing::lab_mesh(2));
  CHECK(render_text(two, util::OutputStyle{}).find("Ring: h1 - h2 (one pair, 1 cable)\n") !=
        std::string::npos);
  auto none = verify_mesh(testing::lab_mesh(4, {{1, 2}, {1, 3}}));
  CHECK(none.ring.status == RingStatus::kNotFound);
  CHECK(render_text(none, util::OutputStyle{})
            .find("Ring: none (no cycle through every host uses only cabled pairs)\n") !=
        std::string::npos);
}

TEST_CASE("topology report: JSON schema fields") {
  auto r = verify_mesh(testing::lab_mesh(5, {{2, 4}}, {{1, 3}}));
  nlohmann::json j = nlohmann::json::parse(render_json(r));
  CHECK(j["schema"] == "clusterctl.verify-mesh/1");
  CHECK(j["exit_code"] == 1);
  CHECK(j["summary"]["text"] == "5 hosts, 9 of 10 pairs cabled: h2-h4 missing; 1 doubled pair");
  CHECK(j["summary"]["hosts"] == 5);
  CHECK(j["summary"]["pairs"] == 10);
  CHECK(j["summary"]["pairs_cabled"] == 9);
  CHECK(j["summary"]["missing_pairs"] == 1);
  CHECK(j["summary"]["multi_rail_pairs"] == 1);
  CHECK(j["summary"]["full_mesh"] == false);
  CHECK(j["summary"]["rdma_ready"] == false);
  CHECK(j["summary"]["fail"] == 1);
  CHECK(j["hosts"] == nlohmann::json({"h1", "h2", "h3", "h4", "h5"}));
  CHECK(j["findings"].size() == 7);
  CHECK(j["findings"][0]["check"] == "missing-cable");
  CHECK(j["findings"][0]["severity"] == "fail");
  CHECK(j["findings"][0]["hosts"] == nlohmann::json({"h2", "h4"}));
  CHECK(j["findings"][0]["fix"] == "plug h2 tb4 into h4 tb4");
  CHECK(j["findings"][0]["ports"][0]["interface"] == "tb4");
  CHECK(j["findings"][6]["severity"] == "info");
  CHECK(j["matrix"][0] == nlohmann::json({nullptr, 1, 2, 1, 1}));
  CHECK(j["matrix"][1][3] == 0);
  CHECK(j["cables"].size() == 10);
  CHECK(j["cables"][0]["a"]["host"] == "h1");
  CHECK(j["ring"]["status"] == "found");
  CHECK(j["ring"]["hosts"] == nlohmann::json({"h1", "h3", "h2", "h5", "h4"}));
  CHECK(j["ring"]["min_cables"] == 1);
  CHECK(j["ring"]["total_cables"] == 6);
  CHECK(j["plan"]["steps"][0]["text"] == "plug h2 tb4 into h4 tb4");
  CHECK(j["plan"]["unplanned"].empty());

  auto unreachable = testing::lab_mesh(2);
  unreachable.problems.push_back({"h3", 3, "h3: unreachable"});
  CHECK(report_json(verify_mesh(unreachable))["exit_code"] == 3);
}

TEST_CASE("topology report: DOT edges, speeds, missing pairs and quoting") {
  auto r = verify_mesh(testing::lab_mesh(3, {{2, 3}}));
  CHECK(render_dot(r) ==
        "graph \"clusterctl-mesh\" {\n"
        "  label=\"3 hosts, 2 of 3 pairs cabled: h2-h3 missing\";\n"
        "  node [shape=box];\n"
        "  \"h1\";\n"
        "  \"h2\";\n"
        "  \"h3\";\n"
        "  \"h1\" -- \"h2\" [label=\"tb1 - tb1, ? Gb/s\"];\n"
        "  \"h1\" -- \"h3\" [label=\"tb2 - tb1, ? Gb/s\"];\n"
        "  \"h2\" -- \"h3\" [style=dashed, color=red, label=\"missing\"];\n"
        "}\n");

  auto mac = verify_mesh(testing::mac_mesh(2, 1));
  CHECK(render_dot(mac).find(
            "  \"m1\" -- \"m2\" [label=\"receptacle 1 (en2) - receptacle 1 (en2), 80 Gb/s\"];\n") !=
        std::string::npos);

  CHECK(dot_quote("h1") == "\"h1\"");
  CHECK(dot_quote("rack \"A\"\\1\nx") == "\"rack \\\"A\\\"\\\\1\\nx\"");
  auto s = testing::lab_mesh(2);
  s.hosts[0].host = "we\"ird";
  s.cables[0].a.host = "we\"ird";
  std::string dot = render_dot(verify_mesh(s));
  CHECK(dot.find("  \"we\\\"ird\" -- \"h2\" [label=\"tb1 - tb1, ? Gb/s\"];\n") !=
        std::string::npos);
}

}  // namespace
}  // namespace cc::topology

namespace cc::topology {
namespace {

// 1,000 Macs with 4 ports each; `cabled`: a ring (host i receptacle 2 - host i+1 receptacle 1).
discovery::ClusterState thousand_macs(bool cabled) {
  discovery::ClusterState s;
  for (int i = 1; i <= 1000; ++i) s.hosts.push_back(testing::mac_host(fmt::format("m{}", i), 4));
  if (cabled) {
    for (int i = 1; i <= 1000; ++i) {
      testing::cable_macs(s, fmt::format("m{}", i), 2, fmt::format("m{}", i % 1000 + 1), 1);
    }
  }
  return s;
}

TEST_CASE("topology report: a thousand hosts, with and without cables, in polynomial time") {
  for (bool cabled : {false, true}) {
    const auto s = thousand_macs(cabled);
    const auto t0 = std::chrono::steady_clock::now();
    const VerifyReport r = verify_mesh(s);
    const std::string text = render_text(r, util::OutputStyle{});
    const std::string json = render_json(r);
    const std::string dot = render_dot(r);
    const double s_taken =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Over 9 minutes on the old code (a findings x plan scan); about 10 s here with the
    // sanitizers on a loaded machine, 0.1 s in a release build (bench/verify_mesh_bench.cc).
    CHECK(s_taken < 120);
    const std::size_t missing = 499500 - (cabled ? 1000 : 0);
    CHECK(r.summary.pairs_cabled == (cabled ? 1000 : 0));
    const auto findings = testing::of_check(r.findings, "missing-cable");
    REQUIRE(findings.size() == kListedPairs + 1);
    CHECK(findings.back().hosts.empty());
    CHECK(findings.back().message ==
          fmt::format("{} more pairs have no direct cable ({} of 499500 pairs missing; the "
                      "first 256 are listed)",
                      missing - 256, missing));
    CHECK(r.plan.unplanned.size() == kListedPairs);
    CHECK(r.plan.unplanned_total + r.plan.steps.size() == missing);
    CHECK(r.ring.status == (cabled ? RingStatus::kFound : RingStatus::kNotFound));
    CHECK(text.find("Cables per pair: not shown for 1000 hosts (more than 64)") !=
          std::string::npos);
    CHECK(dot.find(fmt::format("// {} more missing pairs not drawn", missing - 256)) !=
          std::string::npos);
    CHECK(json.size() < 64u << 20);
  }
}

TEST_CASE("topology report: an interrupt ends the analysis early") {
  const auto s = thousand_macs(false);
  util::set_interrupted(true);
  const auto t0 = std::chrono::steady_clock::now();
  const VerifyReport r = verify_mesh(s);
  const double s_taken =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  util::set_interrupted(false);
  CHECK(s_taken < 30);
  CHECK(r.plan.steps.empty());  // the plan loop stopped at once
  // The ring search reports an interrupted search as given up.
  auto mesh = testing::mac_mesh(6, 5);
  util::set_interrupted(true);
  const Ring ring = find_ring(ClusterGraph(mesh));
  util::set_interrupted(false);
  CHECK(ring.status == RingStatus::kGaveUp);
  CHECK(find_ring(ClusterGraph(mesh)).status == RingStatus::kFound);
}

}  // namespace
}  // namespace cc::topology
