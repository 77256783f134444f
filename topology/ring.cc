#include "topology/ring.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "util/interrupt.h"

namespace cc::topology {
namespace {

using Matrix = std::vector<std::vector<int>>;

// Neighbours over the pairs with at least k cables.
std::vector<std::vector<std::size_t>> adjacency(const Matrix& m, int k) {
  const std::size_t n = m.size();
  std::vector<std::vector<std::size_t>> adj(n);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (a != b && m[a][b] >= k) adj[a].push_back(b);
    }
  }
  return adj;
}

// True when the graph surely has no Hamiltonian cycle (n >= 3): a vertex of degree < 2, a
// second component, or a cut vertex (Tarjan's low-link, from vertex 0).
bool surely_no_cycle(const std::vector<std::vector<std::size_t>>& adj) {
  const std::size_t n = adj.size();
  for (const auto& a : adj) {
    if (a.size() < 2) return true;
  }
  std::vector<int> disc(n, -1), low(n, 0);
  int time = 0;
  bool cut = false;
  std::function<void(std::size_t, std::size_t)> dfs = [&](std::size_t v, std::size_t parent) {
    disc[v] = low[v] = time++;
    int children = 0;
    for (std::size_t w : adj[v]) {
      if (disc[w] < 0) {
        ++children;
        dfs(w, v);
        low[v] = std::min(low[v], low[w]);
        if (parent != n && low[w] >= disc[v]) cut = true;
      } else if (w != parent) {
        low[v] = std::min(low[v], disc[w]);
      }
    }
    if (parent == n && children > 1) cut = true;
  };
  dfs(0, n);
  if (cut) return true;
  return std::any_of(disc.begin(), disc.end(), [](int d) { return d < 0; });
}

// Depth-first search for a Hamiltonian cycle through host 0 over pairs with >= k cables.
class Search {
 public:
  enum class Outcome { kFound, kExhausted, kBudget };

  Search(const Matrix& m, int k, std::uint64_t budget)
      : m_(m), k_(k), n_(m.size()), adj_(adjacency(m, k)), budget_(budget) {}

  Outcome run() {
    visited_.assign(n_, 0);
    cnt_.resize(n_);
    for (std::size_t v = 0; v < n_; ++v) cnt_[v] = static_cast<int>(adj_[v].size());
    path_.clear();
    path_.push_back(0);
    take(0);
    return extend();
  }
  const std::vector<std::size_t>& path() const { return path_; }
  std::uint64_t steps() const { return steps_; }

 private:
  bool adjacent(std::size_t a, std::size_t b) const { return a != b && m_[a][b] >= k_; }

  // v leaves the unvisited set: its neighbours have one usable neighbour fewer. The start
  // (host 0) stays usable for everyone as the ring's closing pair, so taking it changes nothing.
  void take(std::size_t v) {
    visited_[v] = 1;
    if (v == 0) return;
    for (std::size_t w : adj_[v]) --cnt_[w];
  }
  void give_back(std::size_t v) {
    visited_[v] = 0;
    for (std::size_t w : adj_[v]) ++cnt_[w];
  }

  // With the path ending at c: empty when the branch is dead; otherwise the hosts to try next.
  std::vector<std::size_t> candidates(std::size_t c) const {
    if (cnt_[0] == 0) return {};  // host 0 has no unvisited neighbour left to close the ring
    std::size_t needy_count = 0, needy = 0;
    for (std::size_t u = 1; u < n_; ++u) {
      if (visited_[u]) continue;
      // cnt_[u] counts unvisited neighbours and host 0; c is usable only as u's predecessor.
      const bool next_to_c = c != 0 && adjacent(u, c);
      const int usable = cnt_[u] + (next_to_c ? 1 : 0);
      if (usable < 2) return {};
      if (next_to_c && cnt_[u] == 1) {
        ++needy_count;
        needy = u;
      }
    }
    if (needy_count > 1) return {};        // two hosts both need c as their predecessor
    if (needy_count == 1) return {needy};  // forced move
    std::vector<std::size_t> next;
    for (std::size_t u : adj_[c]) {
      if (!visited_[u]) next.push_back(u);
    }
    std::sort(next.begin(), next.end(), [&](std::size_t a, std::size_t b) {
      if (m_[c][a] != m_[c][b]) return m_[c][a] > m_[c][b];
      if (cnt_[a] != cnt_[b]) return cnt_[a] < cnt_[b];
      return a < b;
    });
    return next;
  }

  Outcome extend() {
    const std::size_t c = path_.back();
    if (path_.size() == n_) return adjacent(c, 0) ? Outcome::kFound : Outcome::kExhausted;
    for (std::size_t v : candidates(c)) {
      // Ctrl-C / SIGTERM ends the search as a spent budget does ("gave up").
      if (steps_ == budget_ || (steps_ % 1024 == 0 && util::interrupted())) {
        return Outcome::kBudget;
      }
      ++steps_;
      path_.push_back(v);
      take(v);
      Outcome o = extend();
      if (o != Outcome::kExhausted) return o;
      give_back(v);
      path_.pop_back();
    }
    return Outcome::kExhausted;
  }

