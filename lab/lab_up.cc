// `lab up`: plan, then create in order namespaces + bridge + veths (one ip batch), per-host
// addresses, keys and configs, data tmpfs mounts, UTS namespaces, sshd (each in a mount
// namespace of its own, with its data directory on the common path); then the client-side
// files. Any error or Ctrl-C rolls everything back with lab_down, which finds resources by name.
// All of it holds the lab's lock (lock.h), so no other clusterctl works on the lab meanwhile.
#include <thread>

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
#include "util/atomic_file.h"
#include "util/interrupt.h"

namespace cc::lab {
namespace {

using namespace std::chrono_literals;
using util::ExitCode;

constexpr const char* kSshd = "/usr/sbin/sshd";
constexpr auto kKeygenTimeout = 10s;
constexpr auto kStartTimeout = 10s;

util::Status interrupted_status() {
  if (!util::interrupted()) return {};
  return util::interrupted_error();
}

util::Status write(const fs::path& path, const std::string& content, unsigned mode = 0644) {
  return util::write_file_atomic(path, content, mode);
}

// Refuses to start over an existing lab of this name, or its remains.
util::Status check_absent(remote::Executor& local, const LabFiles& files, std::string_view name,
                          std::string_view tag) {
  auto exists = [&](std::string what) {
    return util::error(ExitCode::kUsage,
                       fmt::format("lab '{}' already exists ({}): remove it first with "
                                   "`clusterctl lab down --name {}`",
                                   name, what, name));
  };
  // Another lab directory's lab of this name (owner.h) is not this run's to remove: named, with
  // how to reach it, and no advice to tear it down from here.
  const OwnerFacts facts = gather_owner_facts(name, files.dir);
  const Owner owner = classify(facts);
  if (owner == Owner::kElsewhere || owner == Owner::kRemainsElsewhere) {
    return util::error(
        ExitCode::kUsage,
        fmt::format("lab '{}' already exists on this machine, made for another lab directory, "
                    "{} (lab names are machine-wide): choose another name, or reach that lab "
                    "with `{}`",
                    name, facts.recorded_dir.string(),
                    command_for_directory(name, facts.recorded_dir, "status")));
  }
  if (owner == Owner::kUnknown) return status_error(facts, owner, sys::is_root());
  std::error_code ec;
  if (fs::exists(files.lab_json(), ec)) return exists(files.lab_json().string());
  for (const auto& ns : sys::list_netns()) {
    for (int i = kMinHosts; i <= kMaxHosts; ++i) {
      if (ns == netns_name(name, i)) return exists("network namespace " + ns);
    }
  }
  if (fs::exists(runtime_dir(name), ec)) return exists(runtime_dir(name).string());
  auto links = list_links(local);
  if (!links) return links.error();
  for (const auto& link : *links) {
    if (!is_lab_link(tag, link.name)) continue;
    return util::error(
        ExitCode::kUsage,
        fmt::format("interface {} already exists: it belongs to lab '{}' or to another lab "
                    "whose name has the same tag ({}); try `clusterctl lab down --name {}`, or "
                    "choose another name",
                    link.name, name, link.alias.empty() ? "no alias" : link.alias, name));
  }
  return {};
}

util::Result<std::vector<Ipv4Prefix>> used_prefixes(remote::Executor& local) {
  auto routes = run_checked(local, {"ip", "-j", "-4", "route", "show", "table", "all"}, kIpTimeout);
  if (!routes) return routes.error();
  auto addrs = run_checked(local, {"ip", "-j", "-4", "addr", "show"}, kIpTimeout);
  if (!addrs) return addrs.error();
  return used_prefixes_from_ip_json(routes->out, addrs->out);
}

// ssh-keygen writes its files in place; it runs in a scratch directory, and the keys are then
// written to their final paths atomically. Returns the public key text.
util::Result<std::string> make_key(remote::Executor& local, const LabFiles& files,
                                   const std::string& id, const std::string& comment,
                                   const fs::path& key, const fs::path& pub, unsigned pub_mode) {
  fs::path scratch = files.keygen_dir() / id;
  auto r = run_checked(
      local, {"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", scratch.string()},
      kKeygenTimeout);
  if (!r) return r.error();
  auto priv_text = util::read_file(scratch);
  if (!priv_text) return priv_text.error();
  fs::path scratch_pub = scratch;
  scratch_pub += ".pub";
  auto pub_text = util::read_file(scratch_pub);
  if (!pub_text) return pub_text.error();
  if (auto s = write(key, *priv_text, 0600); !s) return s.error();
  if (auto s = write(pub, *pub_text, pub_mode); !s) return s.error();
  std::error_code ec;
  fs::remove(scratch, ec);
  fs::remove(scratch_pub, ec);
  return *pub_text;
}

util::Result<int> read_pid(const fs::path& pidfile) {
  std::error_code ec;
  if (!fs::exists(pidfile, ec)) return util::error(ExitCode::kUsage, "no pid file yet");
  auto text = util::read_file(pidfile);
  if (!text) return text.error();
  try {
    return std::stoi(*text);
  } catch (const std::exception&) {
    return util::error(ExitCode::kUsage, fmt::format("{}: not a pid", pidfile.string()));
  }
}

// A directory of the data layout (files.h): made when missing, mode 0755.
util::Status make_data_dir(const fs::path& dir, std::string_view host) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec) {
    fs::permissions(dir,
                    fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                        fs::perms::others_read | fs::perms::others_exec,
                    ec);
  }
  if (!ec) return {};
  return util::error(ExitCode::kUsage,
                     fmt::format("{}: cannot create the data directory {}: {}; check that /run "
                                 "is writable",
                                 host, dir.string(), ec.message()));
}

