// `lab down`: finds a lab's resources by name and tag (lab.json only adds sshd pids), then
// removes them in dependency order: processes (TERM, then KILL; each sshd's mount namespace
// goes with them), root-namespace links (bridge, management veths), namespaces (which take the
// cable veths with them), UTS mounts and each host's data tmpfs, runtime files, each host's
// /etc/netns files and lab-directory files. Each step tolerates what an interrupted `lab up` may
// have left half made, and a second run finds nothing and succeeds.
#include <algorithm>
#include <csignal>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lab/commands.h"
#include "lab/data.h"
#include "lab/files.h"
#include "lab/lab.h"
#include "lab/plan.h"
#include "lab/system.h"
#include "remote/inventory.h"
#include "util/atomic_file.h"

namespace cc::lab {
namespace {

using namespace std::chrono_literals;
using util::ExitCode;

constexpr auto kTermGrace = 2s;
constexpr auto kKillGrace = 2s;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// True for "NAME" itself and for util::write_file_atomic's temporary ".NAME.tmp.XXXXXX".
bool is_ours(const std::string& entry, const std::vector<std::string>& names) {
  for (const auto& n : names) {
    if (entry == n || entry.rfind("." + n + ".tmp.", 0) == 0) return true;
  }
  return false;
}

bool is_host_dir_name(const std::string& s) {
  for (int i = kMinHosts; i <= kMaxHosts; ++i) {
    if (s == fmt::format("h{}", i)) return true;
  }
  return false;
}

// Removes the files `lab up` writes in `dir` (and nothing else), then the directories that are
// left empty. A directory whose lab.json names another lab is left alone.
void remove_lab_files(const fs::path& dir, std::string_view name, DownReport& report) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  if (auto text = util::read_file(LabFiles{dir}.lab_json())) {
    auto rec = parse_lab_json(*text, LabFiles{dir}.lab_json().string());
    if (rec && rec->name != name) {
      report.kept.push_back(fmt::format("{} (its lab.json is lab '{}')", dir.string(), rec->name));
      return;
    }
  }
  auto remove_ours = [&](const fs::path& d, const std::vector<std::string>& names) {
    for (const auto& e : fs::directory_iterator(d, ec)) {
      if (e.is_regular_file(ec) && is_ours(e.path().filename().string(), names) &&
          fs::remove(e.path(), ec)) {
        ++report.files;
      }
    }
  };
  auto remove_if_empty = [&](const fs::path& d) {
    if (!fs::exists(d, ec)) return;
    if (fs::is_empty(d, ec)) {
      fs::remove(d, ec);
    } else {
      report.kept.push_back(d.string() + " (it holds files that `lab up` did not make)");
    }
  };
  remove_ours(dir, lab_dir_file_names());
  fs::path keygen = LabFiles{dir}.keygen_dir();
  if (fs::exists(keygen, ec)) {
    auto n = fs::remove_all(keygen, ec);
    if (n != static_cast<std::uintmax_t>(-1)) report.files += static_cast<int>(n);
  }
  fs::path hosts = LabFiles{dir}.hosts_dir();
  if (fs::is_directory(hosts, ec)) {
    for (const auto& e : fs::directory_iterator(hosts, ec)) {
      if (!e.is_directory(ec) || !is_host_dir_name(e.path().filename().string())) continue;
      // The host's home holds whatever was done on the host: all of it is the lab's.
      fs::path home = LabFiles{dir}.host_home(e.path().filename().string());
      if (fs::is_directory(home, ec) && !fs::is_symlink(home, ec)) {
        auto n = fs::remove_all(home, ec);
        if (n != static_cast<std::uintmax_t>(-1)) report.files += static_cast<int>(n);
      }
      remove_ours(e.path(), host_dir_file_names());
      remove_if_empty(e.path());
    }
    remove_if_empty(hosts);
  }
  remove_if_empty(dir);
}

// Lab directories to clean: the given or default one, and the one `lab up` recorded.
std::vector<fs::path> lab_dirs(std::string_view name, const fs::path& dir) {
  std::vector<fs::path> dirs;
  if (auto d = resolve_lab_dir(name, dir)) dirs.push_back(*d);
  if (auto recorded = util::read_file(runtime_dir(name) / "lab_dir")) {
    fs::path p = trim(*recorded);
    if (p.is_absolute() && std::find(dirs.begin(), dirs.end(), p) == dirs.end()) {
      dirs.push_back(p);
    }
  }
  return dirs;
}

// sshd pids from lab.json and pid files, when they still name this lab's sshd.
std::vector<int> recorded_sshd_pids(const fs::path& dir) {
  std::vector<int> pids;
  LabFiles files{dir};
  std::vector<std::string> hosts;
  for (int i = kMinHosts; i <= kMaxHosts; ++i) hosts.push_back(fmt::format("h{}", i));
  std::vector<std::pair<std::string, int>> candidates;
  if (auto text = util::read_file(files.lab_json())) {
    if (auto rec = parse_lab_json(*text, files.lab_json().string())) {
      for (const auto& h : rec->hosts) candidates.emplace_back(h.name, h.sshd_pid);
    }
  }
  std::error_code ec;
  for (const auto& h : hosts) {
    if (!fs::exists(files.sshd_pid(h), ec)) continue;
    if (auto text = util::read_file(files.sshd_pid(h))) {
      try {
        candidates.emplace_back(h, std::stoi(*text));
      } catch (const std::exception&) {
      }
    }
  }
  for (const auto& [host, pid] : candidates) {
    if (sys::alive(pid) && sys::comm(pid) == "sshd" &&
        sys::cmdline(pid).find(files.sshd_config(host).string()) != std::string::npos) {
      pids.push_back(pid);
    }
  }
  return pids;
}

// 1. Processes: everything in the lab's namespaces (sshd, its sessions, anything started over
// SSH), plus recorded sshd pids. TERM first, then KILL.
void stop_processes(const std::vector<fs::path>& ns_files, const std::vector<fs::path>& dirs,
                    DownReport& report, std::vector<std::string>& failures) {
  std::vector<int> pids = sys::pids_in_namespaces(ns_files);
  for (const auto& d : dirs) {
    for (int pid : recorded_sshd_pids(d)) {
      if (std::find(pids.begin(), pids.end(), pid) == pids.end()) pids.push_back(pid);
    }
  }
  if (pids.empty()) return;
  sys::send_signal(pids, SIGTERM);
  auto left = sys::wait_for_exit(pids, kTermGrace);
  // Processes that a crashed `lab up` started late may have appeared meanwhile.
  for (int pid : sys::pids_in_namespaces(ns_files)) {
    if (std::find(left.begin(), left.end(), pid) == left.end()) left.push_back(pid);
  }
  if (!left.empty()) {
    sys::send_signal(left, SIGKILL);
    left = sys::wait_for_exit(left, kKillGrace);
  }
  report.processes = static_cast<int>(pids.size());
  if (!left.empty()) {
    failures.push_back(fmt::format("processes still running: {}", fmt::join(left, ", ")));
  }
}

// 2. Root-namespace links: the bridge and the management veths (deleting the root end also
// deletes en0 in the host). Done before the namespaces go: a namespace deleted first takes its
// veths with it only in the background, while they still show up here. A bridge whose alias
// names another lab (same tag, by a hash collision) is left alone.
void remove_links(remote::Executor& local, std::string_view name, DownReport& report,
                  std::vector<std::string>& failures) {
  auto links = list_links(local);
  if (!links) {
    failures.push_back(links.error().message);
    return;
  }
  const std::string tag = lab_tag(name);
  const std::string alias = "clusterctl-lab:" + std::string(name);
  std::string batch;
  std::vector<std::string> doomed;
  for (const auto& l : *links) {
    if (!is_lab_link(tag, l.name)) continue;
    if (!l.alias.empty() && l.alias != alias) {
      report.kept.push_back(
          fmt::format("interface {} (its alias {} names another lab)", l.name, l.alias));
      continue;
    }
    batch += fmt::format("link del {}\n", l.name);
    doomed.push_back(l.name);
  }
  if (doomed.empty()) return;
  // "Cannot find device" for a link that went away meanwhile is fine: what counts is whether
  // any is left afterwards.
  auto r = run_checked(local, {"ip", "-force", "-batch", "-"}, kIpTimeout, batch,
                       ExitCode::kCheckFailed);
  auto after = list_links(local);
  for (const auto& n : doomed) {
    bool still = !after || std::any_of(after->begin(), after->end(),
                                       [&](const Link& l) { return l.name == n; });
    if (still) {
      failures.push_back(
          fmt::format("interface {} is still there{}", n, r ? "" : ": " + r.error().message));
    } else {
      ++report.links;
    }
  }
}

// 3. Namespaces; the cable veths go with them (the kernel frees them in the background).
void remove_namespaces(remote::Executor& local, const std::vector<std::string>& namespaces,
                       DownReport& report, std::vector<std::string>& failures) {
  if (namespaces.empty()) return;
  std::string batch;
  for (const auto& ns : namespaces) batch += fmt::format("netns del {}\n", ns);
  auto r = run_checked(local, {"ip", "-force", "-batch", "-"}, kIpTimeout, batch,
                       ExitCode::kCheckFailed);
  if (!r) failures.push_back(r.error().message);
  std::error_code ec;
  for (const auto& ns : namespaces) {
    if (fs::exists(sys::netns_dir() / ns, ec)) {
      failures.push_back(fmt::format("network namespace {} is still there", ns));
    } else {
      ++report.namespaces;
    }
  }
}

// Each host's data tmpfs of lab `name`, found in the mount table (data.h lab_data_mounts), so
// also without lab.json and wherever a crash left it. False when one could not be unmounted.
bool unmount_data_dirs(std::string_view name, DownReport& report,
                       std::vector<std::string>& failures) {
  auto mounts = sys::mounts();
  if (!mounts) {
    failures.push_back(mounts.error().message);
    return false;
  }
  bool ok = true;
  for (const auto& path : lab_data_mounts(*mounts, name)) {
    if (auto s = sys::unmount(path); !s) {
      failures.push_back(fmt::format(
          "{} (a host's data directory): see `findmnt {}`, unmount it (`umount -l {}`) and run "
          "`clusterctl lab down --name {}` again",
          s.error().message, path.string(), path.string(), name));
      ok = false;
    } else {
      ++report.mounts;
    }
  }
  return ok;
}

// True when nothing is mounted at or below `run` any more; otherwise each mount is a failure,
// and the directory must stay: removing it would delete through the mount.
bool nothing_mounted_below(const fs::path& run, std::string_view name,
                           std::vector<std::string>& failures) {
  auto mounts = sys::mounts();
  if (!mounts) {
    failures.push_back(mounts.error().message);
    return false;
  }
  const auto left = mounts_below(*mounts, run);
  for (const auto& m : left) {
    failures.push_back(fmt::format(
        "{} is still mounted ({} {}), so {} was kept: unmount it (`umount {}`) and run "
        "`clusterctl lab down --name {}` again",
        m.mount_point.string(), m.fstype, m.source, run.string(), m.mount_point.string(), name));
  }
  return left.empty();
}

// 4. Mounts (the UTS namespace files, each host's data tmpfs), then the runtime directory (and
// its parents when empty), only once nothing is mounted below it.
void remove_runtime(std::string_view name, const fs::path& run,
                    const std::vector<fs::path>& uts_files, DownReport& report,
                    std::vector<std::string>& failures) {
  std::error_code ec;
  bool mounts_ok = true;
  for (const auto& f : uts_files) {
    if (auto s = sys::unmount(f); !s) {
      failures.push_back(s.error().message);
      mounts_ok = false;
      continue;
    }
    if (fs::remove(f, ec)) ++report.mounts;
  }
  mounts_ok = unmount_data_dirs(name, report, failures) && mounts_ok;
  if (!mounts_ok || !fs::exists(run, ec) || !nothing_mounted_below(run, name, failures)) return;
  auto n = fs::remove_all(run, ec);
  if (n != static_cast<std::uintmax_t>(-1)) report.files += static_cast<int>(n);
  fs::remove(run.parent_path(), ec);                // /run/clusterctl/labs, when empty
  fs::remove(run.parent_path().parent_path(), ec);  // /run/clusterctl, when empty
}

// 5. Each host's own /etc files (/etc/netns/cc-NAME-hN/machine-id), found by name; a
// directory that holds anything else as well keeps it.
void remove_netns_etc(std::string_view name, DownReport& report,
                      std::vector<std::string>& failures) {
  std::error_code ec;
  for (int i = kMinHosts; i <= kMaxHosts; ++i) {
    const fs::path dir = netns_etc_dir(netns_name(name, i));
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (!is_ours(e.path().filename().string(), {"machine-id"})) continue;
      if (fs::remove(e.path(), ec)) {
        ++report.files;
      } else if (ec) {
        failures.push_back(fmt::format("cannot remove {}: {}", e.path().string(), ec.message()));
      }
    }
    fs::remove(dir, ec);  // when empty
  }
  fs::remove(netns_etc_dir(netns_name(name, kMinHosts)).parent_path(), ec);  // /etc/netns, if empty
}

}  // namespace

