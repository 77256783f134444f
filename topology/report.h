// The verify-mesh report: everything `clusterctl verify-mesh` prints, computed from a cluster
// state (discovery/cluster_state.h) without I/O, and its three renderings: human text, JSON and
// Graphviz DOT. The exit status rule lives here too (exit_code below); cli/ only prints.
//
// JSON shape (schema "clusterctl.verify-mesh/1"; field names are stable, new fields may be
// added; host indices are positions in "hosts"):
//   {"schema": "clusterctl.verify-mesh/1",
//    "exit_code": 1,                                  // see exit_code() below
//    "summary": {"text": "5 hosts, 9 of 10 pairs cabled: h2-h4 missing; 1 doubled pair",
//                "hosts": 5, "expected_hosts": 5, "unreachable": 0, "bad_destination": 0,
//                "probe_failed": 0,
//                "pairs": 10, "pairs_cabled": 9, "cables": 10, "hub_cables": 0,
//                "missing_pairs": 1,                   // see Summary below for each count
//                "multi_rail_pairs": 1, "full_mesh": false, "rdma_ready": false,
//                "fail": 1, "warn": 5, "info": 1},
//    "hosts": ["h1", "h2", "h3", "h4", "h5"],          // cluster order (probed hosts only)
//    "findings": [{"check": "missing-cable",           // stable ids: topology/checks.h
//                  "severity": "fail",                 // "fail" | "warn" | "info"
//                  "hosts": ["h2", "h4"],
//                  "ports": [CableEnd, ...],           // {"host", "interface", "receptacle",
//                                                      //  "rdma_device"} as in the cluster state
//                  "message": "h2 and h4 have no direct cable ...",
//                  "fix": "plug h2 tb4 into h4 tb4"}, ...],   // "" when nothing to do
//                                                      // ordered fail, warn, info
//    "matrix": [[null, 1, 2, 1, 1], ...],             // cables per pair; null on the diagonal
//    "cables": [Cable, ...],                           // the state's cables joining two hosts
//                                                      // (clusterctl.cluster/1 cable objects)
//    "ring": {"status": "found",                       // "found" | "not-found" | "gave-up" |
//                                                      // "too-few-hosts"
//             "hosts": ["h1", "h2", "h3", "h5", "h4"], // ring order; [] unless found
//             "min_cables": 1, "total_cables": 5,     // over the ring's pairs
//             "min_is_best": true, "steps": 5},
//    "plan": {"steps": [{"action": "plug",             // "plug" | "unplug" | "bring-up"
//                        "a": CableEnd, "b": CableEnd,
//                        "text": "plug h2 tb4 into h4 tb4"}],
//             "unplanned": [{"a": "h2", "b": "h4", "reason": "no free port left on h4"}],
//             "unplanned_total": 1,   // all unplanned pairs; the list holds the first 256
//             "shortages": [{"host": "h4", "missing_cables": 2, "free_ports": 1,
//                            "needed": 1, "text": "h4 needs 1 more free port (...)"}]}}
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "discovery/cluster_state.h"
#include "topology/checks.h"
#include "topology/finding.h"
#include "topology/plan.h"
#include "topology/ring.h"
#include "util/exit_code.h"
#include "util/term.h"

namespace cc::topology {

inline constexpr const char* kVerifyMeshSchema = "clusterctl.verify-mesh/1";

struct Summary {
  int hosts = 0;             // probed hosts (ClusterState::hosts)
  int expected_hosts = 0;    // the cluster's hosts: probed and not probed, or --expect-hosts
                             // when that is more
  int unreachable = 0;       // problems with exit code 3
  int bad_destination = 0;   // problems with exit code 2: the host's destination refused
  int probe_failed = 0;      // other problems
  int pairs = 0;             // n(n-1)/2 over expected_hosts
  int pairs_cabled = 0;      // probed pairs with at least one direct cable (not through a hub)
  int cables = 0;            // cables joining two different hosts of the cluster
  int hub_cables = 0;        // of those, cables through a hub or dock (checks.h, through_hub)
  int multi_rail_pairs = 0;  // pairs with two or more cables
  int fail = 0;              // findings per severity
  int warn = 0;
  int info = 0;
  bool full_mesh = false;   // at least 2 hosts, all of them probed, every pair directly cabled
  bool rdma_ready = false;  // full mesh, RDMA enabled on every host, no host unprobed, no fail
  std::string text;         // "4 hosts, 6 of 6 cables: full mesh, RDMA ready";
                            // "3 hosts expected, 2 probed, 1 of 3 cables: not a full mesh; 1
                            // host not probed: h3"
};

struct VerifyReport {
  Summary summary;
  std::vector<std::string> hosts;        // cluster order
  std::vector<Finding> findings;         // fail, then warn, then info (stable within)
  std::vector<std::vector<int>> matrix;  // n x n cables per pair; 0 on the diagonal
  std::vector<discovery::Cable> cables;  // cables joining two different hosts, state order
  Ring ring;                             // indices into `hosts`
  CablingPlan plan;
};

struct VerifyOptions {
  std::optional<int> expect_hosts;  // --expect-hosts N (host-count check)
  RingOptions ring;
  discovery::FixCommand fix{};  // how the findings' fixes name the cluster (CheckOptions::fix)
};

/// Builds the graph, runs the checks, the ring search and the cabling plan. The fix of each
/// missing-cable finding is its plug step ("plug h2 tb4 into h4 tb4"), with the two proposed
/// ports as the finding's ports, or says why there is none.
/// Cost: polynomial in hosts and ports (about O(n^2) for n hosts, plus the ring search's step
/// budget x O(n)); a 1,000-host state takes well under a second (bench/verify_mesh_bench.cc).
/// Its long loops poll util::interrupted(): after Ctrl-C or SIGTERM it returns early with a
/// partial report, which the caller must not present as the answer (exit 130).
VerifyReport verify_mesh(const discovery::ClusterState& state, const VerifyOptions& opts = {});

/// kUnreachable (3) when any host could not be reached (a problem with exit code 3); else
/// kUsage (2) when a host's destination was refused before any connection (exit code 2: the
/// operator's input to fix, README "Exit codes"); else kCheckFailed (1) when any finding is a
/// fail; else kOk (0). Warnings never fail.
util::ExitCode exit_code(const VerifyReport& r);

/// Human report: the summary line; findings grouped fail, warn, info (markers coloured when
/// style.color), each with its fix; the n x n cable matrix ("-" on the diagonal, "." for no
/// cable; columns are host names, or numbers with a numbered row legend when the names do not
/// fit in 100 columns); the ring; the cabling plan. Ends with a newline.
std::string render_text(const VerifyReport& r, const util::OutputStyle& style);

/// The JSON above.
nlohmann::json report_json(const VerifyReport& r);
/// report_json pretty-printed (2 spaces) with a final newline.
std::string render_json(const VerifyReport& r);

/// Graphviz DOT (`dot -Tsvg`): an undirected graph, one node per host, one edge per cable
/// labelled with its ports and speed ("tb1 - tb2, 80 Gb/s"; "? Gb/s" when unknown), and a
/// dashed red edge per missing pair. Every identifier is a quoted, escaped DOT string.
std::string render_dot(const VerifyReport& r);

/// `s` as a quoted DOT string: "..." with \ and " escaped and newlines as \n.
std::string dot_quote(std::string_view s);

}  // namespace cc::topology
