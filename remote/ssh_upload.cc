// SshExecutor::upload: a file to the host over SFTP, written under a temporary name and renamed.
#include <fcntl.h>
#include <fmt/format.h>
#include <libssh/libssh.h>
#include <libssh/sftp.h>
#include <unistd.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "remote/ssh_session.h"
#include "remote/upload_temp.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"

namespace cc::remote {
namespace {

using Clock = std::chrono::steady_clock;
using util::ExitCode;

constexpr size_t kWriteChunk = 16 * 1024;  // bytes per SFTP write request

std::string sftp_status(int code) {
  switch (code) {
    case SSH_FX_OK:
      return "ok";
    case SSH_FX_EOF:
      return "end of file";
    case SSH_FX_NO_SUCH_FILE:
      return "no such file or directory (does the directory exist?)";
    case SSH_FX_PERMISSION_DENIED:
      return "permission denied";
    case SSH_FX_FAILURE:
      // SFTP v3's catch-all: OpenSSH's sftp-server sends it for every errno it has no status
      // for (EEXIST, ENOSPC, EISDIR, EBUSY ...); what the target is now is said beside it.
      return "failure (SSH_FX_FAILURE: the server gives no errno)";
    case SSH_FX_BAD_MESSAGE:
      return "bad message";
    case SSH_FX_NO_CONNECTION:
      return "no connection";
    case SSH_FX_CONNECTION_LOST:
      return "connection lost";
    case SSH_FX_OP_UNSUPPORTED:
      return "operation not supported by the server";
    case SSH_FX_FILE_ALREADY_EXISTS:
      return "file already exists";
    case SSH_FX_WRITE_PROTECT:
      return "read-only file system";
    case SSH_FX_NO_MEDIA:
      return "no media";
    default:
      return fmt::format("SFTP status {}", code);
  }
}

// Owns an SFTP session; restores the SSH session's round-trip timeout when done.
struct SftpGuard {
  SftpGuard(ssh_session s, std::chrono::milliseconds restore_to) : ssh(s), restore(restore_to) {}
  SftpGuard(const SftpGuard&) = delete;
  SftpGuard& operator=(const SftpGuard&) = delete;
  ~SftpGuard() { release(); }
  // Frees the SFTP session; with `session_gone`, the SSH session is about to be freed too.
  void release(bool session_gone = false) {
    if (sftp != nullptr) sftp_free(sftp);
    sftp = nullptr;
    if (ssh != nullptr && !session_gone) set_round_trip_timeout(ssh, restore);
    ssh = nullptr;
  }