util::Result<fs::path> resolve_lab_dir(std::string_view name, const fs::path& dir) {
  if (dir.empty()) return remote::lab_dir(std::string(name));
  std::error_code ec;
  fs::path abs = fs::absolute(dir, ec);
  if (ec) {
    return util::error(ExitCode::kUsage, fmt::format("--dir {}: {}", dir.string(), ec.message()));
  }
  return abs.lexically_normal();
}

util::Result<DownReport> lab_down(remote::Executor& local, std::string_view name,
                                  const fs::path& dir) {
  if (auto s = validate_lab_name(name); !s) return s.error();
  if (auto s = require_root(); !s) return s.error();
  const fs::path run = runtime_dir(name);
  const std::vector<fs::path> dirs = lab_dirs(name, dir);

  // The lab's namespaces: cc-NAME-h1 .. cc-NAME-h16, and the UTS namespace files.
  std::vector<std::string> namespaces;
  std::vector<fs::path> ns_files;
  for (const auto& ns : sys::list_netns()) {
    for (int i = kMinHosts; i <= kMaxHosts; ++i) {
      if (ns == netns_name(name, i)) {
        namespaces.push_back(ns);
        ns_files.push_back(sys::netns_dir() / ns);
      }
    }
  }
  std::vector<fs::path> uts_files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run, ec)) {
    if (e.path().extension() == ".uts") uts_files.push_back(e.path());
  }
  ns_files.insert(ns_files.end(), uts_files.begin(), uts_files.end());

  DownReport report;
  std::vector<std::string> failures;
  stop_processes(ns_files, dirs, report, failures);
  remove_links(local, name, report, failures);
  remove_namespaces(local, namespaces, report, failures);
  remove_runtime(name, run, uts_files, report, failures);
  remove_netns_etc(name, report, failures);
  for (const auto& d : dirs) remove_lab_files(d, name, report);  // 6. lab directory files

  if (!failures.empty()) {
    return util::error(ExitCode::kCheckFailed,
                       fmt::format("lab '{}' was not completely removed:\n  {}", name,
                                   fmt::join(failures, "\n  ")));
  }
  return report;
}

}  // namespace cc::lab
