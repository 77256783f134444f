#include "push/target.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#ifdef __APPLE__
#include <sys/sysctl.h>
#endif

#include "push/hash.h"

namespace cc::push {
namespace {

std::string errno_text(int e) { return std::strerror(e); }

// For futimens/utimensat: the access time left alone, the entry's mtime.
std::array<struct timespec, 2> entry_times(const Entry& e) {
  return {{{0, UTIME_OMIT},
           {static_cast<time_t>(e.mtime_ns / 1'000'000'000),
            static_cast<long>(e.mtime_ns % 1'000'000'000)}}};
}

// Splits "a/b/c" into {"a", "b"} and "c".
std::vector<std::string> components(const std::string& rel, std::string& leaf) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t slash = rel.find('/', start);
    if (slash == std::string::npos) {
      leaf = rel.substr(start);
      return parts;
    }
    parts.push_back(rel.substr(start, slash - start));
    start = slash + 1;
  }
}

// The nearest existing ancestor of `path` (itself when it exists).
std::string existing_ancestor(std::string path) {
  struct stat st {};
  while (::stat(path.c_str(), &st) != 0) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    path.resize(slash);
  }
  return path;
}

// This boot of this host: two processes that share it share the kernel and its mounts.
std::string boot_identity() {
#ifdef __APPLE__
  char buf[128] = {};
  size_t len = sizeof buf - 1;
  if (::sysctlbyname("kern.bootsessionuuid", buf, &len, nullptr, 0) == 0) return buf;
#else
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (std::getline(in, id) && !id.empty()) return id;
#endif
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string("host:") + host;
}

std::string hex16(std::uint64_t v) {
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(v));
  return out;
}

// ".ccpush-P-": the part names of every version of entry path `path`.
std::string part_prefix(const std::string& path) {
  return ".ccpush-" + hex16(chunk_hash(path.data(), path.size())) + "-";
}

void check_root(const std::string& dest, TargetPlan& p) {
  struct stat st {};
  const std::string at = existing_ancestor(dest);
  const bool found = ::stat(at.c_str(), &st) == 0;
  if (found) {
    p.identity = boot_identity() + ":" + std::to_string(st.st_dev) + ":" +
                 std::to_string(st.st_ino) + ":" + dest.substr(at.size());
  }
  if (!found || !S_ISDIR(st.st_mode)) {
    p.errors.push_back(at + ": not a directory" +
                       (at == dest ? std::string() : " (it would hold " + dest + ")") +
                       ": give a directory with --dest");
    return;
  }
  if (::access(at.c_str(), W_OK | X_OK) != 0) {
    p.errors.push_back(at + ": not writable (" + errno_text(errno) +
                       "): give a directory you can write with --dest");
  }
  struct statvfs vf {};
  if (::statvfs(at.c_str(), &vf) == 0) {
    p.free_bytes = static_cast<std::uint64_t>(vf.f_bavail) * vf.f_frsize;
  }
}

std::string kind_at(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISREG(m)) return "a file";
  return "a special file (FIFO, socket or device)";
}

}  // namespace

std::string part_name(const Entry& e) {
  const std::string version = std::to_string(e.size) + '\0' + std::to_string(e.mtime_ns);
  return part_prefix(e.path) + hex16(chunk_hash(version.data(), version.size())) + ".part";
}

bool same_mtime(std::int64_t have_ns, std::int64_t want_ns) {
  constexpr std::int64_t kSecond = 1'000'000'000;
  if (have_ns == want_ns) return true;
  const auto floor_div = [](std::int64_t a) { return a / kSecond - (a % kSecond < 0 ? 1 : 0); };
  return have_ns % kSecond == 0 && floor_div(have_ns) == floor_div(want_ns);
}

bool goes_to(const Entry& e, int rank) {
  return e.to.empty() || std::find(e.to.begin(), e.to.end(), rank) != e.to.end();
}

TargetPlan examine(const std::string& dest, const Manifest& m, bool checksum, std::uint64_t chunk,
                   int rank) {
  TargetPlan p;
  check_root(dest, p);
  if (!p.errors.empty()) return p;
  const std::string root = dest;
  for (std::size_t i = 0; i < m.entries.size(); ++i) {
    const Entry& e = m.entries[i];
    if (!goes_to(e, rank)) continue;
    const std::string path = root + "/" + e.path;
    struct stat st {};
    const bool exists = ::lstat(path.c_str(), &st) == 0;
    if (!exists && errno != ENOENT && errno != ENOTDIR) {
      p.errors.push_back(path + ": " + errno_text(errno));
      continue;
    }
    const bool special = exists && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode) && !S_ISREG(st.st_mode);
    if (special) {
      p.errors.push_back(path + ": " + kind_at(st.st_mode) +
                         ", which push never replaces: remove it or push elsewhere");
      continue;
    }
    if (e.kind == EntryKind::kDirectory) {
      if (exists && !S_ISDIR(st.st_mode)) {
        p.errors.push_back(path + ": " + kind_at(st.st_mode) +
                           ", and the source has a directory there: remove it or push elsewhere");
      }
      continue;
    }
    if (exists && S_ISDIR(st.st_mode)) {
      p.errors.push_back(path + ": a directory, and the source has " +
                         (e.kind == EntryKind::kFile ? "a file" : "a symbolic link") +
                         " there: remove it or push elsewhere");
      continue;
    }
    if (e.kind != EntryKind::kFile) continue;
    if (exists && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) == e.size) {
      bool same = false;
      if (checksum && !e.digest.empty()) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        FileDigest d;
        same = fd >= 0 && digest_fd(fd, e.size, d) && d.hex() == e.digest;
        if (fd >= 0) ::close(fd);
      } else {
        same = same_mtime(mtime_ns_of(st), e.mtime_ns);
      }
      if (same) {
        ++p.skipped;
        continue;
      }
    }
    std::uint64_t have = 0;
    const size_t slash = e.path.rfind('/');
    const std::string part = root + "/" + (slash == std::string::npos ? "" : e.path.substr(0, slash + 1)) + part_name(e);
    struct stat ps {};
    if (chunk > 0 && ::lstat(part.c_str(), &ps) == 0 && S_ISREG(ps.st_mode) &&
        static_cast<std::uint64_t>(ps.st_size) <= e.size) {
      have = static_cast<std::uint64_t>(ps.st_size) / chunk * chunk;
    }
    p.need_bytes += e.size - have;
    p.files.emplace_back(i, have);
  }
  return p;
}

