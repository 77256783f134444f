// The Linux facts and system calls the lab needs besides external commands: named network
// namespaces (/run/netns), processes (/proc), signals, the mount table, mounting each host's
// data tmpfs and unmounting it and the UTS namespace files.
// Nothing here blocks for long; wait_for_exit() polls util::interrupted().
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "lab/data.h"
#include "util/result.h"

namespace cc::lab::sys {

namespace fs = std::filesystem;

/// True when running as root (effective uid 0).
bool is_root();

/// Where `ip netns` keeps named namespaces: /run/netns.
fs::path netns_dir();
/// The names of the network namespaces in /run/netns (sorted; empty when there is none).
std::vector<std::string> list_netns();

/// The processes (pids) that live in any of the namespaces that `ns_files` refer to (files in
/// /run/netns, or bind-mounted UTS namespace files): what `ip netns pids` reports, for several
/// namespaces of either kind in one pass over /proc. Zombies are left out.
std::vector<int> pids_in_namespaces(const std::vector<fs::path>& ns_files);

/// True when `pid` exists and is not a zombie.
bool alive(int pid);
/// /proc/PID/comm without the newline; empty when unreadable.
std::string comm(int pid);
/// /proc/PID/cmdline with NULs as spaces; empty when unreadable.
std::string cmdline(int pid);
/// Whether `pid` lives in the network namespace of `ns_file`; nullopt when that cannot be told
/// (no permission, no such process or file).
std::optional<bool> in_network_namespace(int pid, const fs::path& ns_file);

/// Sends `signal` to each pid (errors such as ESRCH ignored).
void send_signal(const std::vector<int>& pids, int signal);
/// Waits until every pid has exited (or is a zombie), up to `timeout`, polling every 20 ms and
/// returning early on util::interrupted(). Returns the pids still alive.
std::vector<int> wait_for_exit(std::vector<int> pids, std::chrono::milliseconds timeout);

/// This process's mount table (/proc/self/mountinfo, parse_mountinfo). Errors (kCheckFailed)
/// when it cannot be read.
util::Result<std::vector<MountEntry>> mounts();

/// Mounts a tmpfs of at most `size_bytes` (RAM is taken only for what is written) named `source`
/// at the existing directory `target`: mode 0755, owned by root, nosuid, nodev, and shared
/// (MS_SHARED), so that unmounting it here also unmounts the copies that mount namespaces made
/// since (each `ip netns exec` makes one) instead of leaving them holding its memory.
/// Errors (kUsage) name the target, the size and the OS error.
util::Status mount_tmpfs(const std::string& source, const fs::path& target,
                         std::uint64_t size_bytes);

/// Detaches a mount at `path` (umount2 MNT_DETACH). Not mounted or missing is success.
/// Errors (kCheckFailed) name the path and the OS error.
util::Status unmount(const fs::path& path);

}  // namespace cc::lab::sys
