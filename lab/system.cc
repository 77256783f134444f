#include "lab/system.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include <sys/mount.h>
#include <sys/stat.h>

#include <fmt/format.h>
#include <unistd.h>

#include "util/atomic_file.h"
#include "util/interrupt.h"

namespace cc::lab::sys {
namespace {

struct NsId {
  dev_t dev;
  ino_t ino;
  bool operator==(const NsId& o) const { return dev == o.dev && ino == o.ino; }
};

std::optional<NsId> ns_id(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return std::nullopt;
  return NsId{st.st_dev, st.st_ino};
}

fs::path proc(int pid, const char* what) {
  return fs::path("/proc") / std::to_string(pid) / what;
}

std::string read_small(const fs::path& p) {
  auto text = util::read_file(p);
  return text ? std::move(*text) : std::string();
}

// The process state letter from /proc/PID/stat ('Z' for a zombie), or 0 when gone.
char state(int pid) {
  std::string stat = read_small(proc(pid, "stat"));
  auto paren = stat.rfind(')');  // comm may contain spaces and parentheses
  if (paren == std::string::npos || paren + 2 >= stat.size()) return 0;
  return stat[paren + 2];
}

std::vector<int> all_pids() {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    int pid = 0;
    auto [ptr, err] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (err == std::errc() && ptr == name.data() + name.size() && pid > 0) pids.push_back(pid);
  }
  return pids;
}

}  // namespace

bool is_root() {
  return ::geteuid() == 0;
}

fs::path netns_dir() {
  return "/run/netns";
}

std::vector<std::string> list_netns() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(netns_dir(), ec)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<int> pids_in_namespaces(const std::vector<fs::path>& ns_files) {
  std::vector<NsId> wanted;
  for (const auto& f : ns_files) {
    if (auto id = ns_id(f)) wanted.push_back(*id);
  }
  std::vector<int> found;
  if (wanted.empty()) return found;
  const int self = static_cast<int>(::getpid());
  for (int pid : all_pids()) {
    if (pid == self) continue;
    for (const char* kind : {"ns/net", "ns/uts"}) {
      auto id = ns_id(proc(pid, kind));
      if (id && std::find(wanted.begin(), wanted.end(), *id) != wanted.end()) {
        if (state(pid) != 'Z') found.push_back(pid);
        break;
      }
    }
  }
  return found;
}

bool alive(int pid) {
  if (pid <= 0) return false;
  char s = state(pid);
  return s != 0 && s != 'Z';
}

std::string comm(int pid) {
  std::string s = read_small(proc(pid, "comm"));
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

std::string cmdline(int pid) {
  std::string s = read_small(proc(pid, "cmdline"));
  std::replace(s.begin(), s.end(), '\0', ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::optional<bool> in_network_namespace(int pid, const fs::path& ns_file) {
  auto want = ns_id(ns_file);
  auto have = ns_id(proc(pid, "ns/net"));
  if (!want || !have) return std::nullopt;
  return *want == *have;
}

void send_signal(const std::vector<int>& pids, int signal) {
  for (int pid : pids) {
    if (pid > 0) ::kill(static_cast<pid_t>(pid), signal);
  }
}

std::vector<int> wait_for_exit(std::vector<int> pids, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    pids.erase(std::remove_if(pids.begin(), pids.end(), [](int p) { return !alive(p); }),
               pids.end());
    if (pids.empty() || std::chrono::steady_clock::now() >= deadline || util::interrupted()) {
      return pids;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

util::Result<std::vector<MountEntry>> mounts() {
  auto text = util::read_file("/proc/self/mountinfo");
  if (!text) {
    return util::error(util::ExitCode::kCheckFailed,
                       fmt::format("cannot read the mount table: {}", text.error().message));
  }
  return parse_mountinfo(*text);
}

util::Status mount_tmpfs(const std::string& source, const fs::path& target,
                         std::uint64_t size_bytes) {
  const std::string options = fmt::format("size={},mode=0755,uid=0,gid=0", size_bytes);
  auto failed = [&](const char* what) {
    const int err = errno;
    return util::error(util::ExitCode::kUsage, fmt::format("cannot {} the {} tmpfs at {}: {}", what,
                                                           format_data_size(size_bytes),
                                                           target.string(), std::strerror(err)));
  };
  if (::mount(source.c_str(), target.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) !=
      0) {
    return failed("mount");
  }
  if (::mount(nullptr, target.c_str(), nullptr, MS_SHARED, nullptr) != 0) {
    return failed("share (MS_SHARED)");
  }
  return {};
}

util::Status unmount(const fs::path& path) {
  if (::umount2(path.c_str(), MNT_DETACH) == 0 || errno == EINVAL || errno == ENOENT) return {};
  return util::error(util::ExitCode::kCheckFailed,
                     fmt::format("cannot unmount {}: {}", path.string(), std::strerror(errno)));
}

}  // namespace cc::lab::sys