  const Matrix& m_;
  int k_;
  std::size_t n_;
  std::vector<std::vector<std::size_t>> adj_;
  std::uint64_t budget_;
  std::uint64_t steps_ = 0;
  std::vector<char> visited_;
  std::vector<int> cnt_;  // unvisited neighbours, plus host 0 when adjacent
  std::vector<std::size_t> path_;
};

void score(const Matrix& m, Ring& r) {
  auto pairs = ring_pairs(r);
  r.min_cables = pairs.empty() ? 0 : m[pairs[0].first][pairs[0].second];
  r.total_cables = 0;
  for (auto [a, b] : pairs) {
    r.min_cables = std::min(r.min_cables, m[a][b]);
    r.total_cables += m[a][b];
  }
}

// 2-opt: replace pairs (a,b) and (c,d) with (a,c) and (b,d) when that raises the total and
// keeps both new pairs at >= k cables. Position 0 (host 0) never moves.
// Each pass costs O(n^2) and raises the total by at least 1; at most kMaxPasses of them (best
// effort), and none once interrupted.
constexpr int kMaxPasses = 16;

void improve_total(const Matrix& m, int k, std::vector<std::size_t>& o) {
  const std::size_t n = o.size();
  int passes = 0;
  for (bool improved = true; improved && passes < kMaxPasses && !util::interrupted(); ++passes) {
    improved = false;
    for (std::size_t i = 0; i + 2 < n; ++i) {
      for (std::size_t j = i + 2; j < n; ++j) {
        if (i == 0 && j == n - 1) continue;  // the two pairs share host 0
        const std::size_t a = o[i], b = o[i + 1], c = o[j], d = o[(j + 1) % n];
        if (m[a][c] < k || m[b][d] < k) continue;
        if (m[a][c] + m[b][d] > m[a][b] + m[c][d]) {
          std::reverse(o.begin() + static_cast<std::ptrdiff_t>(i + 1),
                       o.begin() + static_cast<std::ptrdiff_t>(j + 1));
          improved = true;
        }
      }
    }
  }
}

}  // namespace

const char* to_string(RingStatus s) {
  switch (s) {
    case RingStatus::kFound:
      return "found";
    case RingStatus::kNotFound:
      return "not-found";
    case RingStatus::kGaveUp:
      return "gave-up";
    case RingStatus::kTooFewHosts:
      return "too-few-hosts";
  }
  return "not-found";
}

std::vector<std::pair<std::size_t, std::size_t>> ring_pairs(const Ring& r) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  if (r.status != RingStatus::kFound || r.order.size() < 2) return out;
  if (r.order.size() == 2) return {{r.order[0], r.order[1]}};
  for (std::size_t i = 0; i < r.order.size(); ++i) {
    out.emplace_back(r.order[i], r.order[(i + 1) % r.order.size()]);
  }
  return out;
}

Ring find_ring(const Matrix& m, const RingOptions& opts) {
  const std::size_t n = m.size();
  for (const auto& row : m) {
    if (row.size() != n) throw std::invalid_argument("find_ring: the matrix is not square");
  }
  Ring r;
  if (n < 2) {
    r.status = RingStatus::kTooFewHosts;
    return r;
  }
  if (n == 2) {
    r.status = m[0][1] > 0 ? RingStatus::kFound : RingStatus::kNotFound;
    if (m[0][1] > 0) r.order = {0, 1};
    r.min_is_best = true;
    score(m, r);
    return r;
  }
  int max_cables = 0;
  for (const auto& row : m) {
    for (int v : row) max_cables = std::max(max_cables, v);
  }
  for (int k = 1; k <= max_cables; ++k) {
    if (surely_no_cycle(adjacency(m, k))) {
      r.min_is_best = true;
      break;
    }
    Search search(m, k, opts.step_budget - std::min(opts.step_budget, r.steps));
    Search::Outcome o = search.run();
    r.steps += search.steps();
    if (o != Search::Outcome::kFound) {
      r.min_is_best = o == Search::Outcome::kExhausted;
      if (r.status != RingStatus::kFound) {
        r.status = o == Search::Outcome::kBudget ? RingStatus::kGaveUp : RingStatus::kNotFound;
      }
      break;
    }
    r.status = RingStatus::kFound;
    r.order = search.path();
    score(m, r);
    k = r.min_cables;  // the next search asks for at least min + 1
    if (k == max_cables) r.min_is_best = true;
  }
  if (r.status == RingStatus::kFound) {
    improve_total(m, r.min_cables, r.order);
    score(m, r);
  } else {
    r.order.clear();
  }
  return r;
}

Ring find_ring(const ClusterGraph& g, const RingOptions& opts) {
  return find_ring(g.matrix(), opts);
}

}  // namespace cc::topology
