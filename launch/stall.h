// The stall warning: a rank that prints nothing for timeouts.stall while using about 100% CPU
// is probably spinning in a hung collective. CPU use comes from `ps -o time= -p PID` on the
// rank's host (the rank's cumulative CPU time; POSIX), sampled about every interval().
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cc::launch {

/// Parses ps's TIME column: "[[DD-]HH:]MM:SS[.cc]" ("00:01:05", "1-02:03:04", "0:05.12" on
/// macOS). Milliseconds, or nullopt for anything else.
std::optional<std::chrono::milliseconds> parse_cpu_time(std::string_view text);

/// The shell script (argv) printing "PID TIME" for each pid given after it; unknown pids print
/// "PID -".
std::vector<std::string> cpu_time_argv(const std::vector<long>& pids);

/// Per rank: decides when to warn, from samples of its CPU time and its last output.
class StallWatch {
 public:
  explicit StallWatch(std::chrono::seconds stall) : stall_(stall) {}
  /// How often to sample: stall / 2, between 2 s and 10 s.
  std::chrono::milliseconds interval() const;
  /// A CPU time sample taken at `now`; `silent` is how long the rank has printed nothing.
  /// Returns true once per silent period when the rank has been silent for `stall` and used at
  /// least 75% of a core since the previous sample.
  bool sample(std::chrono::steady_clock::time_point now, std::chrono::milliseconds cpu,
              std::chrono::milliseconds silent);
  /// CPU use between the last two samples, 0..n (1.0 = one core).
  double last_load() const { return load_; }

 private:
  std::chrono::seconds stall_;
  std::optional<std::chrono::steady_clock::time_point> at_;
  std::chrono::milliseconds cpu_{0};
  double load_ = 0;
  bool warned_ = false;
};

}  // namespace cc::launch
