#include "launch/restart.h"

#include <fmt/format.h>

#include "util/interrupt.h"

namespace cc::launch {

std::string attempt_marker(const Attempt& a, std::string_view when) {
  return fmt::format("--- clusterctl: attempt {} of {} started {} (job {}) ---", a.number, a.of,
                     when, a.job_id);
}

util::Result<JobOutcome> run_with_restarts(const Restart& restart, const std::string& job_id,
                                           const AttemptRunner& attempt,
                                           const std::function<void(const std::string&)>& note) {
  const int attempts = restart.policy == Restart::Policy::kOnFailure ? restart.max_attempts : 1;
  auto outcome = attempt(Attempt{job_id, 1, attempts});
  for (int n = 2; n <= attempts && outcome && !util::interrupted() &&
                  outcome->code == util::ExitCode::kJobFailed;
       ++n) {
    note(fmt::format("attempt {} of {} failed:\n{}starting attempt {} (restart: on-failure)", n - 1,
                     attempts, render_summary(*outcome), n));
    outcome = attempt(Attempt{fmt::format("{}-a{}", job_id, n), n, attempts});
    // The verdict's reason, not the watcher's alone: a job whose ranks all ended before the
    // watcher named a cause has none ("job failed:  (attempt 2 of 2)" with nothing before it).
    if (outcome && outcome->code != util::ExitCode::kOk) {
      outcome->reason = job_reason(*outcome) + fmt::format(" (attempt {} of {})", n, attempts);
    }
  }
  return outcome;
}

}  // namespace cc::launch
