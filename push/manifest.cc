#include "push/manifest.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <dirent.h>
#include <fnmatch.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "push/hash.h"

namespace cc::push {
namespace {

std::string base_name(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string what_kind(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  return "not a regular file, directory or symbolic link";
}

struct Walker {
  Manifest& m;
  bool digests;

  void push(Entry e, const std::string& local) {
    m.entries.push_back(std::move(e));
    m.local.push_back(local);
  }

  void error(const std::string& path, const std::string& problem) {
    m.errors.push_back(path + ": " + problem);
  }

  void add(const std::string& local, const std::string& rel) {
    struct stat st {};
    if (::lstat(local.c_str(), &st) != 0) {
      error(local, std::strerror(errno));
      return;
    }
    Entry e;
    e.path = rel;
    e.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
    e.mtime_ns = mtime_ns_of(st);
    if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size) + 256, '\0');
      const ssize_t n = ::readlink(local.c_str(), target.data(), target.size());
      if (n < 0) return error(local, std::strerror(errno));
      target.resize(static_cast<size_t>(n));
      e.kind = EntryKind::kSymlink;
      e.link = target;
      push(std::move(e), local);
    } else if (S_ISREG(st.st_mode)) {
      add_file(local, std::move(e), st);
    } else if (S_ISDIR(st.st_mode)) {
      e.kind = EntryKind::kDirectory;
      push(std::move(e), local);
      add_directory(local, rel);
    } else {
      error(local, what_kind(st.st_mode) + ": push copies regular files, directories and "
                                           "symbolic links; move it out of the tree");
    }
  }

  void add_file(const std::string& local, Entry e, const struct stat& st) {
    e.kind = EntryKind::kFile;
    e.size = static_cast<std::uint64_t>(st.st_size);
    const int fd = ::open(local.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return error(local, std::string(std::strerror(errno)) + ": cannot read it");
    if (digests) {
      FileDigest d;
      if (!digest_fd(fd, e.size, d)) {
        const int err = errno;
        ::close(fd);
        return error(local, std::string("cannot read it: ") + std::strerror(err));
      }
      e.digest = d.hex();
    }
    ::close(fd);
    push(std::move(e), local);
  }

  void add_directory(const std::string& local, const std::string& rel) {
    DIR* d = ::opendir(local.c_str());
    if (d == nullptr) return error(local, std::string(std::strerror(errno)) + ": cannot list it");
    std::vector<std::string> names;
    while (const dirent* de = ::readdir(d)) {
      const std::string n = de->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const auto& n : names) add(local + "/" + n, rel + "/" + n);
  }
};

const char* kind_name(EntryKind k) {
  switch (k) {
    case EntryKind::kFile: return "file";
    case EntryKind::kDirectory: return "dir";
    case EntryKind::kSymlink: return "link";
  }
  return "file";
}

}  // namespace

std::int64_t mtime_ns_of(const struct stat& st) {
#ifdef __APPLE__
  const struct timespec& t = st.st_mtimespec;
#else
  const struct timespec& t = st.st_mtim;
#endif
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

std::uint64_t Manifest::file_bytes() const {
  std::uint64_t n = 0;
  for (const auto& e : entries) n += e.kind == EntryKind::kFile ? e.size : 0;
  return n;
}

std::size_t Manifest::file_count() const {
  return static_cast<size_t>(std::count_if(entries.begin(), entries.end(), [](const Entry& e) {
    return e.kind == EntryKind::kFile;
  }));
}

bool safe_relative_path(const std::string& path) {
  if (path.empty() || path.front() == '/' || path.find('\0') != std::string::npos) return false;
  size_t start = 0;
  for (;;) {
    const size_t slash = path.find('/', start);
    const std::string part = path.substr(start, slash == std::string::npos ? slash : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

Manifest build_manifest(const std::vector<std::string>& sources, bool digests) {
  Manifest m;
  Walker w{m, digests};
  std::vector<std::string> seen;
  for (const auto& src : sources) {
    const std::string name = base_name(src);
    if (!safe_relative_path(name)) {
      w.error(src, "names no file (give the file or directory itself, not \"/\", \".\" or \"..\")");
      continue;
    }
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      w.error(src, "another source has the same name '" + name +
                       "', and both would land at DEST/" + name + ": push them separately");
      continue;
    }
    seen.push_back(name);
    w.add(src, name);
  }
  return m;
}

namespace {

bool share_matches(const std::string& glob, const std::string& path) {
  const bool whole = glob.find('/') != std::string::npos;
  // The path itself, then each of its parent directories: a share naming a directory takes
  // everything below it.
  std::string p = path;
  for (;;) {
    const size_t slash = p.rfind('/');
    const std::string subject = whole || slash == std::string::npos ? p : p.substr(slash + 1);
    if (::fnmatch(glob.c_str(), subject.c_str(), FNM_PATHNAME) == 0) return true;
    if (slash == std::string::npos) return false;
    p.resize(slash);
  }
}

}  // namespace

std::vector<std::string> apply_shares(Manifest& m, const std::vector<Share>& shares) {
  std::vector<bool> used(shares.size(), false);
  for (auto& e : m.entries) {
    e.to.clear();
    if (e.kind == EntryKind::kDirectory) continue;
    for (size_t s = 0; s < shares.size(); ++s) {
      if (!share_matches(shares[s].glob, e.path)) continue;
      used[s] = true;
      if (std::find(e.to.begin(), e.to.end(), shares[s].rank) == e.to.end()) {
        e.to.push_back(shares[s].rank);
      }
    }
    std::sort(e.to.begin(), e.to.end());
  }
  std::vector<std::string> problems;
  for (size_t s = 0; s < shares.size(); ++s) {
    if (used[s]) continue;
    problems.push_back(shares[s].at + ": '" + shares[s].glob +
                       "' matches no file of the push (a glob without '/' matches a name, one "
                       "with '/' the whole path from the pushed directory's own name: " +
                       (m.entries.empty() ? std::string("(nothing)") : m.entries.front().path) +
                       "/...)");
  }
  return problems;
}

std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

bool utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

// `text` into j[key], or as hex into j[key + "_hex"] when it is not UTF-8.
void put_bytes(nlohmann::json& j, const std::string& key, const std::string& text) {
  if (utf8(text)) {
    j[key] = text;
    return;
  }
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (const char c : text) {
    const auto ch = static_cast<unsigned char>(c);
    hex += digits[ch >> 4];
    hex += digits[ch & 15];
  }
  j[key + "_hex"] = hex;
}

std::string get_bytes(const nlohmann::json& j, const std::string& key) {
  if (!j.contains(key + "_hex")) return j.at(key).get<std::string>();
  const std::string hex = j.at(key + "_hex").get<std::string>();
  auto value = [&](char ch) -> int {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    throw std::invalid_argument("bad hex in " + key + "_hex");
  };
  if (hex.size() % 2 != 0) throw std::invalid_argument("bad hex in " + key + "_hex");
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out += static_cast<char>(value(hex[i]) * 16 + value(hex[i + 1]));
  }
  return out;
}

}  // namespace

std::string shares_to_json(const std::vector<Share>& shares) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : shares) a.push_back({{"rank", s.rank}, {"glob", s.glob}, {"at", s.at}});
  return json_text(a);
}