DestTree::DestTree(std::string dest) : dest_(std::move(dest)) {
  // Creates the missing directories of dest (its own path may hold links: it is the
  // operator's), then opens it.
  std::string built;
  size_t start = dest_.front() == '/' ? 1 : 0;
  if (start == 1) built = "";
  for (;;) {
    const size_t slash = dest_.find('/', start);
    built = dest_.substr(0, slash);
    if (!built.empty() && ::mkdir(built.c_str(), 0755) != 0 && errno != EEXIST) {
      error_ = built + ": cannot create it: " + errno_text(errno);
      return;
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  root_ = ::open(dest_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_ < 0) error_ = dest_ + ": cannot open it: " + errno_text(errno);
}

DestTree::~DestTree() {
  if (root_ >= 0) ::close(root_);
}

int DestTree::open_parent(const std::string& rel, bool create, std::string& leaf,
                          std::string& problem) {
  int fd = ::dup(root_);
  std::string sofar;
  for (const auto& part : components(rel, leaf)) {
    sofar += (sofar.empty() ? "" : "/") + part;
    if (create && ::mkdirat(fd, part.c_str(), 0755) != 0 && errno != EEXIST) {
      problem = shown(sofar) + ": cannot create it: " + errno_text(errno);
      ::close(fd);
      return -1;
    }
    const int next = ::openat(fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int err = errno;
    ::close(fd);
    if (next < 0) {
      problem = shown(sofar) + ": " +
                (err == ELOOP || err == ENOTDIR ? std::string("not a directory (push never writes "
                                                              "through a link)")
                                                : errno_text(err));
      return -1;
    }
    fd = next;
  }
  return fd;
}

std::vector<std::string> DestTree::make_directories(const Manifest& m) {
  std::vector<std::string> problems;
  for (const auto& e : m.entries) {
    std::string leaf, problem;
    const int dir = open_parent(e.path, true, leaf, problem);
    if (dir < 0) {
      problems.push_back(problem);
      continue;
    }
    if (e.kind == EntryKind::kDirectory) {
      struct stat st {};
      if (::mkdirat(dir, leaf.c_str(), 0755) != 0 && errno != EEXIST) {
        problems.push_back(shown(e.path) + ": cannot create it: " + errno_text(errno));
      } else if (::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                 S_ISDIR(st.st_mode) && (st.st_mode & 0700) != 0700 &&
                 ::fchmodat(dir, leaf.c_str(), (st.st_mode & 07777) | 0700, 0) != 0) {
        problems.push_back(shown(e.path) + ": cannot make it writable: " + errno_text(errno));
      }
    }
    ::close(dir);
  }
  return problems;
}

int DestTree::open_part(const Entry& e, std::uint64_t have, std::string& problem) {
  std::string leaf;
  const int dir = open_parent(e.path, true, leaf, problem);
  if (dir < 0) return -1;
  const std::string part = part_name(e);
  remove_stale_parts(dir, e);
  const int fd = ::openat(dir, part.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  const int err = errno;
  ::close(dir);
  if (fd < 0) {
    problem = shown(e.path) + ": cannot write " + part + ": " + errno_text(err);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      ::ftruncate(fd, static_cast<off_t>(have)) != 0) {
    problem = shown(e.path) + ": cannot write " + part + ": " + errno_text(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

void DestTree::remove_stale_parts(int dir, const Entry& e) {
  const int list = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (list < 0) return;
  DIR* d = ::fdopendir(list);
  if (d == nullptr) {
    ::close(list);
    return;
  }
  const std::string prefix = part_prefix(e.path), current = part_name(e);
  std::vector<std::string> stale;
  while (const dirent* de = ::readdir(d)) {
    const std::string n = de->d_name;
    if (n.size() == current.size() && n.compare(0, prefix.size(), prefix) == 0 && n != current &&
        n.compare(n.size() - 5, 5, ".part") == 0) {
      stale.push_back(n);
    }
  }
  ::closedir(d);
  for (const auto& n : stale) {
    struct stat st {};
    if (::fstatat(dir, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
      ::unlinkat(dir, n.c_str(), 0);
    }
  }
}

std::string DestTree::finish_file(const Entry& e, int fd, const std::string& digest,
                                  const std::string& expected) {
  std::string leaf, problem;
  const int dir = open_parent(e.path, false, leaf, problem);
  if (dir < 0) {
    ::close(fd);
    return problem;
  }
  const std::string part = part_name(e);
  if (digest != expected) {
    ::close(fd);
    ::unlinkat(dir, part.c_str(), 0);
    ::close(dir);
    if (expected.find_first_not_of('-') == std::string::npos) {
      return shown(e.path) + ": the source could not send it whole (its own line says why); "
                             "the part was removed: push again";
    }
    return shown(e.path) + ": the digest of what arrived (" + digest + ") is not the source's (" +
           expected + "); the part was removed: push again";
  }
  const std::array<struct timespec, 2> times = entry_times(e);
  if (::fchmod(fd, static_cast<mode_t>(e.mode)) != 0 || ::futimens(fd, times.data()) != 0 ||
      ::fsync(fd) != 0) {
    problem = shown(e.path) + ": cannot finish " + part + ": " + errno_text(errno);
  }
  ::close(fd);
  if (problem.empty() && ::renameat(dir, part.c_str(), dir, leaf.c_str()) != 0) {
    problem = shown(e.path) + ": cannot rename " + part + " into place: " + errno_text(errno);
  }
  if (problem.empty()) ::fsync(dir);
  ::close(dir);
  return problem;
}

std::string DestTree::make_link(const Entry& e) {
  std::string leaf, problem;
  const int dir = open_parent(e.path, true, leaf, problem);
  if (dir < 0) return problem;
  const std::string tmp = part_name(e);
  ::unlinkat(dir, tmp.c_str(), 0);
  if (::symlinkat(e.link.c_str(), dir, tmp.c_str()) != 0 ||
      ::renameat(dir, tmp.c_str(), dir, leaf.c_str()) != 0) {
    problem = shown(e.path) + ": cannot make the link: " + errno_text(errno);
    ::unlinkat(dir, tmp.c_str(), 0);
  } else {
    const std::array<struct timespec, 2> times = entry_times(e);
    ::utimensat(dir, leaf.c_str(), times.data(), AT_SYMLINK_NOFOLLOW);
  }
  ::close(dir);
  return problem;
}

std::vector<std::string> DestTree::finish_directories(const Manifest& m) {
  std::vector<std::string> problems;
  // Children first, so setting a parent's mtime comes after every change inside it.
  for (auto it = m.entries.rbegin(); it != m.entries.rend(); ++it) {
    const Entry& e = *it;
    if (e.kind != EntryKind::kDirectory) continue;
    std::string leaf, problem;
    const int dir = open_parent(e.path, false, leaf, problem);
    if (dir < 0) {
      problems.push_back(problem);
      continue;
    }
    const int fd = ::openat(dir, leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const std::array<struct timespec, 2> times = entry_times(e);
    if (fd < 0 || ::fchmod(fd, static_cast<mode_t>(e.mode)) != 0 || ::futimens(fd, times.data()) != 0) {
      problems.push_back(shown(e.path) + ": cannot set its mode and time: " + errno_text(errno));
    }
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
    ::close(dir);
  }
  ::fsync(root_);
  return problems;
}

}  // namespace cc::push
