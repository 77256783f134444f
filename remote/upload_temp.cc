#include "remote/upload_temp.h"

#include <signal.h>
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

namespace cc::remote {
namespace {

constexpr std::string_view kMarker = ".clusterctl-tmp-";
constexpr size_t kRandomHex = 8;      // upload_temp_name's random part
constexpr size_t kOldRandomHex = 16;  // older versions' whole suffix

// This machine's name as a temporary's name holds it: its first label, [A-Za-z0-9_-] only.
std::string host_tag() {
  std::string name = util::host_name();
  name = name.substr(0, name.find('.'));
  for (char& c : name) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_';
    if (!plain) c = '_';
  }
  if (name.size() > 32) name.resize(32);
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

std::string upload_temp_name(std::string_view dest_name) {
  return fmt::format("{}{}{}-{}-{}", dest_name, kMarker, host_tag(), ::getpid(),
                     util::random_hex(kRandomHex / 2));
}

bool stale_upload_temp(const TempEntry& e, const TempContext& c) {
  const std::string prefix = c.dest_name + std::string(kMarker);
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
