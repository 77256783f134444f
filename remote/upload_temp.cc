#include "remote/upload_temp.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <mutex>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "util/atomic_file.h"
#include "util/process.h"
#include "util/text.h"

namespace cc::remote {
namespace {

constexpr std::string_view kMarker = ".clusterctl-tmp-";
constexpr size_t kRandomHex = 8;      // upload_temp_name's random part
constexpr size_t kOldRandomHex = 16;  // older versions' whole suffix
constexpr size_t kMaxHostTag = 32;
constexpr size_t kMaxPidDigits = 10;  // a pid_t's
// The longest "HOST-PID-RANDOM": upload_temp_prefix leaves room for it.
constexpr size_t kMaxTail = kMaxHostTag + 1 + kMaxPidDigits + 1 + kRandomHex;
static_assert(kMarker.size() + kMaxTail < util::kNameMax);

// This machine's name as a temporary's name holds it: its first label, [A-Za-z0-9_-] only.
std::string host_tag() {
  std::string name = util::host_name();
  name = name.substr(0, name.find('.'));
  for (char& c : name) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_';
    if (!plain) c = '_';
  }
  if (name.size() > kMaxHostTag) name.resize(kMaxHostTag);
  return name.empty() ? "unknown" : name;
}

bool all_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::mutex in_flight_mutex;
std::multiset<std::string>& in_flight() {
  static std::multiset<std::string> names;
  return names;
}

}  // namespace

std::string upload_temp_prefix(std::string_view dest_name) {
  return fmt::format("{}{}", util::utf8_prefix(dest_name, util::kNameMax - kMarker.size() - kMaxTail),
                     kMarker);
}

std::string upload_temp_name(std::string_view dest_name) {
  return fmt::format("{}{}-{}-{}", upload_temp_prefix(dest_name), host_tag(), ::getpid(),
                     util::random_hex(kRandomHex / 2));
}

bool stale_upload_temp(const TempEntry& e, const TempContext& c) {
  const std::string prefix = upload_temp_prefix(c.dest_name);
  if (c.dest_name.empty() || !e.name.starts_with(prefix)) return false;
  if (!e.regular || e.uid != c.uid) return false;
  const std::string_view rest = std::string_view(e.name).substr(prefix.size());
  const bool old = e.mtime <= c.now - kStaleTempSeconds;
  if (rest.size() == kOldRandomHex && all_hex(rest)) return old;  // an older version's
  // HOST-PID-RANDOM, read from the right (HOST may hold '-').
  const size_t r = rest.rfind('-');
  if (r == std::string_view::npos || rest.size() - r - 1 != kRandomHex ||
      !all_hex(rest.substr(r + 1))) {
    return false;
  }
  const size_t p = rest.rfind('-', r == 0 ? 0 : r - 1);
  if (p == std::string_view::npos || p == 0) return false;
  const std::string_view pid_text = rest.substr(p + 1, r - p - 1);
  long pid = 0;
  const auto [end, ec] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
  if (ec != std::errc() || end != pid_text.data() + pid_text.size() || pid <= 0) return false;
  if (rest.substr(0, p) != host_tag()) return old;  // another machine's: only its age tells
  return old || (c.writer_alive && !c.writer_alive(pid, e.name));
}

void remove_stale_upload_temps(const TempDirectory& dir, const std::string& dest_name,
                               const std::string& own_name,
                               std::chrono::steady_clock::time_point deadline) {
  const std::optional<TempEntry> mine = dir.lstat(own_name);
  if (!mine) return;
  TempContext c;
  c.dest_name = dest_name;
  c.uid = mine->uid;
  c.now = mine->mtime;
  c.writer_alive = upload_writer_alive;
  const std::optional<unsigned> perm = dir.mode();
  if (!perm || ((*perm & 022) != 0 && (*perm & 01000) == 0)) return;
  for (const std::string& name : dir.names(upload_temp_prefix(dest_name), deadline)) {
    if (std::chrono::steady_clock::now() >= deadline) return;
    if (name == own_name) continue;
    // Looked at again, just before: never through a link (lstat).
    const std::optional<TempEntry> e = dir.lstat(name);
    if (e && stale_upload_temp(*e, c)) dir.remove(name);
  }
}

TempDirectory local_temp_directory(const std::filesystem::path& dir) {
  TempDirectory d;
  d.mode = [dir]() -> std::optional<unsigned> {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return std::nullopt;
    return static_cast<unsigned>(st.st_mode & 07777);
  };
  d.names = [dir](const std::string& prefix, std::chrono::steady_clock::time_point deadline) {
    std::vector<std::string> names;
    DIR* listing = ::opendir(dir.c_str());
    if (listing == nullptr) return names;
    while (std::chrono::steady_clock::now() < deadline) {
      const dirent* e = ::readdir(listing);
      if (e == nullptr) break;
      if (std::string_view(e->d_name).starts_with(prefix)) names.emplace_back(e->d_name);
    }
    ::closedir(listing);
    return names;
  };
  d.lstat = [dir](const std::string& name) -> std::optional<TempEntry> {
    struct stat st {};
    if (::lstat((dir / name).c_str(), &st) != 0) return std::nullopt;
    TempEntry e;
    e.name = name;
    e.regular = S_ISREG(st.st_mode);
    e.uid = st.st_uid;
    e.mtime = static_cast<std::int64_t>(st.st_mtime);
    return e;
  };
  d.remove = [dir](const std::string& name) { ::unlink((dir / name).c_str()); };
  return d;
}

util::TempNaming LocalUpload::naming() {
  util::TempNaming n;
  n.name = [this](const std::string& dest_name) {
    std::string tmp = upload_temp_name(dest_name);
    in_flight_.emplace(tmp);
    return tmp;
  };
  n.created = [this](const std::filesystem::path& tmp, const std::filesystem::path& target) {
    std::filesystem::path dir = target.parent_path();
    if (dir.empty()) dir = ".";
    remove_stale_upload_temps(local_temp_directory(dir), target.filename().string(),
                              tmp.filename().string(), deadline_);
  };
  return n;
}

bool upload_writer_alive(long pid, std::string_view name) {
  if (pid <= 0) return false;
  if (pid == static_cast<long>(::getpid())) {
    std::lock_guard<std::mutex> lock(in_flight_mutex);
    return in_flight().count(std::string(name)) > 0;
  }
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

UploadInFlight::UploadInFlight(std::string name) : name_(std::move(name)) {
  std::lock_guard<std::mutex> lock(in_flight_mutex);
  in_flight().insert(name_);
}

UploadInFlight::~UploadInFlight() {
  std::lock_guard<std::mutex> lock(in_flight_mutex);
  auto& names = in_flight();
  if (auto it = names.find(name_); it != names.end()) names.erase(it);
}

}  // namespace cc::remote
