// What identifies a process beyond its pid, which the system reuses: its start time. A record
// that names a process (a job's launcher, a rank's process group) keeps both, and nothing is
// signalled unless both still match.
#pragma once

#include <optional>
#include <string>

namespace cc::util {

/// An opaque text naming when process `pid` started, equal for the same process on every
/// call and different for a later process given the same pid; nullopt when no such process
/// exists (or it cannot be inspected). Linux: field 22 of /proc/PID/stat (clock ticks since
/// boot, proc(5)) with the boot id; macOS: kinfo_proc's p_starttime from sysctl
/// KERN_PROC_PID (sys/sysctl.h).
std::optional<std::string> process_start_time(long pid);

/// This machine's name (gethostname), for records that say where a process runs.
std::string host_name();

/// A pipe (fds[0] to read, fds[1] to write) whose ends are close-on-exec from the start, so no
/// child that another thread spawns at the same moment inherits them. False (errno set) when
/// none can be made. Linux: pipe2(O_CLOEXEC) (pipe(2)). macOS has no pipe2: pipe() and then
/// FD_CLOEXEC, which leaves a moment in which a child could inherit them; our spawns there use
/// POSIX_SPAWN_CLOEXEC_DEFAULT (posix_spawnattr_setflags(3) on macOS), so their children get only
/// the descriptors they are given.
bool cloexec_pipe(int (&fds)[2]);

}  // namespace cc::util
