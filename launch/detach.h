// `launch --detach`: the launcher goes on in a child process of its own session, and the
// command returns once the job is recorded. The one system call this takes, fork(2), is behind
// a function so that a test can make it fail.
#pragma once

#include <sys/types.h>

#include <functional>

#include "launch/output.h"
#include "util/result.h"

namespace cc::launch {

/// fork(2), or a fake of it: the child's pid in the parent, 0 in the child, -1 with errno set.
using ForkFunction = std::function<pid_t()>;

/// Forks the background launcher. In the parent: the child's pid. In the child: 0, after it
/// has left the terminal's session (setsid) and put /dev/null on its stdin, stdout and stderr.
/// Call it before any thread exists. A fork that fails (EAGAIN: the process limit, `ulimit
/// -u`; ENOMEM) is a failure of this machine, not of the input: ExitCode::kCheckFailed
/// (README, "Exit codes"), naming the system error, with nothing started and nothing left:
/// `logs`, the run's log directory made for the job, is removed (OutputMux::discard: only what
/// it made itself).
util::Result<pid_t> start_in_background(const ForkFunction& fork_fn, OutputMux* logs = nullptr);

}  // namespace cc::launch
