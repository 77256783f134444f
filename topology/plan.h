// The cabling plan: which free ports to cable together so that every missing pair of the mesh
// gets its direct cable ("plug h2 receptacle 3 (en3) into h4 receptacle 1 (en1)"). Pure and
// deterministic: the same graph always yields the same plan.
//
// Rules:
//   - A port is free when no cable of the state names it and nothing is on its cable (no peer
//     at depth 1; graph.h, PortNode::free). Ports with a dock or a host outside the cluster are
//     not free (verify-mesh reports them as device-port / foreign-host).
//   - Each free port is used at most once, so every plug step can be done as written.
//   - A host's free ports are used in port order, except that a Mac Studio's en2 comes last
//     (it does not carry RDMA, reported by exo:
//     docs/platform.md#ports-per-mac-model).
//   - A missing pair whose cable may sit in a port that is administratively down
//     (checks.h, down_pairs: by the network plan's record, else a guess in pair order) gets a
//     "bring up" step for that port, never a plug step: the cable would be moved when it is
//     only not seen. A down port is never free, nor the far end the plan records for it.
//   - The other missing pairs are served in pair order (h1-h2, h1-h3, ..., h2-h3, ...).
//   - When a host has fewer free ports than missing cables, redundant parallel cables
//     (multi-rail) of that host are unplugged first, last cable of a pair first, while the
//     pair keeps at least one cable; each unplug frees a port on both ends.
//   - Missing pairs still without ports are listed as unplanned (the first kListedPairs of
//     them; unplanned_total counts all), and each host short of ports gets a shortage line
//     saying how many more it needs.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "discovery/cluster_state.h"
#include "topology/graph.h"

namespace cc::topology {

struct PlanStep {
  enum class Action { kUnplug, kPlug, kBringUp };
  Action action = Action::kPlug;
  discovery::CableEnd a;  // kPlug: the free port on the pair's first host; kUnplug: cable end a;
                          // kBringUp: the port that is down
  discovery::CableEnd b;  // kBringUp: the end the network plan records it facing, or only the
                          // host of the pair it is guessed to serve
  std::string text;  // "plug h2 tb4 into h4 tb4", "unplug h1 tb4 - h3 tb4 (h1-h3 keeps 1 cable)",
                     // "bring up h2 tb3: on h2 `sudo ip link set dev tb3 up`; ..."
};

/// A missing pair the plan could not serve.
struct UnplannedPair {
  std::string a, b;    // host names, cluster order
  std::string reason;  // "no free port left on h4"
};

/// A host with fewer free ports than missing cables.
struct PortShortage {
  std::string host;
  int missing_cables = 0;  // missing pairs at this host
  int free_ports = 0;      // free ports, counting those the unplug steps free
  int needed = 0;          // missing_cables - free_ports (> 0)
  std::string text;        // "h4 needs 1 more free port (2 missing cables, 1 free port)"
};

struct CablingPlan {
  std::vector<PlanStep> steps;           // bring-up steps (pair order), unplug steps, then plug
                                         // steps in pair order
  std::vector<UnplannedPair> unplanned;  // at most kListedPairs (checks.h), in pair order
  std::size_t unplanned_total = 0;       // all missing pairs the plan could not serve
  std::vector<PortShortage> shortages;
};

/// "plug", "unplug", "bring-up".
const char* to_string(PlanStep::Action a);

CablingPlan plan_cabling(const ClusterGraph& g);

/// {"action": "plug"|"unplug"|"bring-up", "a": CableEnd, "b": CableEnd, "text"}
void to_json(nlohmann::json& j, const PlanStep& s);
/// {"a", "b", "reason"}
void to_json(nlohmann::json& j, const UnplannedPair& u);
/// {"host", "missing_cables", "free_ports", "needed", "text"}
void to_json(nlohmann::json& j, const PortShortage& s);
/// {"steps": [...], "unplanned": [...], "shortages": [...]}
void to_json(nlohmann::json& j, const CablingPlan& p);

}  // namespace cc::topology
