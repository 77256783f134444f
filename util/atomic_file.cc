#include "util/atomic_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "util/suggest.h"
#include "util/text.h"

namespace cc::util {
namespace {

// A write through a FIFO or a terminal waits at most this long for the reader to make room.
constexpr int kWriteThroughTimeoutMs = 30'000;

Error os_error(const std::filesystem::path& path, std::string_view what, int err) {
  return error(ExitCode::kUsage,
               fmt::format("{}: cannot {}: {}", path.string(), what, std::strerror(err)));
}

// "a FIFO", "a directory", ... for messages.
std::string_view kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// Closes a descriptor and unlinks the temporary file unless released.
class TempFile {
 public:
  TempFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  int close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void release() { path_.clear(); }

 private:
  int fd_;
  std::string path_;
};

// Writes all of `content` to `fd`; a non-blocking descriptor that stays full for
// kWriteThroughTimeoutMs is an error (ETIMEDOUT).
int write_all(int fd, std::string_view content) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pfd{fd, POLLOUT, 0};
      int rc = ::poll(&pfd, 1, kWriteThroughTimeoutMs);
      if (rc == 0) return ETIMEDOUT;
      if (rc < 0 && errno != EINTR) return errno;
      continue;
    }
    if (n < 0) return errno;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

// A character device or FIFO: written through, never replaced.
Status write_through(const std::filesystem::path& path, std::string_view content, mode_t kind) {
  int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 && errno == ENXIO && S_ISFIFO(kind)) {
    return error(ExitCode::kUsage,
                 fmt::format("{}: is a FIFO with no reader: start the reader first, or give a "
                             "regular file",
                             path.string()));
  }
  if (fd < 0) return os_error(path, "open for writing", errno);
  UniqueFd owner(fd);
  if (int err = write_all(fd, content); err != 0) return os_error(path, "write", err);
  return {};
}

// The temporary file beside `path` (in `dir`) that write_replacing writes, then renames, as
// mkstemp's template; a long name is cut so that it fits kNameMax.
std::string temp_template(const std::filesystem::path& path, const std::filesystem::path& dir) {
  constexpr std::string_view kDot = ".", kSuffix = ".tmp.XXXXXX";
  const std::string name = path.filename().string();
  return (dir / fmt::format("{}{}{}", kDot,
                            utf8_prefix(name, kNameMax - kDot.size() - kSuffix.size()), kSuffix))
      .string();
}

// A file cannot be created in `dir`, the directory of `path`: the whole sentence, for every
// writer (write_file_atomic) and for the check before any work (check_output_path).
Error temp_file_error(const std::filesystem::path& path, const std::filesystem::path& dir,
                      int err) {
  return error(ExitCode::kUsage,
               fmt::format("{}: cannot create a file in its directory {}: {}; nothing was "
                           "written: give a path in a directory you can write",
                           path.string(), dir.string(), std::strerror(err)));
}

// Whether a file can be created in `dir`, by creating one (and removing it): access(2) says
// yes to root on a read-only mount or in /sys.
Status try_create_in(const std::filesystem::path& path, const std::filesystem::path& dir) {
  std::string tmpl = temp_template(path, dir);
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return temp_file_error(path, dir, errno);
  ::close(fd);
  ::unlink(tmpl.c_str());
  return {};
}

