// restart: on-failure (job.yaml): the whole job started again after a failure, up to
// max_attempts starts in all. Each attempt is a run of its own (runner.h: its own job
// directories); its job id is the first's with "-aN" (N = 2, 3, ...), and the logs keep every
// attempt's lines (one OutputMux for all).
#pragma once

#include <functional>
#include <string>

#include "launch/job_spec.h"
#include "launch/runner.h"
#include "util/result.h"

namespace cc::launch {

/// One attempt of the job under the job id given (run_job, or a fake in tests).
using AttemptRunner = std::function<util::Result<JobOutcome>(const std::string& job_id)>;

/// Runs the job (`job_id`), then again while the attempt failed (exit kJobFailed: not after an
/// error before any rank started, not after Ctrl-C, never once util::interrupted()) and attempts
/// remain: `restart.max_attempts` with policy on-failure, else 1. Before each new attempt,
/// `note` gets "attempt N of M failed:\n<summary>starting attempt N+1 (restart: on-failure)".
/// A later attempt's reason ends with " (attempt N of M)". Returns the last attempt's result.
util::Result<JobOutcome> run_with_restarts(const Restart& restart, const std::string& job_id,
                                           const AttemptRunner& attempt,
                                           const std::function<void(const std::string&)>& note);

}  // namespace cc::launch