std::vector<Share> shares_from_json(const std::string& text) {
  std::vector<Share> out;
  try {
    for (const auto& j : nlohmann::json::parse(text)) {
      Share s{j.at("rank").get<int>(), j.at("glob").get<std::string>(), j.at("at").get<std::string>()};
      if (s.rank < 1 || s.glob.empty()) throw std::invalid_argument("bad share " + json_text(j));
      out.push_back(std::move(s));
    }
  } catch (const nlohmann::json::exception& ex) {
    throw std::invalid_argument(std::string("malformed shares: ") + ex.what());
  }
  return out;
}

std::string to_json(const Manifest& m) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& e : m.entries) {
    nlohmann::json j = {{"kind", kind_name(e.kind)}, {"mode", e.mode}, {"mtime_ns", e.mtime_ns}};
    put_bytes(j, "path", e.path);
    if (e.kind == EntryKind::kFile) j["size"] = e.size;
    if (e.kind == EntryKind::kSymlink) put_bytes(j, "link", e.link);
    if (!e.digest.empty()) j["digest"] = e.digest;
    if (!e.to.empty()) j["to"] = e.to;
    a.push_back(std::move(j));
  }
  return json_text(nlohmann::json{{"entries", a}, {"errors", m.errors}});
}

Manifest manifest_from_json(const std::string& text) {
  Manifest m;
  try {
    const auto j = nlohmann::json::parse(text);
    m.errors = j.at("errors").get<std::vector<std::string>>();
    for (const auto& je : j.at("entries")) {
      Entry e;
      e.path = get_bytes(je, "path");
      if (!safe_relative_path(e.path)) throw std::invalid_argument("unsafe path " + e.path);
      const std::string kind = je.at("kind").get<std::string>();
      e.kind = kind == "dir" ? EntryKind::kDirectory
               : kind == "link" ? EntryKind::kSymlink
                                : EntryKind::kFile;
      if (kind != "dir" && kind != "link" && kind != "file") {
        throw std::invalid_argument("unknown kind " + kind);
      }
      e.mode = je.at("mode").get<std::uint32_t>() & 07777;
      e.mtime_ns = je.at("mtime_ns").get<std::int64_t>();
      if (e.kind == EntryKind::kFile) e.size = je.at("size").get<std::uint64_t>();
      if (e.kind == EntryKind::kSymlink) e.link = get_bytes(je, "link");
      if (je.contains("digest")) e.digest = je.at("digest").get<std::string>();
      if (je.contains("to")) {
        e.to = je.at("to").get<std::vector<int>>();
        if (e.kind == EntryKind::kDirectory ||
            std::any_of(e.to.begin(), e.to.end(), [](int r) { return r < 1; })) {
          throw std::invalid_argument("bad target ranks for " + e.path);
        }
      }
      m.entries.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception& ex) {
    throw std::invalid_argument(std::string("malformed manifest: ") + ex.what());
  }
  return m;
}

}  // namespace cc::push
