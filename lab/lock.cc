#include "lab/lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "lab/files.h"
#include "util/interrupt.h"

namespace cc::lab {
namespace {

using namespace std::chrono_literals;
using util::ExitCode;

constexpr auto kPoll = 50ms;
constexpr std::uintmax_t kMaxProcLocks = 4u << 20;  // a line is about 50 bytes

util::Error os_error(const fs::path& p, std::string_view what, int err) {
  return util::error(ExitCode::kUsage, fmt::format("{}: cannot {} the lab's lock file: {}",
                                                   p.string(), what, std::strerror(err)));
}

// `dir` must be a real directory (lstat: not a symbolic link), owned by this user, that no one
// else may write: else another user could swap the lock file.
util::Status check_lock_dir(const fs::path& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return os_error(dir, "use the directory of", errno);
  const unsigned perm = st.st_mode & 07777;
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (perm & 022) != 0) {
    return util::error(
        ExitCode::kUsage,
        fmt::format("{}: {} owned by uid {} with mode {:04o}; the labs' lock files live there, "
                    "so it must be a directory owned by uid {} that no one else may write: "
                    "remove it (nothing of a lab is in it while no lab runs) and try again",
                    dir.string(), S_ISDIR(st.st_mode) ? "a directory" : "not a directory",
                    st.st_uid, perm, ::geteuid()));
  }
  return {};
}

// Creates `dir` and its parent when missing (mode 0755: `lab status` of other users looks
// there), then checks both.
util::Status ensure_lock_dir(const fs::path& dir) {
  for (const fs::path& d : {dir.parent_path(), dir}) {
    if (::mkdir(d.c_str(), 0755) == 0) {
      ::chmod(d.c_str(), 0755);  // whatever the umask
    } else if (errno != EEXIST) {
      return os_error(d, "create", errno);
    }
  }
  if (auto s = check_lock_dir(dir.parent_path()); !s) return s;
  return check_lock_dir(dir);
}

// The operation its holder wrote in the lock file ("up", "down"); "" when unreadable.
std::string holder_operation(int fd) {
  char buf[16] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string op(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!op.empty() && (op.back() == '\n' || op.back() == ' ')) op.pop_back();
  return op;
}

// Who holds the lock of `fd` (stat `st`): "lab 'X' is being created by another clusterctl
// (pid N)", the state that is ("creating") and the pid.
LockHolder holder_of(int fd, const struct stat& st, std::string_view lab, const fs::path& path) {
  const std::string op = holder_operation(fd);
  LockHolder h;
  h.state = op == "up" ? "creating" : op == "down" ? "removing" : "changing";
  const char* doing = op == "up"     ? "is being created"
                      : op == "down" ? "is being removed"
                                     : "is being changed";
  if (auto text = util::read_file("/proc/locks", kMaxProcLocks)) {
    h.pid = flock_holder(*text, major(st.st_dev), minor(st.st_dev), st.st_ino);
  }
  h.message = fmt::format(
      "lab '{}' {} by another clusterctl ({})", lab, doing,
      h.pid ? fmt::format("pid {}", *h.pid) : fmt::format("which holds {}", path.string()));
  return h;
}

std::string describe_holder(int fd, const struct stat& st, std::string_view lab,
                            const fs::path& path) {
  return holder_of(fd, st, lab, path).message;
}

template <class T>
bool parse_number(std::string_view s, T& out, int base = 10) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

fs::path lock_path(std::string_view name) {
  fs::path run = runtime_dir(name);
  return run.parent_path() / (std::string(name) + ".lock");
}

void LabLock::remove_file() {
  if (!held()) return;
  struct stat mine {};
  struct stat there {};
  if (::fstat(fd_.get(), &mine) == 0 && ::lstat(path_.c_str(), &there) == 0 &&
      mine.st_dev == there.st_dev && mine.st_ino == there.st_ino) {
    ::unlink(path_.c_str());
  }
  ::rmdir(path_.parent_path().c_str());                // when empty
  ::rmdir(path_.parent_path().parent_path().c_str());  // when empty
}

std::optional<int> flock_holder(std::string_view proc_locks, unsigned dev_major, unsigned dev_minor,
                                unsigned long ino) {
  std::istringstream in{std::string(proc_locks)};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    // "N:" FLOCK ADVISORY WRITE PID MAJ:MIN:INO START END
    if (w.size() < 6 || w[1] != "FLOCK") continue;
    const std::string_view id(w[5]);
    const auto c1 = id.find(':');
    const auto c2 = c1 == std::string_view::npos ? c1 : id.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    int pid = 0;
    unsigned ma = 0, mi = 0;
    unsigned long in_no = 0;
    if (parse_number(w[4], pid) && parse_number(id.substr(0, c1), ma, 16) &&
        parse_number(id.substr(c1 + 1, c2 - c1 - 1), mi, 16) &&
        parse_number(id.substr(c2 + 1), in_no) && ma == dev_major && mi == dev_minor &&
        in_no == ino) {
      return pid;
    }
  }
  return std::nullopt;
}

