// What a job needs from this machine, checked before any host is contacted: the file its
// `cluster:` names, the local files its `upload:` entries copy, and the environment variables
// and files its `secret_env:` reads.
// Each problem is reported at its place in the job file, all of them at once.
#pragma once

#include <string_view>
#include <vector>

#include "launch/job_spec.h"
#include "util/result.h"

namespace cc::launch {

/// What local_problems found.
struct LocalProblems {
  std::vector<util::Error> errors;  // in job file order
  /// The `cluster:` file (not a lab) is not there: its hosts cannot be placed, and the file is
  /// already named in `errors` (checked here only, once).
  bool cluster_missing = false;
};

/// Every problem with what `spec` needs locally, in job file order, all kUsage (an input
/// error: nothing was started): a `cluster:` file (cluster state, inventory, hostfile) that does
/// not exist, with "did you mean" a file of a close name beside it, else (a cluster state) the
/// discovery that makes it, `clusterctl GLOBAL discover -o PATH` with `global` the quoted
/// global options that select the hosts; an upload `src` that does not exist, is not a regular
/// file or cannot be read; a secret_env variable that is not set, a secret_env file that cannot
/// be read as a regular file. Each message is "FILE:LINE:COLUMN: what; what to do", never
/// "nothing was started": the one report of all of them says that once (cli/cmd_launch.cc).
/// Empty: nothing is missing. Secret values are read to be checked but never appear in a
/// message.
LocalProblems local_problems(const JobSpec& spec, std::string_view global = "");

}  // namespace cc::launch
