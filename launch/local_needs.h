// What a job needs from this machine, checked before any host is contacted: the local files
// its `upload:` entries copy, and the environment variables and files its `secret_env:` reads.
// Each problem is reported at its place in the job file, all of them at once.
#pragma once

#include <vector>

#include "launch/job_spec.h"
#include "util/result.h"

namespace cc::launch {

/// Every problem with what `spec` needs locally, in job file order: an upload `src` that does
/// not exist, is not a regular file or cannot be read (ExitCode::kUnreachable: a host cannot be
/// set up without it, as README "Exit codes" says); a secret_env variable that is not set, a
/// secret_env file that cannot be read as a regular file (kUsage). Each message is
/// "FILE:LINE:COLUMN: what; what to do". Empty: nothing is missing. Secret values are read to
/// be checked but never appear in a message.
std::vector<util::Error> local_problems(const JobSpec& spec);

/// The exit code of a launch stopped by `problems` (not empty): kUsage when any is a mistake of
/// the job file or the environment, else kUnreachable (only uploads missing).
util::ExitCode local_problems_code(const std::vector<util::Error>& problems);

}  // namespace cc::launch