Status write_replacing(const std::filesystem::path& path, std::string_view content,
                       unsigned mode, const TempNaming& naming) {
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return os_error(dir, "create directory", ec.value());
    ::chmod(dir.c_str(), 0700);
  }
  std::string tmpl;
  int fd = -1;
  if (naming.name) {
    tmpl = (dir / naming.name(path.filename().string())).string();
    fd = ::open(tmpl.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  } else {
    tmpl = temp_template(path, dir);
    fd = ::mkstemp(tmpl.data());
  }
  if (fd < 0) return temp_file_error(path, dir, errno);
  TempFile tmp(fd, tmpl);
  if (naming.created) naming.created(tmpl, path);
  if (int err = write_all(tmp.fd(), content); err != 0) return os_error(path, "write", err);
  if (::fchmod(tmp.fd(), static_cast<mode_t>(mode)) != 0) return os_error(path, "chmod", errno);
  if (::fsync(tmp.fd()) != 0) return os_error(path, "fsync", errno);
  if (tmp.close() != 0) return os_error(path, "close", errno);
  if (::rename(tmpl.c_str(), path.c_str()) != 0) return os_error(path, "rename into place", errno);
  tmp.release();
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

Status check_private(const std::filesystem::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return os_error(p, "inspect", errno);
  if (!S_ISDIR(st.st_mode)) {
    return error(ExitCode::kUsage,
                 fmt::format("{}: is {}, not a directory: it holds clusterctl's private state; "
                             "move it away",
                             p.string(), kind_of(st.st_mode)));
  }
  const unsigned perm = st.st_mode & 07777;
  if (st.st_uid != ::geteuid() || (perm & 022) != 0) {
    return error(ExitCode::kUsage,
                 fmt::format("{}: owned by uid {} with mode {:04o}; clusterctl keeps private "
                             "state there and needs it owned by you (uid {}) and writable by "
                             "no one else: `chmod go-w {}` if it is yours, else set "
                             "XDG_STATE_HOME to a directory of your own",
                             p.string(), st.st_uid, perm, ::geteuid(), p.string()));
  }
  return {};
}

// What is at an existing `path` (lstat gave `lst`), following a link: `st` gets the final
// target's status. An error for what the write policy refuses (a dangling link, a directory, a
// block device, a socket).
Status writable_kind(const std::filesystem::path& path, const struct stat& lst,
                     struct stat& st) {
  st = lst;
  if (S_ISLNK(lst.st_mode) && ::stat(path.c_str(), &st) != 0) {
    return error(ExitCode::kUsage,
                 fmt::format("{}: is a symbolic link to a missing file: refusing to create "
                             "its target; remove the link or give another path",
                             path.string()));
  }
  if (S_ISREG(st.st_mode) || S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return {};
  return error(ExitCode::kUsage,
               fmt::format("{}: is {}: refusing to write there; give the path of a file",
                           path.string(), kind_of(st.st_mode)));
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

Status write_file_atomic(const std::filesystem::path& path, std::string_view content,
                         unsigned mode, const TempNaming& naming) {
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) != 0) {
    if (errno != ENOENT) return os_error(path, "inspect", errno);
    return write_replacing(path, content, mode, naming);
  }
  struct stat st {};
  if (auto ok = writable_kind(path, lst, st); !ok) return ok;
  if (S_ISREG(st.st_mode)) {
    std::filesystem::path target = path;
    if (S_ISLNK(lst.st_mode)) {
      std::error_code ec;
      target = std::filesystem::canonical(path, ec);
      if (ec) return os_error(path, "resolve the symbolic link", ec.value());
    }
    return write_replacing(target, content, mode, naming);
  }
  return write_through(path, content, st.st_mode);
}

Status check_output_path(const std::filesystem::path& path,
                         const std::vector<std::filesystem::path>& inputs) {
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0) {
    struct stat st {};
    if (auto ok = writable_kind(path, lst, st); !ok) return ok;
    for (const auto& in : inputs) {
      struct stat ist {};
      if (in.empty() || ::stat(in.c_str(), &ist) != 0) continue;
      if (ist.st_dev == st.st_dev && ist.st_ino == st.st_ino) {
        return error(ExitCode::kUsage,
                     fmt::format("{}: is the same file as the input {}: writing it would "
                                 "replace what this command reads; nothing was written: give "
                                 "another output path",
                                 path.string(), in.string()));
      }
    }
    if (!S_ISREG(st.st_mode)) return {};  // a device or a FIFO is written through
    // A regular file is replaced by one made beside it (beside a link's target).
    std::error_code ec;
    const std::filesystem::path target =
        S_ISLNK(lst.st_mode) ? std::filesystem::canonical(path, ec) : path;
    if (ec) return os_error(path, "resolve the symbolic link", ec.value());
    return try_create_in(path, target.parent_path().empty() ? "." : target.parent_path());
  }
  if (errno != ENOENT && errno != ENOTDIR) return os_error(path, "inspect", errno);
  const std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return error(ExitCode::kUsage,
                   fmt::format("{}: the directory {} does not exist: check the path for a "
                               "typo, or create it first (mkdir -p {})",
                               path.string(), dir.string(), dir.string()));
    }
    return os_error(dir, "inspect", errno);
  }
  if (!S_ISDIR(dst.st_mode)) {
    return error(ExitCode::kUsage, fmt::format("{}: {} is {}, not a directory", path.string(),
                                               dir.string(), kind_of(dst.st_mode)));
  }
  return try_create_in(path, dir);
}

Status check_output_path(const std::filesystem::path& path,
                         const std::vector<std::filesystem::path>& inputs, const OwnOutput& own,
                         bool force) {
  if (auto st = check_output_path(path, inputs); !st) return st;
  std::error_code ec;
  if (force || !std::filesystem::is_regular_file(path, ec)) return {};  // new, or written through
  auto text = read_file(path);
  // What cannot be read whole (too large, unreadable) is no output of ours either.
  if (text && (text->empty() || own.is_one(*text))) return {};
  return error(ExitCode::kUsage,
               fmt::format("{}: exists and is not {}: nothing was written: give another path, "
                           "or add --force to replace it",
                           path.string(), own.what));
}

Status check_output_directory(const std::filesystem::path& dir) {
  // "bundle/" names the directory "bundle": its parent is the one that must exist.
  const std::filesystem::path path = dir.has_filename() ? dir : dir.parent_path();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return error(ExitCode::kUsage, fmt::format("{}: exists and is {}, not a directory: give "
                                                 "the path of a new or empty directory",
                                                 dir.string(), kind_of(st.st_mode)));
    }
    std::error_code ec;
    if (!std::filesystem::is_empty(path, ec)) {
      return error(ExitCode::kUsage, fmt::format("{}: exists and is not empty: give a new or "
                                                 "empty directory, so that it holds only this "
                                                 "run's outputs",
                                                 dir.string()));
    }
    return {};
  }
  if (errno != ENOENT && errno != ENOTDIR) return os_error(dir, "inspect", errno);
  return check_output_path(path);  // a new directory: its parent must exist and be writable
}

