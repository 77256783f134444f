// The file policy: every file clusterctl reads or writes goes through here.
//
// Writing a path (write_file_atomic):
//   - nothing there, or a regular file: a temporary file in the same directory, fsync, rename
//     into place, so a crash or Ctrl-C never leaves a half-written state file, key or inventory;
//   - a symbolic link: followed (to its final target, however many links) and the target gets
//     this same policy. A dangling link is refused: writing would create a file where the link
//     points, outside where the operator looked;
//   - a character device or a FIFO (`-o /dev/null`, `-o /dev/stdout`, a pipe): written through,
//     never renamed over, so a device node is never replaced by a regular file. A FIFO with no
//     reader is refused at once rather than waited on;
//   - a directory, a block device or a socket: refused (exit 2, naming the path and its kind).
// Files that must be new (logs, job records) are created by create_new_file: O_EXCL|O_NOFOLLOW,
// so nothing existing is ever truncated or followed.
//
// Reading a path (read_file, open_regular_file): it must be a regular file (a FIFO, a device or a directory is
// refused, so `/dev/zero` or a FIFO can neither hang nor exhaust memory) and at most
// `max_bytes` long (kMaxInputBytes unless the caller says otherwise).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace cc::util {

/// The size cap of every input file we read (job files, inventories, cluster states,
/// thresholds, hostfiles, records): 64 MiB. A 1,000-host cluster state is about 2 MiB.
inline constexpr std::uintmax_t kMaxInputBytes = 64ull << 20;

/// The longest a file name may be, in bytes (NAME_MAX on Linux and macOS): a temporary named
/// after the file it becomes is cut to fit (util::utf8_prefix).
inline constexpr std::size_t kNameMax = 255;

/// How write_file_atomic names the temporary it writes beside a file it replaces, for writers
/// whose temporaries others must recognise (remote/upload_temp.h: an upload's, which the next
/// upload there removes when it was left). Without it: ".NAME.tmp.XXXXXX" (mkstemp).
struct TempNaming {
  /// The temporary's file name for a file named `name`, at most kNameMax bytes; created with
  /// O_EXCL (an existing entry of that name is an error, never followed or truncated).
  std::function<std::string(const std::string& name)> name;
  /// Called once the temporary `tmp` exists (empty, mode 0600), before it is written, with the
  /// path it will be renamed to: to remove what earlier writes there left.
  std::function<void(const std::filesystem::path& tmp, const std::filesystem::path& target)>
      created;
};

/// Writes `content` to `path` by the policy above. Creates missing parent directories (mode
/// 0700). `mode` applies to a file this call creates or replaces, not to a device written
/// through. Errors: ExitCode::kUsage with the path and the OS error (e.g. "permission denied"),
/// or the reason it was refused; the temporary file is removed on failure.
Status write_file_atomic(const std::filesystem::path& path, std::string_view content,
                         unsigned mode = 0644, const TempNaming& naming = {});

/// Whether `path` can take an output the operator named (-o, --junit, ...), checked before any
/// work is done: what write_file_atomic would refuse (a directory, a block device, a socket, a
/// dangling link) is refused here, and so is a path whose directory does not exist (a typo
/// there must not create directories: write_output_file never does) or cannot take a new file
/// (tried: a temporary file is created there and removed, as write_file_atomic will need one;
/// `access` says yes to root on a read-only mount), and one that is the same file as one of
/// `inputs`, the files the command reads (by device and inode: a symbolic link to an input or
/// another spelling of its path is caught; writing it would replace the input with another
/// kind of file). Errors: kUsage naming the path and what to do; nothing is written.
Status check_output_path(const std::filesystem::path& path,
                         const std::vector<std::filesystem::path>& inputs = {});

/// The kind of file a command writes to an output the operator names, recognised by content:
/// the only regular file it replaces there without --force.
struct OwnOutput {
  std::string what;  // follows "is not": "a clusterctl cluster state (what `discover -o` writes)"
  std::function<bool(std::string_view content)> is_one;
};

/// check_output_path, then, unless `force`: an existing regular file at `path` (a link
/// followed) that is neither empty nor `own` (own.is_one on its content, read under
/// kMaxInputBytes) is refused, so that a mistyped -o never replaces another file (a job file,
/// an inventory, a cluster state where a hostfile goes). Errors: kUsage "PATH: exists and is
/// not WHAT: nothing was written: give another path, or add --force to replace it".
Status check_output_path(const std::filesystem::path& path,
                         const std::vector<std::filesystem::path>& inputs, const OwnOutput& own,
                         bool force);

/// Whether `dir` can take an output directory the operator names (`collect -o DIR`), checked
/// before any work is done: an empty directory, or a new one (to be created by the caller)
/// whose parent directory exists, as check_output_path requires of a file: a typo above it
/// never creates directories. Errors: kUsage naming the path and what to do: it is not a
/// directory, it is not empty, or its parent does not exist or is not a directory.
Status check_output_directory(const std::filesystem::path& dir);

/// check_output_path, then write_file_atomic: for outputs the operator names. Unlike
/// write_file_atomic, never creates a directory.
Status write_output_file(const std::filesystem::path& path, std::string_view content,
                         unsigned mode = 0644);

/// Reads a whole regular file of at most `max_bytes` bytes. Errors: ExitCode::kUsage naming
/// the path and the OS error (for a file that is not there, with "did you mean" a file of a
/// close name beside it: util::did_you_mean_file), its kind when it is not a regular file, or
/// its size and the cap.
Result<std::string> read_file(const std::filesystem::path& path,
                              std::uintmax_t max_bytes = kMaxInputBytes);

/// An open file descriptor, closed when it goes.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

/// Opens `path` for reading when it is a regular file (a FIFO is opened without waiting for a
/// writer and then refused, as a device, a socket or a directory is): for a file read piece by
/// piece as it grows (`logs -f`). Errors: ExitCode::kUsage naming the path and the OS error
/// (with read_file's "did you mean"), or its kind when it is not a regular file.
Result<UniqueFd> open_regular_file(const std::filesystem::path& path);

/// Creates `path` for writing; it must not exist (O_CREAT|O_EXCL|O_NOFOLLOW: an existing file,
/// link or device there is an error, never truncated or followed). Errors: kUsage naming the
/// path ("already exists" / the OS error).
Result<UniqueFd> create_new_file(const std::filesystem::path& path, unsigned mode = 0644);

/// Creates the directory `path` (mode 0700); it must not exist. Errors: kUsage naming it.
Status create_private_dir(const std::filesystem::path& path);

/// A directory that holds private state (job records, labs): created (with its missing
/// parents) mode 0700 if absent; then it, and each parent below `home` (when it lies under
/// `home`), must be a real directory (not a symbolic link) owned by this user and not writable
/// by group or others. Errors: kUsage naming the path, its owner and mode, and the fix.
Status ensure_private_dir(const std::filesystem::path& path, const std::filesystem::path& home);

/// `bytes` random bytes from the OS CSPRNG (/dev/urandom), as 2*bytes hex digits. Throws
/// std::runtime_error if the OS source cannot be read (a broken system, not an input error).
std::string random_hex(size_t bytes);

}  // namespace cc::util
