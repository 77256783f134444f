// Shared by the bench programs so they time the same sizes the same way: sizes from -b to -e
// by factor -f; per size, iters = clamp(256 MiB / size, 5, -n) after max(2, iters/5) warm-ups;
// once before the first size, kSettleMs of small all-reduces.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace bench {

// A bad command-line value: what() names the flag and the value, and says what is allowed.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "8", "64K", "1M", "2G" (powers of 1024; a fraction like "1.5M" is allowed): bytes, at most
// 1 TiB. Anything else (a sign, letters, trailing text) throws UsageError naming `flag`.
inline size_t parse_size(const char* flag, const char* s) {
  const std::string why = std::string(flag) + " " + s +
                          ": not a size (bytes, 0 to 1T, with an optional K, M or G suffix)";
  if (*s < '0' || *s > '9') throw UsageError(why);
  char* end = nullptr;
  double v = std::strtod(s, &end);  // s starts with a digit: strtod reads at least that
  if (*end == 'K' || *end == 'k') {
    v *= 1024, ++end;
  } else if (*end == 'M' || *end == 'm') {
    v *= 1024.0 * 1024, ++end;
  } else if (*end == 'G' || *end == 'g') {
    v *= 1024.0 * 1024 * 1024, ++end;
  } else if (*end == 'T' || *end == 't') {
    v *= 1024.0 * 1024 * 1024 * 1024, ++end;
  }
  if (*end != '\0' || !(v >= 0) || v > 1024.0 * 1024 * 1024 * 1024) throw UsageError(why);
  return static_cast<size_t>(v);
}

// A whole number in [lo, hi]; anything else throws UsageError naming `flag`.
inline long parse_int(const char* flag, const char* s, long lo, long hi) {
  long v = 0;
  const char* end = s + std::strlen(s);
  const auto [p, ec] = std::from_chars(s, end, v);
  if (ec != std::errc() || p != end || v < lo || v > hi) {
    throw UsageError(std::string(flag) + " " + s + ": not a whole number from " +
                     std::to_string(lo) + " to " + std::to_string(hi));
  }
  return v;
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
    size_t s = min_bytes;
    if (s == 0) {  // 0, then 1, factor, factor^2, ... (0 times the factor stays 0)
      v.push_back(0);
      s = 1;
    }
    for (; s <= max_bytes; s *= factor) {
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
  // Parses -b -e -f -n -w; returns false for an unknown flag (or one without its value).
  // Throws UsageError for a bad value.
  bool parse(int& i, int argc, char** argv) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[i + 1];
    if (a == "-b" || a == "--minbytes") {
      min_bytes = parse_size(argv[i], v);
    } else if (a == "-e" || a == "--maxbytes") {
      max_bytes = parse_size(argv[i], v);
    } else if (a == "-f" || a == "--stepfactor") {
      factor = static_cast<size_t>(parse_int(argv[i], v, 1, 1 << 20));
    } else if (a == "-n" || a == "--iters") {
      iters = static_cast<int>(parse_int(argv[i], v, 1, 1 << 30));
    } else if (a == "-w" || a == "--warmup_iters") {
      warmup = static_cast<int>(parse_int(argv[i], v, 0, 1 << 30));
    } else {
      return false;
    }
    ++i;
    return true;
  }
  // After parsing: throws UsageError when the sweep is empty (-b above -e).
  void check() const {
    if (min_bytes > max_bytes) {
      throw UsageError("-b " + std::to_string(min_bytes) + " is above -e " +
                       std::to_string(max_bytes) + ": no size to run (bytes)");
    }
  }
};

// For programs whose only flags are the sweep's: parses argv, then checks it. A bad or unknown
// flag prints what is wrong on stderr and exits 2.
inline Sweep parse_sweep_or_exit(int argc, char** argv, const char* prog) {
  Sweep sw;
  try {
    for (int i = 1; i < argc; ++i) {
      if (!sw.parse(i, argc, argv)) {
        throw UsageError(std::string(argv[i]) + ": unknown flag or no value after it (-b -e -f -n -w)");
      }
    }
    sw.check();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", prog, e.what());
    std::exit(2);
  }
  return sw;
}

}  // namespace bench
