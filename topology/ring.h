// Ring search: a Hamiltonian cycle over the hosts that uses only cabled pairs, for ring
// collectives (MLX `jaccl-ring` / `ring` hostfiles list hosts in ring order;
// docs/platform.md#mlx-hostfiles). Among rings it prefers pairs with the most parallel cables: it
// maximises the smallest cable count along the ring, then (best effort) the total.
//
// Algorithm:
//   1. Cheap proofs of absence: fewer than 3 hosts handled apart; a host with fewer than two
//      cabled neighbours, a disconnected graph or a cut vertex (articulation point) means no
//      Hamiltonian cycle exists (a Hamiltonian graph is 2-connected).
//   2. Depth-first search from host 0 over the pairs with at least k cables, k = 1 first.
//      Next hosts are tried by (more cables, fewer remaining choices (Warnsdorff), index);
//      a branch is cut when an unvisited host has fewer than two usable neighbours left, or
//      when two unvisited hosts both depend on the current end. Each extension of the path
//      costs one step of the budget; the search stops ("gave up") when the budget is spent.
//   3. With a ring of minimum m found, the search repeats with k = m + 1, m + 2, ... while it
//      keeps finding rings (the pairs with >= k cables form a subgraph, so the first k with
//      no ring ends it). Then 2-opt moves that keep every pair >= k raise the total.
// Cost: on a complete mesh the first descent succeeds: O(n^2 log n) for n hosts, about
// 0.1 ms for 64 hosts. Worst case: the step budget x O(n) per step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "topology/graph.h"

namespace cc::topology {

enum class RingStatus {
  kFound,        // `order` is a ring
  kNotFound,     // proven: no ring uses only cabled pairs
  kGaveUp,       // the step budget ran out before a ring was found or ruled out
  kTooFewHosts,  // fewer than 2 hosts: no ring to speak of
};

/// "found", "not-found", "gave-up", "too-few-hosts" (the JSON values).
const char* to_string(RingStatus s);

struct RingOptions {
  std::uint64_t step_budget = 200'000;  // path extensions over all searches
};

struct Ring {
  RingStatus status = RingStatus::kNotFound;
  /// Host indices in ring order, starting at host 0. n = 2: {0, 1} (one pair, the ring
  /// h1-h2-h1); n >= 3: n hosts, the closing pair is back() - front().
  std::vector<std::size_t> order;
  int min_cables = 0;    // smallest cable count over the ring's pairs
  int total_cables = 0;  // sum of cable counts over the ring's pairs (each pair once)
  /// min_cables is proven maximal: no search for a better minimum gave up.
  bool min_is_best = false;
  std::uint64_t steps = 0;  // budget spent
};

/// Ring over a symmetric matrix of cable counts (m[a][b] = cables between hosts a and b; the
/// diagonal is ignored). Throws std::invalid_argument when `m` is not square.
Ring find_ring(const std::vector<std::vector<int>>& m, const RingOptions& opts = {});

/// Ring over the graph's pairs.
Ring find_ring(const ClusterGraph& g, const RingOptions& opts = {});

/// The ring's pairs in order: (order[i], order[i+1]) and the closing pair; one pair for n = 2.
std::vector<std::pair<std::size_t, std::size_t>> ring_pairs(const Ring& r);

}  // namespace cc::topology