std::optional<LockHolder> lock_holder(const fs::path& path, std::string_view lab) {
  const int raw = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  if (raw < 0) return std::nullopt;
  util::UniqueFd fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  // Read from /proc/locks, not by trying the lock: even a moment's shared lock here would make
  // a `lab up` starting then wait, and name this process.
  auto text = util::read_file("/proc/locks", kMaxProcLocks);
  if (!text || !flock_holder(*text, major(st.st_dev), minor(st.st_dev), st.st_ino)) {
    return std::nullopt;
  }
  return holder_of(fd.get(), st, lab, path);
}

util::Result<LabLock> acquire_lock(const fs::path& path, std::string_view lab,
                                   std::string_view operation, std::chrono::milliseconds wait,
                                   const Progress& note) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  bool noted = false;
  for (;;) {
    if (auto s = ensure_lock_dir(path.parent_path()); !s) return s.error();
    const int raw = ::open(path.c_str(),
                           O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_NONBLOCK, 0600);
    if (raw < 0 && errno == ENOENT && std::chrono::steady_clock::now() < deadline) {
      continue;  // its directory was removed meanwhile (remove_file): make it again
    }
    if (raw < 0 && errno == ELOOP) {
      return util::error(ExitCode::kUsage,
                         fmt::format("{}: is a symbolic link, not the lab's lock file: remove it "
                                     "and try again",
                                     path.string()));
    }
    if (raw < 0) return os_error(path, "open", errno);
    util::UniqueFd fd(raw);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return os_error(path, "inspect", errno);
    if (!S_ISREG(st.st_mode)) {
      return util::error(ExitCode::kUsage,
                         fmt::format("{}: is not a regular file, not the lab's lock file: remove "
                                     "it and try again",
                                     path.string()));
    }
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
      // `lab down` removes the file while holding it: the lock counts only while the path
      // still names the file that was locked.
      struct stat now {};
      if (::lstat(path.c_str(), &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
        if (std::chrono::steady_clock::now() >= deadline) {
          return util::error(
              ExitCode::kUsage,
              fmt::format("{}: the lab's lock file was removed or replaced each "
                          "time it was taken, for {:g} s: try again",
                          path.string(), std::chrono::duration<double>(wait).count()));
        }
        continue;  // closes it, and so unlocks it: start over on the file there now
      }
      const std::string text = std::string(operation) + "\n";
      if (::ftruncate(fd.get(), 0) != 0 ||
          ::pwrite(fd.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
        return os_error(path, "write", errno);
      }
      return LabLock(std::move(fd), path);
    }
    if (errno != EWOULDBLOCK && errno != EINTR) return os_error(path, "lock", errno);
    const std::string who = describe_holder(fd.get(), st, lab, path);
    if (!noted && note) note(fmt::format("waiting: {}", who));
    noted = true;
    if (util::interrupted()) {
      return util::error(
          ExitCode::kInterrupted,
          fmt::format("{} while waiting: {}; nothing was changed", util::interruption(), who));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return util::error(
          ExitCode::kUsage,
          fmt::format("{}, still after {:g} s; nothing was changed: let it finish, then try "
                      "again (`clusterctl lab status --name {}` shows the lab)",
                      who, std::chrono::duration<double>(wait).count(), lab));
    }
    std::this_thread::sleep_for(kPoll);
  }
}

}  // namespace cc::lab