// Each host's data directory: a tmpfs at its per-host path, and the empty common path that its
// sshd's mount namespace puts it on (sshd_argv).
util::Status mount_data_dirs(const LabRecord& lab) {
  if (auto s = make_data_dir(lab.data_dir, "every host"); !s) return s;
  for (const auto& h : lab.hosts) {
    if (auto s = interrupted_status(); !s) return s;
    if (auto s = make_data_dir(h.data_dir, h.name); !s) return s;
    if (auto s = sys::mount_tmpfs(data_mount_source(lab.name, h.name), h.data_dir, lab.data_size);
        !s) {
      return util::error(s.error().code,
                         fmt::format("{}: {}; try a smaller --data-size, or see dmesg", h.name,
                                     s.error().message));
    }
  }
  return {};
}

// The script of each host's sshd mount namespace: bind-mounts $1 (the host's data directory)
// on $2 (the common path), then becomes the rest of its arguments (sshd). The paths arrive as
// arguments, never in the script's text.
constexpr const char* kBindDataScript = "mount --bind \"$1\" \"$2\" && shift 2 && exec \"$@\"";

// Host h's sshd: in its network namespace (`ip netns exec`, which also bind-mounts its
// /etc/netns files and mounts the namespace's /sys, in a mount namespace of its own), its UTS
// namespace, and one more mount namespace, a slave of that one (mounts made here later still
// reach it; its own stay inside), where its data directory lies on the common path. That
// namespace lives as long as sshd and its sessions.
std::vector<std::string> sshd_argv(const LabRecord& lab, const HostRecord& h, const LabFiles& files,
                                   const fs::path& uts) {
  std::vector<std::string> argv{"ip", "netns", "exec", h.netns, "nsenter", "--uts=" + uts.string()};
  argv.insert(argv.end(), {"unshare", "--mount", "--propagation", "slave"});
  argv.insert(argv.end(), {"sh", "-c", kBindDataScript, "sh", h.data_dir, lab.data_dir});
  argv.insert(argv.end(), {kSshd, "-f", files.sshd_config(h.name).string(), "-E",
                           files.sshd_log(h.name).string()});
  return argv;
}

// Starts host h's sshd in its network, UTS and mount namespaces (sshd_argv).
util::Status start_sshd(remote::Executor& local, const LabRecord& lab, const HostRecord& h,
                        const LabFiles& files) {
  std::error_code ec;
  fs::path uts = runtime_dir(lab.name) / (h.name + ".uts");
  if (auto s = write(uts, ""); !s) return s;  // the mount point of the UTS namespace
  auto r =
      run_checked(local, {"unshare", "--uts=" + uts.string(), "hostname", h.name}, kStartTimeout);
  if (!r) return r.error();
  const fs::path home = files.host_home(h.name);  // $HOME there (see sshd_config)
  fs::create_directories(home, ec);
  fs::permissions(home, fs::perms::owner_all, ec);
  if (ec) {
    return util::error(ExitCode::kUsage,
                       fmt::format("cannot create {}: {}", home.string(), ec.message()));
  }
  r = run_checked(local, sshd_argv(lab, h, files, uts), kStartTimeout);
  if (!r) {
    return util::error(r.error().code,
                       fmt::format("{}: sshd did not start: {}", h.name, r.error().message));
  }
  return {};
}