Status write_output_file(const std::filesystem::path& path, std::string_view content,
                         unsigned mode) {
  if (auto ok = check_output_path(path); !ok) return ok;
  return write_file_atomic(path, content, mode);
}

Result<UniqueFd> open_regular_file(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  int fd = ::open(path.c_str(), O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {  // a typo, most likely: name the file of a close name
    return error(ExitCode::kUsage, fmt::format("{}: cannot read: {}{}", path.string(),
                                               std::strerror(ENOENT), did_you_mean_file(path)));
  }
  if (fd < 0) return os_error(path, "read", errno);
  UniqueFd owner(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return os_error(path, "read", errno);
  if (!S_ISREG(st.st_mode)) {
    return error(ExitCode::kUsage,
                 fmt::format("{}: is {}, not a regular file: give the path of a file",
                             path.string(), kind_of(st.st_mode)));
  }
  return owner;
}

Result<std::string> read_file(const std::filesystem::path& path, std::uintmax_t max_bytes) {
  auto owner = open_regular_file(path);
  if (!owner) return owner.error();
  const int fd = owner->get();
  struct stat st {};
  if (::fstat(fd, &st) != 0) return os_error(path, "read", errno);
  const auto too_big = [&](std::uintmax_t size) {
    return error(ExitCode::kUsage,
                 fmt::format("{}: is {} bytes, more than the {} bytes clusterctl reads from one "
                             "file: is it the right file?",
                             path.string(), size, max_bytes));
  };
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes) {
    return too_big(static_cast<std::uintmax_t>(st.st_size));
  }
  std::string out;
  try {
    out.resize(static_cast<size_t>(st.st_size));
  } catch (const std::bad_alloc&) {
    return error(ExitCode::kUsage, fmt::format("{}: is {} bytes, more than this machine's free "
                                               "memory can hold",
                                               path.string(), st.st_size));
  }
  size_t got = 0;
  char extra[4096];
  for (;;) {
    char* into = got < out.size() ? out.data() + got : extra;
    size_t room = got < out.size() ? out.size() - got : sizeof extra;
    ssize_t n = ::read(fd, into, room);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return os_error(path, "read", errno);
    if (n == 0) break;
    if (into == extra) {  // the file grew while being read
      if (out.size() + static_cast<size_t>(n) > max_bytes) return too_big(out.size() + static_cast<size_t>(n));
      out.append(extra, static_cast<size_t>(n));
      got = out.size();
    } else {
      got += static_cast<size_t>(n);
    }
  }
  out.resize(got);
  return out;
}

Result<UniqueFd> create_new_file(const std::filesystem::path& path, unsigned mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
                  static_cast<mode_t>(mode));
  if (fd < 0 && errno == EEXIST) {
    return error(ExitCode::kUsage,
                 fmt::format("{}: already exists: refusing to overwrite or follow it",
                             path.string()));
  }
  if (fd < 0) return os_error(path, "create", errno);
  return UniqueFd(fd);
}

Status create_private_dir(const std::filesystem::path& path) {
  if (::mkdir(path.c_str(), 0700) != 0) {
    if (errno == EEXIST) {
      return error(ExitCode::kUsage,
                   fmt::format("{}: already exists: refusing to reuse it", path.string()));
    }
    return os_error(path, "create directory", errno);
  }
  return {};
}

Status ensure_private_dir(const std::filesystem::path& path, const std::filesystem::path& home) {
  const std::filesystem::path dir = path.lexically_normal();
  std::vector<std::filesystem::path> missing;
  for (std::filesystem::path p = dir; !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0) break;
    if (errno != ENOENT) return os_error(p, "inspect", errno);
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST) {
      return os_error(*it, "create directory", errno);
    }
  }
  if (auto st = check_private(dir); !st) return st;
  const std::filesystem::path h = home.lexically_normal();
  if (h.empty() || h == "/") return {};
  // Each parent strictly below `home`: a writable one would let another user swap the path.
  auto [hi, di] = std::mismatch(h.begin(), h.end(), dir.begin(), dir.end());
  if (hi != h.end()) return {};  // not under home
  std::filesystem::path p = h;
  for (auto it = di; it != dir.end(); ++it) {
    p /= *it;
    if (p == dir) break;
    if (auto st = check_private(p); !st) return st;
  }
  return {};
}

std::string random_hex(size_t bytes) {
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("/dev/urandom: {}", std::strerror(errno)));
  UniqueFd owner(fd);
  std::string raw(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::read(fd, raw.data() + got, bytes - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("/dev/urandom: short read");
    got += static_cast<size_t>(n);
  }
  std::string out;
  out.reserve(bytes * 2);
  for (char c : raw) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

}  // namespace cc::util
