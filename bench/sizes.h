// Shared by the bench programs so they time the same sizes the same way: sizes from -b to -e
// by factor -f; per size, iters = clamp(256 MiB / size, 5, -n) after max(2, iters/5) warm-ups;
// once before the first size, kSettleMs of small all-reduces.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace bench {

inline size_t parse_size(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  switch (*end) {
    case 'K':
    case 'k':
      v *= 1024;
      break;
    case 'M':
    case 'm':
      v *= 1024 * 1024;
      break;
    case 'G':
    case 'g':
      v *= 1024.0 * 1024 * 1024;
      break;
    default:
      break;
  }
  return static_cast<size_t>(v);
}

// Before the first size every program runs small all-reduces for kSettleMs, rank 0's clock
// deciding (its "go on" flag, max-reduced with the others' 0 in the same call), so the first
// rows are not timed while the scheduler still spreads fresh ranks over the cores: ranks that
// clustercomm-perf -N forks start on their parent's core, and in a third of the runs took
// ~7 us per 8 B all_reduce over shared memory (against 0.2) for the first ~10 ms, until the
// load balancer moved one. Every program settles alike, so the comparison stays even.
inline constexpr int kSettleMs = 50;

struct Sweep {
  size_t min_bytes = 8, max_bytes = size_t{64} << 20, factor = 2;
  int iters = 50, warmup = -1;
  std::vector<size_t> sizes() const {
    std::vector<size_t> v;
    for (size_t s = min_bytes; s <= max_bytes; s *= factor) {
      v.push_back(s);
      if (factor < 2) break;
    }
    return v;
  }
  int iters_for(size_t bytes) const {
    const size_t budget = (size_t{256} << 20) / (bytes == 0 ? 1 : bytes);
    size_t n = budget < 5 ? 5 : budget;
    if (n > static_cast<size_t>(iters)) n = static_cast<size_t>(iters);
    return static_cast<int>(n);
  }
  int warmup_for(size_t bytes) const {
    if (warmup >= 0) return warmup;
    const int n = iters_for(bytes) / 5;
    return n < 2 ? 2 : n;
  }
  // Parses -b -e -f -n -w; returns false for an unknown flag.
  bool parse(int& i, int argc, char** argv) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return false;
    if (a == "-b" || a == "--minbytes")
      min_bytes = parse_size(argv[++i]);
    else if (a == "-e" || a == "--maxbytes")
      max_bytes = parse_size(argv[++i]);
    else if (a == "-f" || a == "--stepfactor")
      factor = parse_size(argv[++i]);
    else if (a == "-n" || a == "--iters")
      iters = std::atoi(argv[++i]);
    else if (a == "-w" || a == "--warmup_iters")
      warmup = std::atoi(argv[++i]);
    else
      return false;
    return true;
  }
};

}  // namespace bench