// Starts every host's sshd and waits for the pid files, which sshd writes once it listens.
util::Status start_sshds(remote::Executor& local, LabRecord& lab, const LabFiles& files,
                         const Progress& progress) {
  std::error_code ec;
  fs::create_directories("/run/sshd", ec);  // sshd's privilege separation directory
  for (const auto& h : lab.hosts) {
    if (auto s = interrupted_status(); !s) return s;
    if (auto s = start_sshd(local, lab, h, files); !s) return s;
  }
  if (progress) progress(fmt::format("waiting for sshd on {} hosts", lab.hosts.size()));
  auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  for (auto& h : lab.hosts) {
    for (;;) {
      if (auto s = interrupted_status(); !s) return s;
      auto pid = read_pid(files.sshd_pid(h.name));
      if (pid && sys::alive(*pid)) {
        h.sshd_pid = *pid;
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return util::error(ExitCode::kUsage,
                           fmt::format("{}: sshd did not write {} within {} s; see {}", h.name,
                                       files.sshd_pid(h.name).string(), kStartTimeout.count(),
                                       files.sshd_log(h.name).string()));
      }
      std::this_thread::sleep_for(10ms);
    }
  }
  return {};
}

// Waits until every cabled port (and the management interface) of every host is operationally
// UP. The kernel reports carrier asynchronously (linkwatch), so right after `ip link set up` a
// veth can still read NO-CARRIER; `lab up` returns only once the cabling is really there.
util::Status wait_for_carrier(remote::Executor& local, const LabPlan& plan) {
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  for (const auto& h : plan.hosts) {
    for (;;) {
      auto links = list_links(local, h.netns);
      if (!links) return links.error();
      std::vector<std::string> down;
      for (const auto& l : *links) {
        bool free_port = false;  // unplugged by design: up without carrier
        for (int p = h.ports + 1; p <= h.receptacles; ++p) free_port |= l.name == port_name(p);
        if (l.name != "lo" && !free_port && l.operstate != "UP") down.push_back(l.name);
      }
      if (down.empty()) break;
      if (auto s = interrupted_status(); !s) return s;
      if (std::chrono::steady_clock::now() >= deadline) {
        return util::error(
            ExitCode::kUsage,
            fmt::format("{}: {} still without carrier after {} s (see `ip -n {} "
                        "link`)",
                        h.name, fmt::join(down, ", "), kStartTimeout.count(), h.netns));
      }
      std::this_thread::sleep_for(20ms);
    }
  }
  return {};
}

util::Status build(remote::Executor& local, const LabPlan& plan, LabRecord& lab,
                   const LabFiles& files, const Progress& progress) {
  auto step = [&](std::string text) -> util::Status {
    if (progress) progress(text);
    return interrupted_status();
  };
  // A record first, so that even a crash from here on leaves a trace (lab_down needs none).
  if (auto s = write(runtime_dir(lab.name) / "lab_dir", files.dir.string() + "\n"); !s) return s;
  if (auto s = write(files.lab_json(), lab_json_text(lab)); !s) return s;

  if (auto s = step(
          fmt::format("creating {} hosts and {} cables", plan.hosts.size(), plan.cables.size()));
      !s) {
    return s;
  }
  if (auto r = run_checked(local, {"ip", "-batch", "-"}, kIpTimeout, root_batch(plan)); !r) {
    return r.error();
  }
  for (const auto& h : plan.hosts) {
    // No duplicate address detection on the lab's links (every MAC is unique by construction):
    // IPv6 link-local addresses are usable the moment a port is up, as on a Mac whose cables
    // have long been plugged, so discovery's neighbour probe works right after `lab up`.
    auto dad = run_checked(local, dad_off_command(plan, h), kIpTimeout);
    if (!dad) return dad.error();
    auto r =
        run_checked(local, {"ip", "-n", h.netns, "-batch", "-"}, kIpTimeout, host_batch(plan, h));
    if (!r) return r.error();
  }

  if (auto s = step("making SSH keys"); !s) return s;
  std::error_code ec;
  fs::remove_all(files.keygen_dir(), ec);
  fs::create_directories(files.keygen_dir(), ec);
  if (ec) {
    return util::error(ExitCode::kUsage, fmt::format("cannot create {}: {}",
                                                     files.keygen_dir().string(), ec.message()));
  }
  auto user = make_key(local, files, "user", fmt::format("clusterctl lab {}", lab.name),
                       files.user_key(), files.user_pub(), 0600);
  if (!user) return user.error();
  std::map<std::string, std::string> host_keys;
  for (auto& h : lab.hosts) {
    if (auto s = interrupted_status(); !s) return s;
    auto pub = make_key(local, files, h.name, fmt::format("{}@clusterctl-lab-{}", h.name, lab.name),
                        files.host_key(h.name), files.host_pub(h.name), 0644);
    if (!pub) return pub.error();
    host_keys[h.name] = *pub;
    if (auto s = write(files.sshd_config(h.name), render_sshd_config(lab, h, files)); !s) return s;
    // Its own machine ID, as a separate machine has (read by discovery to tell machines apart),
    // bind-mounted over /etc/machine-id by `ip netns exec` when its sshd starts.
    h.machine_id = random_machine_id();
    if (auto s = write(netns_etc_dir(h.netns) / "machine-id", h.machine_id + "\n", 0444); !s) {
      return s;
    }
  }
  fs::remove_all(files.keygen_dir(), ec);

  if (auto s = step(fmt::format("mounting {} data directories of {} each", lab.hosts.size(),
                                format_data_size(lab.data_size)));
      !s) {
    return s;
  }
  if (auto s = mount_data_dirs(lab); !s) return s;
  if (auto s = step(fmt::format("starting sshd on {} hosts", lab.hosts.size())); !s) return s;
  if (auto s = start_sshds(local, lab, files, progress); !s) return s;
  if (auto s = wait_for_carrier(local, plan); !s) return s;

  auto known = render_known_hosts(lab, host_keys);
  if (!known) return known.error();
  if (auto s = write(files.known_hosts(), *known); !s) return s;
  if (auto s = write(files.ssh_config(), render_ssh_config(lab, files)); !s) return s;
  if (auto s = remote::save_inventory(files.inventory(), lab_inventory(lab, files)); !s) return s;
  lab.state = "up";
  return write(files.lab_json(), lab_json_text(lab));
}

}  // namespace