  ssh_session ssh;
  std::chrono::milliseconds restore;
  sftp_session sftp = nullptr;
};

// What `path` is on the host now, for a message: "a directory", "a regular file of 12 bytes",
// "missing".
std::string describe_remote(sftp_session sftp, const std::string& path) {
  sftp_attributes a = sftp_lstat(sftp, path.c_str());
  if (a == nullptr) return "missing";
  std::string what;
  switch (a->type) {
    case SSH_FILEXFER_TYPE_REGULAR:
      what = fmt::format("a regular file of {} bytes", a->size);
      break;
    case SSH_FILEXFER_TYPE_DIRECTORY:
      what = "a directory";
      break;
    case SSH_FILEXFER_TYPE_SYMLINK:
      what = "a symbolic link";
      break;
    default:
      what = "a special file";
  }
  sftp_attributes_free(a);
  return what;
}

// Whether `path` on the host is a regular file holding exactly `content` with permission
// bits `mode`: what another upload of the same file to the same path (a host sharing this
// file system: a lab's hosts share this machine's) left there.
bool holds(sftp_session sftp, const std::string& path, std::string_view content, unsigned mode) {
  sftp_attributes a = sftp_lstat(sftp, path.c_str());
  if (a == nullptr) return false;
  const bool same_kind = a->type == SSH_FILEXFER_TYPE_REGULAR && a->size == content.size() &&
                         (a->permissions & 07777) == mode;
  sftp_attributes_free(a);
  if (!same_kind) return false;
  sftp_file f = sftp_open(sftp, path.c_str(), O_RDONLY, 0);
  if (f == nullptr) return false;
  std::array<char, kWriteChunk> buf{};
  bool same = true;
  std::string_view left = content;
  while (same) {
    ssize_t n = sftp_read(f, buf.data(), buf.size());
    if (n < 0) same = false;
    if (n <= 0) break;
    const auto got = static_cast<size_t>(n);
    same = got <= left.size() && left.substr(0, got) == std::string_view(buf.data(), got);
    if (same) left.remove_prefix(got);
  }
  sftp_close(f);
  return same && left.empty();
}

// The directory `dir` of the host, over SFTP, for remove_stale_upload_temps.
TempDirectory sftp_temp_directory(sftp_session sftp, const std::string& dir) {
  const std::string prefix = dir == "/" ? "/" : dir + "/";
  TempDirectory d;
  d.mode = [sftp, dir]() -> std::optional<unsigned> {
    sftp_attributes a = sftp_stat(sftp, dir.c_str());
    if (a == nullptr) return std::nullopt;
    const unsigned perm = a->permissions & 07777;
    sftp_attributes_free(a);
    return perm;
  };
  d.names = [sftp, dir](const std::string& start, Clock::time_point deadline) {
    std::vector<std::string> names;
    sftp_dir listing = sftp_opendir(sftp, dir.c_str());
    if (listing == nullptr) return names;
    while (Clock::now() < deadline) {
      sftp_attributes a = sftp_readdir(sftp, listing);
      if (a == nullptr) break;
      if (a->name != nullptr && std::string_view(a->name).starts_with(start)) {
        names.emplace_back(a->name);
      }
      sftp_attributes_free(a);
    }
    sftp_closedir(listing);
    return names;
  };
  d.lstat = [sftp, prefix](const std::string& name) -> std::optional<TempEntry> {
    sftp_attributes a = sftp_lstat(sftp, (prefix + name).c_str());
    if (a == nullptr) return std::nullopt;
    TempEntry e;
    e.name = name;
    e.regular = a->type == SSH_FILEXFER_TYPE_REGULAR;
    e.uid = a->uid;
    e.mtime = static_cast<std::int64_t>(a->mtime);
    sftp_attributes_free(a);
    return e;
  };
  d.remove = [sftp, prefix](const std::string& name) {
    sftp_unlink(sftp, (prefix + name).c_str());
  };
  return d;
}

}  // namespace

util::Status SshExecutor::upload(const std::filesystem::path& local, const std::string& remote_path,
                                 unsigned mode, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto content = util::read_file(local, kMaxUploadBytes);
  if (!content) return content.error();
  if (remote_path.empty()) {
    return util::error(ExitCode::kUsage,
                       fmt::format("{}: upload of {} needs a remote path", host_, local.string()));
  }
  if (!session_ || ssh_is_connected(session_->ssh) == 0) {
    disconnect(/*broken=*/true);
    if (auto st = connect(); !st) return st;
  }
  ssh_session s = session_->ssh;
  ssh_set_blocking(s, 1);
  set_round_trip_timeout(s, timeout);
  SftpGuard guard(s, options_.connect_timeout);

  const std::string what =
      fmt::format("{}: upload of {} to {}", host_, local.string(), remote_path);
  auto broken = [&](std::string_view step) {
    util::Error e = util::error(ExitCode::kUnreachable,
                                fmt::format("{} failed ({}): {}", what, step, ssh_get_error(s)));
    ssh_set_blocking(s, 0);  // nothing more to wait for on a broken connection
    guard.release(/*session_gone=*/true);
    disconnect(/*broken=*/true);
    return e;
  };

  guard.sftp = sftp_new(s);
  if (guard.sftp == nullptr) return broken("starting SFTP");
  if (sftp_init(guard.sftp) != SSH_OK) {
    int code = sftp_get_error(guard.sftp);
    if (ssh_is_connected(s) == 0) return broken("starting SFTP");
    return util::error(ExitCode::kUsage,
                       fmt::format("{} failed: the SFTP subsystem did not start ({}); enable "
                                   "'Subsystem sftp' in the host's sshd_config",
                                   what, code != 0 ? sftp_status(code) : ssh_get_error(s)));
  }
  sftp_session sftp = guard.sftp;
  const size_t slash = remote_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : remote_path.substr(0, slash);
  const std::string dest_name =
      slash == std::string::npos ? remote_path : remote_path.substr(slash + 1);
  const std::string tmp_name = upload_temp_name(dest_name);
  const std::string tmp =
      remote_path.substr(0, slash == std::string::npos ? 0 : slash + 1) + tmp_name;
  // Until this upload ends, its temporary is a live one (upload_writer_alive): another upload
  // of this process to the same path leaves it.
  const UploadInFlight in_flight(tmp_name);

  auto remote_error = [&](std::string_view step) {
    int code = sftp_get_error(sftp);
    sftp_unlink(sftp, tmp.c_str());
    // SFTP v3 has no "disk full" status: OpenSSH's sftp-server answers ENOSPC with
    // SSH_FX_FAILURE, and a write that fails may leave no status at all (SSH_FX_OK). Either way
    // the host, not the input, is at fault: exit 3, as for a host that cannot be set up.
    if (step == "writing" && (code == SSH_FX_OK || code == SSH_FX_FAILURE)) {
      return util::error(ExitCode::kUnreachable,
                         fmt::format("{} failed (writing {}): no space left on device? the host "
                                     "refused the data: check `df` on {}",
                                     what, tmp, host_));
    }
    return util::error(ExitCode::kUnreachable,
                       fmt::format("{} failed ({} {}): {}", what, step, tmp, sftp_status(code)));
  };

  sftp_file file = sftp_open(sftp, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (file == nullptr) {
    if (ssh_is_connected(s) == 0) return broken("opening");
    int code = sftp_get_error(sftp);
    return util::error(ExitCode::kUsage,
                       fmt::format("{} failed (creating {}): {}", what, tmp, sftp_status(code)));
  }
  remove_stale_upload_temps(sftp_temp_directory(sftp, dir), dest_name, tmp_name, deadline);
  std::string_view left = *content;
  while (!left.empty()) {
    if (util::interrupted() || Clock::now() >= deadline) {
      sftp_close(file);
      sftp_unlink(sftp, tmp.c_str());
      if (util::interrupted()) {
        return util::error(ExitCode::kInterrupted,
                           fmt::format("{}: {}", what, util::interruption()));
      }
      return util::error(
          ExitCode::kUnreachable,
          fmt::format("{} timed out after {} ms with {} of {} bytes sent", what, timeout.count(),
                      content->size() - left.size(), content->size()));
    }
    ssize_t n = sftp_write(file, left.data(), std::min(left.size(), kWriteChunk));
    if (n <= 0) {
      sftp_close(file);
      if (ssh_is_connected(s) == 0) return broken("writing");
      return remote_error("writing");
    }
    left.remove_prefix(static_cast<size_t>(n));
  }
  if (sftp_close(file) != SSH_OK) return remote_error("closing");
  // The mode is set explicitly: the one given to open is filtered by the server's umask.
  if (sftp_chmod(sftp, tmp.c_str(), static_cast<mode_t>(mode)) != SSH_OK) {
    return remote_error("setting the mode of");
  }
  // SFTP v3's rename (libssh 0.10 has no posix-rename) does not replace an existing file
  // (OpenSSH's server links the new name): the target is removed first. Hosts that share a
  // file system (a lab's hosts share this machine's; NFS homes) upload the same file to the
  // same path at once, and another host's upload may land between the removal and the
  // rename: a target that now holds exactly what this upload holds is this upload done.
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (sftp_rename(sftp, tmp.c_str(), remote_path.c_str()) == SSH_OK) return {};
    if (holds(sftp, remote_path, *content, mode)) {
      sftp_unlink(sftp, tmp.c_str());
      return {};
    }
    if (ssh_is_connected(s) == 0) return broken("renaming into place");
    sftp_unlink(sftp, remote_path.c_str());
  }
  // A host, not the input, is at fault (the job file's path was fine to create a file
  // beside): exit 3, as for a host that cannot be set up.
  int code = sftp_get_error(sftp);
  const std::string now = describe_remote(sftp, remote_path);
  sftp_unlink(sftp, tmp.c_str());
  return util::error(
      ExitCode::kUnreachable,
      fmt::format("{} failed (renaming {} into place): {}; {} is {} now{}", what, tmp,
                  sftp_status(code), remote_path, now,
                  now == "missing" || now.starts_with("a regular file")
                      ? " (another upload to the same path, from a host sharing this file "
                        "system, in between?)"
                      : ": it is not replaced; remove it or choose another `dest:`"));
}

}  // namespace cc::remote
