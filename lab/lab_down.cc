// `lab down`: finds a lab's resources by name and tag (lab.json only adds sshd pids), then
// removes them in dependency order: processes (TERM, then KILL; each sshd's mount namespace
// goes with them), root-namespace links (bridge, management veths), namespaces (which take the
// cable veths with them), UTS mounts and each host's data tmpfs, runtime files, each host's
// /etc/netns files and lab-directory files. Each step tolerates what an interrupted `lab up` may
// have left half made, and a second run finds nothing and succeeds.
// Before anything, owner.h: a lab that the machine's record gives to another lab directory (another
// state directory, --dir or user) is refused unless --other-state, and files are only ever
// removed from this run's own lab directory, never from a recorded path.
#include <algorithm>
#include <csignal>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lab/commands.h"
#include "lab/data.h"
#include "lab/files.h"
#include "lab/lab.h"
#include "lab/lock.h"
#include "lab/owner.h"
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

// True when `p` itself (lstat, not followed) is a directory: `lab up` makes real directories,
// so a symbolic link in their place was planted by someone else and is never deleted through.
bool real_directory(const fs::path& p) {
  std::error_code ec;
  return fs::symlink_status(p, ec).type() == fs::file_type::directory;
}

// Removes the files `lab up` writes in `dir` (and nothing else), then the directories that are
// left empty. A directory whose lab.json names another lab is left alone, and so is a symbolic
// link where `lab up` makes a directory (its target is not the lab's).
void remove_lab_files(const fs::path& dir, std::string_view name, DownReport& report) {
  std::error_code ec;
  if (fs::is_symlink(dir, ec)) {
    report.kept.push_back(fmt::format(
        "{} (a symbolic link, not the directory `lab up` makes: remove it by hand if it is yours)",
        dir.string()));
    return;
  }
  if (!real_directory(dir)) return;
  if (auto text = util::read_file(LabFiles{dir}.lab_json())) {
    auto rec = parse_lab_json(*text, LabFiles{dir}.lab_json().string());
    if (rec && rec->name != name) {
      report.kept.push_back(fmt::format("{} (its lab.json is lab '{}')", dir.string(), rec->name));
      return;
    }
  }
  auto remove_ours = [&](const fs::path& d, const std::vector<std::string>& names) {
    for (const auto& e : fs::directory_iterator(d, ec)) {
      // symlink_status: a link named like one of ours is not ours (fs::remove would only drop
      // the link, but it is not counted as the lab's file either).
      if (e.symlink_status(ec).type() == fs::file_type::regular &&
          is_ours(e.path().filename().string(), names) && fs::remove(e.path(), ec)) {
        ++report.files;
      }
    }
  };
  auto remove_if_empty = [&](const fs::path& d) {
    if (!real_directory(d)) return;
    if (fs::is_empty(d, ec)) {
      fs::remove(d, ec);
    } else {
      report.kept.push_back(d.string() + " (it holds files that `lab up` did not make)");
    }
  };
  remove_ours(dir, lab_dir_file_names());
  fs::path keygen = LabFiles{dir}.keygen_dir();
  if (real_directory(keygen)) {
    auto n = fs::remove_all(keygen, ec);
    if (n != static_cast<std::uintmax_t>(-1)) report.files += static_cast<int>(n);
  }
  fs::path hosts = LabFiles{dir}.hosts_dir();
  if (real_directory(hosts)) {
    for (const auto& e : fs::directory_iterator(hosts, ec)) {
      if (!real_directory(e.path()) || !is_host_dir_name(e.path().filename().string())) continue;
      // The host's home holds whatever was done on the host: all of it is the lab's.
      fs::path home = LabFiles{dir}.host_home(e.path().filename().string());
      if (real_directory(home)) {
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
  // "Cannot remove namespace file ...: No such file or directory" for a namespace that went
  // away meanwhile is fine: what counts is whether any is left afterwards.
  auto r = run_checked(local, {"ip", "-force", "-batch", "-"}, kIpTimeout, batch,
                       ExitCode::kCheckFailed);
  std::error_code ec;
  for (const auto& ns : namespaces) {
    if (fs::exists(sys::netns_dir() / ns, ec)) {
      failures.push_back(fmt::format("network namespace {} is still there{}", ns,
                                     r ? "" : ": " + r.error().message));
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
    if (!real_directory(dir)) continue;  // a symbolic link there is not `lab up`'s
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
                                  const fs::path& dir, bool other_state, const Progress& waiting) {
  if (auto s = validate_lab_name(name); !s) return s.error();
  if (auto s = require_root(); !s) return s.error();
  // One clusterctl at a time on this lab (lock.h): a second `lab down` finds nothing left.
  auto lock = acquire_lock(lock_path(name), name, "down", kLockWait, waiting);
  if (!lock) return lock.error();
  auto report = lab_down_locked(*lock, local, name, dir, other_state);
  if (report) lock->remove_file();  // the lab is gone from this machine: its lock file too
  return report;
}

util::Result<DownReport> lab_down_locked(const LabLock& /*held*/, remote::Executor& local,
                                         std::string_view name, const fs::path& dir,
                                         bool other_state) {
  if (auto s = validate_lab_name(name); !s) return s.error();
  if (auto s = require_root(); !s) return s.error();
  const fs::path run = runtime_dir(name);
  auto own = resolve_lab_dir(name, dir);
  if (!own) return own.error();
  // Whose lab it is (owner.h): another lab directory's is refused, nothing removed.
  const OwnerFacts facts = gather_owner_facts(name, *own);
  const Owner owner = classify(facts);
  if (auto s = check_down_allowed(facts, owner, other_state); !s) return s.error();
  // Files are removed from this run's own lab directory only. The recorded one (with
  // --other-state) only lends its pid files to find sshd processes, each checked to be that
  // directory's sshd; its files are kept.
  const std::vector<fs::path> dirs{*own};
  std::vector<fs::path> pid_dirs{*own};
  DownReport report;
  if (facts.record_readable && !facts.recorded_is_dir) {
    pid_dirs.push_back(facts.recorded_dir);
    report.kept.push_back(fmt::format(
        "{} (the lab directory of another state directory: its files are removed only from "
        "there, with `{}`)",
        facts.recorded_dir.string(), command_for_directory(name, facts.recorded_dir, "down")));
  }

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

  std::vector<std::string> failures;
  stop_processes(ns_files, pid_dirs, report, failures);
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
