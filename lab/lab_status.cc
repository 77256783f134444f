// `lab status`: lab.json plus a live look at each host's namespace, sshd and data mount; without
// a lab.json here, owner.h tells another lab directory's lab from remains.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "lab/data.h"
#include "lab/files.h"
#include "lab/lab.h"
#include "lab/lock.h"
#include "lab/owner.h"
#include "lab/plan.h"
#include "lab/system.h"
#include "util/atomic_file.h"

namespace cc::lab {

bool LabStatus::all_up() const {
  return lab.state == "up" && std::all_of(hosts.begin(), hosts.end(), [](const HostStatus& h) {
           return h.netns_present && h.sshd_running;
         });
}

util::Result<LabStatus> lab_status(std::string_view name, const fs::path& dir) {
  if (auto s = validate_lab_name(name); !s) return s.error();
  auto resolved = resolve_lab_dir(name, dir);
  if (!resolved) return resolved.error();
  LabFiles files{*resolved};
  std::error_code ec;
  // Whose lab it is (owner.h): a lab of another lab directory is named, not taken for remains.
  const OwnerFacts facts = gather_owner_facts(name, files.dir);
  // A `lab up` or `lab down` under way (lock.h) is said as such, not taken for remains.
  const std::optional<LockHolder> busy = lock_holder(lock_path(name), name);
  if (const Owner owner = classify(facts); owner != Owner::kHere) {
    if (busy) {
      // Being created (or removed) by another clusterctl: that, with its pid, not "none".
      LabStatus status;
      status.lab.name = std::string(name);
      status.lab.state = busy->state;
      status.dir = files.dir;
      status.busy = busy;
      status.recorded = false;
      return status;
    }
    return status_error(facts, owner, sys::is_root());
  }
  auto text = util::read_file(files.lab_json());
  if (!text) return text.error();
  auto record = parse_lab_json(*text, files.lab_json().string());
  if (!record) return record.error();

  LabStatus status{*record, files.dir, {}, busy};
  std::vector<MountEntry> mounts;  // without a mount table, no data directory reads as mounted
  if (auto m = sys::mounts()) mounts = std::move(*m);
  for (const auto& h : record->hosts) {
    HostStatus hs{h, false, false, h.sshd_pid, false};
    hs.data_mounted = !h.data_dir.empty() &&
                      std::any_of(mounts.begin(), mounts.end(),
                                  [&](const MountEntry& m) { return m.mount_point == h.data_dir; });
    fs::path ns = sys::netns_dir() / h.netns;
    hs.netns_present = fs::exists(ns, ec);
    if (auto pid = util::read_file(files.sshd_pid(h.name))) {
      try {
        hs.sshd_pid = std::stoi(*pid);
      } catch (const std::exception&) {
      }
    }
    if (hs.netns_present && sys::alive(hs.sshd_pid) && sys::comm(hs.sshd_pid) == "sshd") {
      // Without permission to look at its namespace, a live sshd of that pid is taken as ours.
      hs.sshd_running = sys::in_network_namespace(hs.sshd_pid, ns).value_or(true);
    }
    status.hosts.push_back(std::move(hs));
  }
  return status;
}

}  // namespace cc::lab
