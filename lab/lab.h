// The lab's three operations: up, down and status (see ARCHITECTURE.md, "lab/"). They need
// root, run every external program through `local` (a LocalExecutor in clusterctl, with a
// timeout per command) and return errors carrying exit codes; they never print.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lab/data.h"
#include "lab/record.h"
#include "lab/topology.h"
#include "remote/executor.h"
#include "util/result.h"

namespace cc::lab {

/// Receives one short line per step ("starting sshd on 8 hosts"); may be empty.
using Progress = std::function<void(std::string_view)>;

class LabLock;  // lock.h

/// Who holds a lab's lock, and so what the lab is meanwhile.
struct LockHolder {
  /// The lab's state while held, the word `lab status` prints: "creating" (`lab up`, as
  /// lab.json says while it is made), "removing" (`lab down`), "changing" (an operation the
  /// file does not name).
  std::string state;
  std::optional<int> pid;  // from /proc/locks; nullopt when it cannot be told (overlayfs)
  /// As acquire_lock says it: "lab 'X' is being created by another clusterctl (pid N)".
  std::string message;
};

/// Errors (kUsage) unless running as root, saying why root is needed.
util::Status require_root();

struct UpOptions {
  std::string name = "default";
  TopologyRequest topology;
  std::filesystem::path dir;  // empty: default_lab_dir(name)
  /// Bytes of each host's data directory, a tmpfs (data.h; parse_data_size reads --data-size).
  std::uint64_t data_size = kDefaultDataSize;
  /// Told once, when another clusterctl holds the lab (lock.h) and this run waits; may be empty.
  Progress waiting;
};

/// Creates the lab and writes its directory; returns its record (state "up", sshd pids).
/// Each host's sshd runs in a mount namespace of its own in which the host's data directory
/// (a tmpfs, host_data_dir) is bind-mounted on the common path (data_dir), so each session
/// there sees its own.
/// Cost: one `ip -batch` for the root namespace, then per host one `ip -batch`, one ssh-keygen,
/// one mount, one unshare and one sshd start (about 0.05 s per host here).
/// Holds the lab's lock (lock.h) from before it looks at the machine to the end: while another
/// clusterctl creates or removes a lab of that name, it waits for it (up to kLockWait), then
/// goes on (and finds the other's lab, if it made one).
/// Errors: kUsage for a bad request (data_size below kMinDataSize among them), an existing lab
/// of that name (or its remains), a lab that another clusterctl still holds after kLockWait
/// (named, with its pid; nothing changed), or a failed command (the message names it and quotes
/// its stderr); kInterrupted on Ctrl-C.
/// On any error everything made so far is removed again (lab_down) before returning.
util::Result<LabRecord> lab_up(remote::Executor& local, const UpOptions& options,
                               const Progress& progress);

/// What lab_down removed.
struct DownReport {
  int processes = 0;
  int namespaces = 0;
  int links = 0;
  int mounts = 0;
  int files = 0;
  std::vector<std::string> kept;  // what was left alone, and why (not made by `lab up`, ...)
  bool anything() const { return processes + namespaces + links + mounts + files > 0; }
};

/// Removes every process, namespace, interface, mount and file of lab `name`, found by name
/// and tag (lab.json is used when present but not needed), so it also cleans up after a
/// crashed `lab up`. Each host's data tmpfs is found in the mount table by path and source
/// name and unmounted (its contents are gone with it); the runtime directory is removed only
/// once nothing is mounted below it. Files are removed only from the lab directory (`dir`, empty:
/// the default one), and only real files and directories `lab up` makes there (never through a
/// symbolic link). Nothing to remove is success.
/// A lab that /run/clusterctl/labs/NAME/lab_dir gives to another lab directory (another state
/// directory, --dir or user; owner.h) is refused with kUsage, nothing removed, unless
/// `other_state`: then its processes, namespaces, interfaces, mounts and runtime files go, and
/// that directory's files stay (DownReport::kept names it).
/// Holds the lab's lock (lock.h) throughout, as lab_up does (`waiting`, may be empty, is told
/// when it waits), so two at once remove the lab once: the second finds nothing (success).
/// What another process removed meanwhile counts as removed, not as a failure.
/// Errors: kUsage as above, or for a lab that another clusterctl still holds after kLockWait
/// (nothing removed); kCheckFailed when something could not be removed (the message lists it).
util::Result<DownReport> lab_down(remote::Executor& local, std::string_view name,
                                  const std::filesystem::path& dir, bool other_state = false,
                                  const Progress& waiting = {});

/// lab_down for a caller that holds lab `name`'s lock already (`held`): lab_up's rollback.
util::Result<DownReport> lab_down_locked(const LabLock& held, remote::Executor& local,
                                         std::string_view name, const std::filesystem::path& dir,
                                         bool other_state);

struct HostStatus {
  HostRecord host;
  bool netns_present = false;
  bool sshd_running = false;
  int sshd_pid = 0;  // from the pid file when readable, else from lab.json
  bool data_mounted = false;  // something is mounted at host.data_dir (its tmpfs)
};

struct LabStatus {
  LabRecord lab;
  std::filesystem::path dir;
  std::vector<HostStatus> hosts;
  /// Who is creating or removing the lab right now (lock.h lock_holder: "lab 'X' is being
  /// created by another clusterctl (pid N)"); nullopt when no one is.
  std::optional<LockHolder> busy;
  /// False while a `lab up` holding the lock has not written lab.json yet (or a holder works on
  /// a lab that has none here): `lab` then has only its name, and its state is busy->state.
  bool recorded = true;
  /// State "up" (not a half-made lab) and every host's namespace and sshd present.
  bool all_up() const;
};

/// Reads lab.json and checks each host's namespace and sshd (alive, named sshd, in the host's
/// network namespace) and whether its data directory is mounted. Errors: kUsage when this lab
/// directory has no such lab (owner.h status_error: none at all; a lab of another lab
/// directory, named with how to reach it; remains of a crashed `lab up` and how to remove them,
/// as root; what a non-root user can tell); kCheckFailed, saying who, while another clusterctl
/// creates or removes a lab of that name that is not (or no longer) this directory's.
util::Result<LabStatus> lab_status(std::string_view name, const std::filesystem::path& dir);

/// The lab directory to use: `dir` made absolute, or remote::lab_dir(name).
util::Result<std::filesystem::path> resolve_lab_dir(std::string_view name,
                                                    const std::filesystem::path& dir);

}  // namespace cc::lab
