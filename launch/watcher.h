// The watcher: the loop that decides when a job ends (runner.h). It reads the RankBoard the
// backend's sessions write (backend.h) and ends the job early on the first failure, Ctrl-C
// (util::interrupted()), timeouts.startup (not every rank running), timeouts.total or a cable
// of the job down for timeouts.cable (WatchOptions::cables_down); then it
// asks the backend for SIGTERM, again about every second for ranks that started since, and
// SIGKILL after timeouts.grace (at once when a Ctrl-C or SIGTERM arrives while it ends:
// util::interrupt_count() grew), and gives up on the sessions still connected once
// grace + control timeout + 5 s passed (their hosts do not answer). Beside that it samples the
// running ranks (stall.h: a rank silent at ~100% CPU, a stopped rank) and draws the status line.
// All time is the given util::Clock's, so a test on util::FakeClock proves every timeout without
// waiting for it.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "launch/backend.h"
#include "launch/job_spec.h"
#include "launch/output.h"
#include "util/clock.h"
#include "util/result.h"

namespace cc::launch {

struct WatchOptions {
  std::string name;  // the job's, for the status line
  Timeouts timeouts;
  std::chrono::milliseconds control_timeout{15'000};  // RunnerOptions::control_timeout
  /// Called about every 200 ms with the status line ("4/4 running, 0 exited, 12 s"); may be empty.
  std::function<void(const std::string&)> status;
  /// When the job began (timeouts.startup and .total count from it).
  std::chrono::steady_clock::time_point t0;
  /// How often the watcher looks at the board.
  std::chrono::milliseconds tick{20};
  /// The job's cables that are down now, one line each ("cable h2 tb2 - h3 tb1 is down: ...":
  /// topology::cable_down_line), from the last look (cable_watch.h); must not block. Empty
  /// function: no cable is watched. A cable seen down is named at once; one down for
  /// timeouts.cable ends the job (exit 4) with it as the cause, and a rank that fails while
  /// one is down is its consequence (a peer's collective gave up on the dead cable).
  std::function<std::vector<std::string>()> cables_down;
};

struct WatchResult {
  util::ExitCode code =
      util::ExitCode::kOk;               // kOk (the job ran to its end), kJobFailed, kInterrupted
  std::string reason;                    // why the job ended early; empty when it did not
  bool rank_failed = false;              // the reason is the board's first failed rank
  std::chrono::milliseconds startup{0};  // t0 until every rank ran (0: never)
};

/// Watches from backend.start() until every rank has ended (and, runtime mpi, mpirun) and every
/// posted signal ran (backend.join()). Notes ("ending the job", warnings) go to `output`; when
/// reports that came after the "ending the job" line change the cause it named (failure_cause,
/// runner.h, by which the summary's verdict is judged too), a note names the new one.
WatchResult watch(RankBoard& board, LaunchBackend& backend, OutputMux& output, util::Clock& clock,
                  const WatchOptions& opts);

}  // namespace cc::launch