util::Status require_root() {
  if (sys::is_root()) return {};
  return util::error(ExitCode::kUsage,
                     "must run as root: the lab creates network namespaces, veth links, a bridge "
                     "and sshd processes (run it as root, e.g. with sudo)");
}

util::Result<LabRecord> lab_up(remote::Executor& local, const UpOptions& options,
                               const Progress& progress) {
  if (auto s = validate_lab_name(options.name); !s) return s.error();
  if (auto s = require_root(); !s) return s.error();
  if (options.data_size < kMinDataSize) {
    return util::error(ExitCode::kUsage,
                       fmt::format("data size {} bytes is below the minimum: give --data-size "
                                   "1M or more",
                                   options.data_size));
  }
  auto topology = resolve_topology(options.topology);
  if (!topology) return topology.error();
  auto dir = resolve_lab_dir(options.name, options.dir);
  if (!dir) return dir.error();
  if (auto s = check_lab_dir_path(*dir); !s) return s.error();
  // One clusterctl at a time on this lab (lock.h), from before it looks at the machine: a second
  // `lab up` at the same moment waits, then finds this one's lab and says it exists.
  auto lock = acquire_lock(lock_path(options.name), options.name, "up", kLockWait, options.waiting);
  if (!lock) return lock.error();
  LabFiles files{*dir};
  const std::string tag = lab_tag(options.name);
  // A Ctrl-C or SIGTERM before anything is made ends here, named as a rollback's is (it said
  // "local: interrupted (Ctrl-C); `ip` was killed" of the `ip` it cut short).
  auto not_begun = [&](util::Error e) {
    if (!util::interrupted()) return e;
    return util::interrupted_error(fmt::format("; nothing of lab '{}' was made yet", options.name));
  };
  if (auto s = check_absent(local, files, options.name, tag); !s) return not_begun(s.error());
  auto used = used_prefixes(local);
  if (!used) {
    lock->remove_file();  // nothing was made
    return not_begun(used.error());
  }
  auto plan = make_plan(options.name, *topology, *used);
  if (!plan) {
    lock->remove_file();
    return not_begun(plan.error());
  }
  LabRecord lab = record_from_plan(*plan, files.dir.string(), options.data_size);

  util::Status built = build(local, *plan, lab, files, progress);
  if (built) return lab;

  // Roll back, with the Ctrl-C set aside (the executor refuses to run while it is set); it is
  // set back afterwards (main() then exits 130).
  bool was_interrupted = false;
  auto down = [&] {
    const util::InterruptSetAside aside;
    was_interrupted = aside.was_interrupted();
    if (progress) progress("rolling back");
    return lab_down_locked(*lock, local, options.name, files.dir, false);
  }();
  if (down) lock->remove_file();  // nothing of the lab is left
  util::Error e = built.error();
  if (was_interrupted) {
    e = util::error(ExitCode::kInterrupted, fmt::format("{}; lab '{}' was rolled back",
                                                        util::interruption(), options.name));
  } else {
    e.message += fmt::format("\nlab '{}' was rolled back", options.name);
  }
  if (!down) {
    e.message += fmt::format(", but not completely: {}", down.error().message);
  }
  return e;
}

}  // namespace cc::lab
