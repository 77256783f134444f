#include "topology/ring.h"

#include <algorithm>
#include <chrono>
#include <set>

#include <doctest/doctest.h>

#include "topology/test_states.h"

namespace cc::topology {
namespace {

using Matrix = std::vector<std::vector<int>>;

Matrix complete(std::size_t n, int cables = 1) {
  Matrix m(n, std::vector<int>(n, cables));
  for (std::size_t i = 0; i < n; ++i) m[i][i] = 0;
  return m;
}

void link(Matrix& m, std::size_t a, std::size_t b, int cables = 1) {
  m[a][b] = m[b][a] = cables;
}

// Every pair of the ring is cabled and every host appears once.
void check_is_ring(const Matrix& m, const Ring& r) {
  REQUIRE(r.status == RingStatus::kFound);
  REQUIRE(r.order.size() == m.size());
  CHECK(std::set<std::size_t>(r.order.begin(), r.order.end()).size() == m.size());
  for (auto [a, b] : ring_pairs(r)) CHECK(m[a][b] >= r.min_cables);
}

TEST_CASE("topology ring: 64 hosts on a complete mesh, found at once") {
  auto m = complete(64);
  auto start = std::chrono::steady_clock::now();
  Ring r = find_ring(m);
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
  check_is_ring(m, r);
  CHECK(r.order.front() == 0);
  CHECK(r.min_cables == 1);
  CHECK(r.total_cables == 64);
  CHECK(r.min_is_best);
  CHECK(r.steps == 63);  // one descent, no backtracking
  CHECK(ms.count() < 50.0);
}

TEST_CASE("topology ring: fewer than three hosts") {
  CHECK(find_ring(Matrix{}).status == RingStatus::kTooFewHosts);
  CHECK(find_ring(complete(1)).status == RingStatus::kTooFewHosts);
  Ring two = find_ring(complete(2, 3));
  CHECK(two.status == RingStatus::kFound);
  CHECK(two.order == std::vector<std::size_t>{0, 1});
  CHECK(ring_pairs(two) == std::vector<std::pair<std::size_t, std::size_t>>{{0, 1}});
  CHECK(two.min_cables == 3);
  CHECK(two.total_cables == 3);
  CHECK(find_ring(complete(2, 0)).status == RingStatus::kNotFound);
  CHECK(std::string(to_string(RingStatus::kTooFewHosts)) == "too-few-hosts");
}

TEST_CASE("topology ring: prefers the pairs with the most cables") {
  // Doubled ring 0-2-1-3-0, single cables on the other two pairs.
  auto m = complete(4, 1);
  link(m, 0, 2, 2);
  link(m, 2, 1, 2);
  link(m, 1, 3, 2);
  link(m, 3, 0, 2);
  Ring r = find_ring(m);
  check_is_ring(m, r);
  CHECK(r.min_cables == 2);
  CHECK(r.total_cables == 8);
  CHECK(r.min_is_best);
  CHECK(r.order == std::vector<std::size_t>{0, 2, 1, 3});
}

TEST_CASE("topology ring: raises the total when the minimum cannot rise") {
  // The 5-host lab with h2-h4 omitted and h1-h3 doubled: the best ring uses h1-h3.
  auto s = testing::lab_mesh(5, {{2, 4}}, {{1, 3}});
  ClusterGraph g(s);
  Ring r = find_ring(g);
  check_is_ring(g.matrix(), r);
  CHECK(r.min_cables == 1);
  CHECK(r.total_cables == 6);
  auto pairs = ring_pairs(r);
  CHECK(std::count_if(pairs.begin(), pairs.end(), [](auto p) {
          return (p.first == 0 && p.second == 2) || (p.first == 2 && p.second == 0);
        }) == 1);
}

TEST_CASE("topology ring: impossible cases are proven without searching") {
  Matrix path(4, std::vector<int>(4, 0));  // 0-1-2-3: two hosts of degree 1
  link(path, 0, 1);
  link(path, 1, 2);
  link(path, 2, 3);
  Ring r = find_ring(path);
  CHECK(r.status == RingStatus::kNotFound);
  CHECK(r.order.empty());
  CHECK(r.steps == 0);

  Matrix bowtie(5, std::vector<int>(5, 0));  // triangles 0-1-2 and 2-3-4 share host 2
  link(bowtie, 0, 1);
  link(bowtie, 1, 2);
  link(bowtie, 0, 2);
  link(bowtie, 2, 3);
  link(bowtie, 3, 4);
  link(bowtie, 2, 4);
  r = find_ring(bowtie);
  CHECK(r.status == RingStatus::kNotFound);
  CHECK(r.steps == 0);
}

TEST_CASE("topology ring: the Petersen graph has no ring, proven by search") {
  Matrix m(10, std::vector<int>(10, 0));
  for (std::size_t i = 0; i < 5; ++i) {
    link(m, i, (i + 1) % 5);          // outer cycle
    link(m, i, i + 5);                // spokes
    link(m, 5 + i, 5 + (i + 2) % 5);  // inner star
  }
  Ring r = find_ring(m);
  CHECK(r.status == RingStatus::kNotFound);
  CHECK(r.steps > 0);
  CHECK(r.steps < 1000);
}

TEST_CASE("topology ring: a sparse 64-host ring with chords is found") {
  Matrix m(64, std::vector<int>(64, 0));
  for (std::size_t i = 0; i < 64; ++i) link(m, i, (i + 1) % 64);
  for (std::size_t i = 0; i < 64; i += 8) link(m, i, (i + 32) % 64);
  Ring r = find_ring(m);
  check_is_ring(m, r);
  CHECK(r.steps < 1000);
}

TEST_CASE("topology ring: the step budget bounds hopeless searches") {
  // Unbalanced complete bipartite K(31,33): 2-connected, no ring, exponential to refute.
  Matrix m(64, std::vector<int>(64, 0));
  for (std::size_t a = 0; a < 31; ++a) {
    for (std::size_t b = 31; b < 64; ++b) link(m, a, b);
  }
  auto start = std::chrono::steady_clock::now();
  Ring r = find_ring(m, RingOptions{20'000});
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
  CHECK(r.status == RingStatus::kGaveUp);
  CHECK(r.steps == 20'000);
  CHECK(r.order.empty());
  CHECK(ms.count() < 2000.0);

  Ring small = find_ring(complete(10), RingOptions{3});
  CHECK(small.status == RingStatus::kGaveUp);
  CHECK(std::string(to_string(small.status)) == "gave-up");
}

TEST_CASE("topology ring: a found ring whose better minimum search gave up says so") {
  // The only ring with two cables per pair is 0-2-4-1-3; the heavy pair 0-1 lures the first
  // descent (k = 1) into the ring 0-1-3-2-4, whose minimum is 1.
  auto m = complete(5, 1);
  link(m, 0, 1, 5);
  link(m, 0, 2, 2);
  link(m, 2, 4, 2);
  link(m, 4, 1, 2);
  link(m, 1, 3, 2);
  link(m, 3, 0, 2);
  Ring full = find_ring(m);
  check_is_ring(m, full);
  CHECK(full.min_cables == 2);
  CHECK(full.total_cables == 10);
  CHECK(full.min_is_best);
  Ring cut = find_ring(m, RingOptions{5});  // 4 steps for k = 1, 1 left for k = 2
  check_is_ring(m, cut);
  CHECK(cut.min_cables == 1);
  CHECK_FALSE(cut.min_is_best);
}

TEST_CASE("topology ring: a non-square matrix is a bug") {
  CHECK_THROWS_AS(find_ring(Matrix{{0, 1}, {1}}), std::invalid_argument);
}

}  // namespace
}  // namespace cc::topology
