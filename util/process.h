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

}  // namespace cc::util
