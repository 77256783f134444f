#include "launch/restart.h"

#include <fmt/format.h>

#include "util/interrupt.h"

namespace cc::launch {

util::Result<JobOutcome> run_with_restarts(const Restart& restart, const std::string& job_id,
                                           const AttemptRunner& attempt,
                                           const std::function<void(const std::string&)>& note) {
  const int attempts = restart.policy == Restart::Policy::kOnFailure ? restart.max_attempts : 1;
  auto outcome = attempt(job_id);
  for (int n = 2; n <= attempts && outcome && !util::interrupted() &&
                  outcome->code == util::ExitCode::kJobFailed;
       ++n) {
    note(fmt::format("attempt {} of {} failed:\n{}starting attempt {} (restart: on-failure)", n - 1,
                     attempts, render_summary(*outcome), n));
    outcome = attempt(fmt::format("{}-a{}", job_id, n));
    if (outcome) outcome->reason += fmt::format(" (attempt {} of {})", n, attempts);
  }
  return outcome;
}

}  // namespace cc::launch
