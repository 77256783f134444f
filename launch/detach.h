// `launch --detach`: the launcher goes on in a child process of its own session, and the
// command returns once the job is recorded. The one system call this takes, fork(2), is behind
// a function so that a test can make it fail.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>

#include "launch/output.h"
#include "util/result.h"

namespace cc::launch {

/// fork(2), or a fake of it: the child's pid in the parent, 0 in the child, -1 with errno set.
using ForkFunction = std::function<pid_t()>;
/// Records the job run by the child `pid` (save_job); an error leaves the job unrecorded.
using RecordFunction = std::function<util::Status(pid_t child)>;

/// How long the child waits for the parent's word that the job is recorded: far longer than
/// writing one file takes; a parent that neither answers nor ends in that time is stuck, and
/// the child ends without running anything.
inline constexpr std::chrono::seconds kRecordWait{120};

/// Forks the background launcher. A job that runs must have a record (`logs`, `stop` and `jobs`
/// find it only by its record), and the record names the child's pid, so the child waits until
/// the parent has called `record(child)`:
///  - record ok: the child goes on (in the child: 0, after it has left the terminal's session
///    (setsid) and put /dev/null on its stdin, stdout and stderr); in the parent: its pid.
///  - record failed: the child ends (_exit, before it has started anything: no rank, no
///    connection, no log line) and is reaped; `logs` is removed as for a failed fork; the error
///    is record's, with what happened and what to do. So no job ever runs unrecorded.
///  - a parent that ends (or is killed) before it has said either: the child sees the pipe
///    closed and ends the same way; so does one that waits kRecordWait in vain.
/// Call it before any thread exists. A fork that fails (EAGAIN: the process limit, `ulimit
/// -u`; ENOMEM) is a failure of this machine, not of the input: ExitCode::kCheckFailed
/// (README, "Exit codes"), naming the system error, with nothing started and nothing left:
/// `logs`, the run's log directory made for the job, is removed (OutputMux::discard: only what
/// it made itself).
util::Result<pid_t> start_in_background(const ForkFunction& fork_fn, const RecordFunction& record,
                                        OutputMux* logs = nullptr,
                                        std::chrono::milliseconds record_wait = kRecordWait);

}  // namespace cc::launch
