// One clusterctl at a time per lab. `lab up` and `lab down` of lab NAME hold an exclusive
// flock(2) on /run/clusterctl/labs/NAME.lock from before they look at the machine until they
// are done, so two runs never interleave their `ip`, ssh-keygen and unshare commands (two
// `lab up` at one moment both failed with "Cannot create namespace file ...: File exists" and
// rolled each other back; a `lab down` during `lab up` broke it). The second run waits for the
// first (up to kLockWait), then works on what the first left: a second `lab up` finds the lab
// and says it already exists, a second `lab down` finds nothing to remove. When the wait is
// over, it says who holds the lab and changes nothing.
//
// Lab names are machine-wide (namespaces cc-NAME-hN, /run/clusterctl/labs/NAME), so the lock
// is too, whatever the state directory or --dir: it lies beside the lab's runtime directory, in
// /run/clusterctl/labs, which must be a real directory owned by this user (root) that no one
// else may write (checked, with its parent), and it is opened with O_NOFOLLOW, never through a
// symbolic link. The kernel drops a flock when its holder exits, even by SIGKILL, so a killed
// `lab up` never leaves the lab locked; the descriptor is close-on-exec, so no sshd or other
// child the operation starts holds it on. Who holds it is read from /proc/locks (the kernel's
// word, by the file's device and inode), never from a pid written in a file; the file holds
// only the holder's operation ("up" or "down"), for the waiter's message.
//
// `lab down` removes the file once the lab is gone, while still holding it (remove_file); a
// waiter that then gets the lock of the removed file sees that the path no longer names it and
// starts over on the new one. A `lab down` that is refused (the lab is another lab directory's,
// or not all of it could be removed) leaves the file: something of the lab is still on this
// machine then, and the `lab down` that removes it removes the file too. An unheld file is
// harmless: it locks nothing, `lab status` reports no holder for it, nothing lists labs from
// this directory, and /run is emptied at boot.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "lab/lab.h"
#include "util/atomic_file.h"
#include "util/result.h"

namespace cc::lab {

/// How long `lab up` / `lab down` wait for another clusterctl's operation on the same lab
/// (a 16-host `lab up` takes a few seconds).
inline constexpr std::chrono::seconds kLockWait{30};

/// /run/clusterctl/labs/NAME.lock.
std::filesystem::path lock_path(std::string_view name);

/// A held lab lock; released when it goes (or when the process exits, however).
class LabLock {
 public:
  LabLock() = default;
  LabLock(util::UniqueFd fd, std::filesystem::path path)
      : fd_(std::move(fd)), path_(std::move(path)) {}
  LabLock(LabLock&&) noexcept = default;
  LabLock& operator=(LabLock&&) noexcept = default;

  bool held() const { return fd_.get() >= 0; }
  const std::filesystem::path& path() const { return path_; }
  /// Removes the lock file, still holding the lock, when the path still names it; then its
  /// directory and that one's parent, when empty. For when the lab is gone.
  void remove_file();

 private:
  util::UniqueFd fd_;
  std::filesystem::path path_;
};

/// Takes the lock of lab `lab` at `path` (lock_path(lab); tests give their own) for
/// `operation` ("up" or "down"). The directory of `path` is created (mode 0755, with its
/// parent) when missing. When another process holds it, `note` (may be empty) gets one line
/// saying who, and the call waits, polling every 50 ms, up to `wait`.
/// Errors: kUsage when the directory is not a real directory owned by this user and writable by
/// no one else, when `path` is a symbolic link or not a regular file, or when the lock is still
/// held after `wait` ("lab 'X' is being created by another clusterctl (pid N)", nothing was
/// changed); kInterrupted on Ctrl-C while waiting.
util::Result<LabLock> acquire_lock(const std::filesystem::path& path, std::string_view lab,
                                   std::string_view operation, std::chrono::milliseconds wait,
                                   const Progress& note);

/// Who holds lab `lab`'s lock at `path` right now, for `lab status`; nullopt when no one does
/// (or the file is not there, or cannot be read). Never creates the file or waits.
std::optional<LockHolder> lock_holder(const std::filesystem::path& path, std::string_view lab);

/// The pid holding a flock(2) on the file of device `dev_major`:`dev_minor` and inode `ino`, from
/// the text of /proc/locks (proc(5): "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF", device in
/// hex); lines of waiters ("1: -> FLOCK ...") are skipped. nullopt when none is found (also on
/// a file system whose /proc/locks device is not stat's st_dev, as overlayfs may report: the
/// messages then name the lock file instead).
std::optional<int> flock_holder(std::string_view proc_locks, unsigned dev_major, unsigned dev_minor,
                                unsigned long ino);

}  // namespace cc::lab
