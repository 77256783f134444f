// The stall warning: a rank that prints nothing for timeouts.stall while using about 100% CPU
// (or wanting a core at every look, on a host whose cores other work shares)
// is probably spinning in a hung collective; a rank whose process is stopped (SIGSTOP, Ctrl-Z,
// a debugger) holds up every collective of the others. Both come from one `ps -o stat= -o
// time= -p PID` per host (the rank's process state and cumulative CPU time; POSIX), sampled
// about every interval() and once more when a rank fails.
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

/// The shell script (argv) printing "PID STAT TIME" for each pid given after it (ps's STAT:
/// "S", "R+", "T", "Ts"; TIME as parse_cpu_time reads it); a pid that is gone prints "PID -".
std::vector<std::string> sample_argv(const std::vector<long>& pids);

/// One rank process in sample_argv's output.
struct ProcessSample {
  long pid = 0;
  bool stopped = false;  // STAT begins with T (stopped by a signal) or t (stopped by a tracer)
  std::chrono::milliseconds cpu{0};
  bool runnable = false;  // STAT begins with R: running, or ready and waiting for a core
};

/// Parses sample_argv's output; lines of pids that are gone, and malformed lines, are left
/// out.
std::vector<ProcessSample> parse_samples(std::string_view text);

/// Per rank: decides when to warn, from samples of its CPU time and its last output.
class StallWatch {
 public:
  /// The span CPU use is measured over (sample()).
  static constexpr std::chrono::seconds kLoadWindow{4};

  explicit StallWatch(std::chrono::seconds stall) : stall_(stall) {}
  /// How often to sample: stall / 2, between 2 s and 10 s.
  std::chrono::milliseconds interval() const;
  /// A CPU time sample taken at `now`; `silent` is how long the rank has printed nothing.
  /// Returns true once per silent period when the rank has been silent for `stall` and kept a
  /// core busy over the last kLoadWindow (between the last sample that old and now; since the
  /// first sample while none is): it used at least 75% of a core, or it was `runnable` at
  /// every sample of the window and used at least 20%. The second is a rank that spins on a
  /// host whose cores other work shares (more ranks than cores, a build beside the job, a
  /// niced lab): it always wants a core but gets only its share. A window of several seconds
  /// because Linux's ps gives CPU time in whole seconds (macOS's in hundredths): over 2 s, a
  /// rank busy all the time could show 1 s, 50%.
  bool sample(std::chrono::steady_clock::time_point now, std::chrono::milliseconds cpu,
              std::chrono::milliseconds silent, bool runnable = false);
  /// CPU use over the window of the last sample(), 0..n (1.0 = one core).
  double last_load() const { return load_; }
  /// Whether the rank was runnable at every sample of the last sample()'s window.
  bool last_always_runnable() const { return always_runnable_; }
  /// The least CPU share of a rank runnable at every sample that counts as busy.
  static constexpr double kSharedCoreLoad = 0.2;

 private:
  std::chrono::seconds stall_;
  struct Look {
    std::chrono::steady_clock::time_point at;
    std::chrono::milliseconds cpu;
    bool runnable;
  };
  // The samples still needed for the window, oldest first.
  std::vector<Look> history_;
  double load_ = 0;
  bool always_runnable_ = false;
  bool warned_ = false;
};

}  // namespace cc::launch
