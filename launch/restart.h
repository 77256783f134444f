// restart: on-failure (job.yaml): the whole job started again after a failure, up to
// max_attempts starts in all. Each attempt is a run of its own (runner.h: its own job
// directories); its job id is the first's with "-aN" (N = 2, 3, ...), and the logs keep every
// attempt's lines (one OutputMux for all), each attempt's begun in every rank log by its
// attempt_marker line (OutputMux::mark_logs) when a job may have more than one.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "launch/job_spec.h"
#include "launch/runner.h"
#include "util/result.h"

namespace cc::launch {

/// Which attempt of the job is run.
struct Attempt {
  std::string job_id;  // the first's, or the first's with "-aN"
  int number = 1;      // 1-based
  int of = 1;          // the most there may be (restart.max_attempts with on-failure, else 1)
};

/// One attempt of the job (run_job under a.job_id, or a fake in tests).
using AttemptRunner = std::function<util::Result<JobOutcome>(const Attempt& a)>;

/// The line that starts attempt `a` in every rank log, made by clusterctl and saying so, with
/// its number and start time (`when`, util::utc_now_iso): "--- clusterctl: attempt 2 of 3
/// started 2026-12-07T02:31:05Z (job ID-a2) ---".
std::string attempt_marker(const Attempt& a, std::string_view when);

/// Runs the job (`job_id`), then again while the attempt failed (exit kJobFailed: not after an
/// error before any rank started, not after Ctrl-C, never once util::interrupted()) and attempts
/// remain: `restart.max_attempts` with policy on-failure, else 1. Before each new attempt,
/// `note` gets "attempt N of M failed:\n<summary>starting attempt N+1 (restart: on-failure)".
/// A later attempt that failed has job_reason's reason, ending with " (attempt N of M)".
/// Returns the last attempt's result.
util::Result<JobOutcome> run_with_restarts(const Restart& restart, const std::string& job_id,
                                           const AttemptRunner& attempt,
                                           const std::function<void(const std::string&)>& note);

}  // namespace cc::launch
