// The walkthrough's plan (which Macs), its steps, and its state file (rdma_enable.h).
#include <cstdlib>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "discovery/discover.h"
#include "provision/rdma_enable.h"
#include "provision/rdma_status.h"
#include "topology/graph.h"
#include "topology/rdma_port.h"
#include "util/atomic_file.h"
#include "util/clock.h"
#include "util/json_text.h"

namespace cc::provision {
namespace {

using util::ExitCode;

std::optional<MacPhase> phase_from(const std::string& s) {
  for (MacPhase p : {MacPhase::kPending, MacPhase::kWaitingDown, MacPhase::kWaitingUp,
                     MacPhase::kDone, MacPhase::kFailed}) {
    if (s == to_string(p)) return p;
  }
  return std::nullopt;
}

bool mid_walk(const EnableState& saved, const std::string& host) {
  auto it = saved.macs.find(host);
  return it != saved.macs.end() &&
         (it->second.phase == MacPhase::kWaitingDown || it->second.phase == MacPhase::kWaitingUp);
}

}  // namespace

const char* to_string(MacPhase p) {
  switch (p) {
    case MacPhase::kPending:
      return "pending";
    case MacPhase::kWaitingDown:
      return "waiting-down";
    case MacPhase::kWaitingUp:
      return "waiting-up";
    case MacPhase::kDone:
      return "done";
    case MacPhase::kFailed:
      return "failed";
  }
  return "pending";
}

util::Result<EnableState> load_enable_state(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return EnableState{};
  auto text = util::read_file(path);
  if (!text) return text.error();
  const std::string start_over = fmt::format("delete {} to start over", path.string());
  EnableState state;
  try {
    const auto j = nlohmann::json::parse(*text);
    if (!j.is_object() || j.value("schema", "") != kRdmaEnableStateSchema) {
      return util::error(
          ExitCode::kUsage,
          fmt::format("{}: not a `clusterctl rdma enable` state file (schema {}): {}",
                      path.string(), kRdmaEnableStateSchema, start_over));
    }
    for (const auto& [host, m] : j.at("macs").items()) {
      auto phase = phase_from(m.at("phase").get<std::string>());
      if (!phase) {
        return util::error(ExitCode::kUsage,
                           fmt::format("{}: macs.{}.phase: unknown phase '{}': {}", path.string(),
                                       host, m.at("phase").get<std::string>(), start_over));
      }
      state.macs[host] = {*phase, m.value("since", ""), m.value("note", "")};
    }
  } catch (const nlohmann::json::exception& e) {
    return util::error(ExitCode::kUsage,
                       fmt::format("{}: {}: {}", path.string(), e.what(), start_over));
  }
  return state;
}

util::Status save_enable_state(const EnableState& state, const std::filesystem::path& path) {
  nlohmann::json macs = nlohmann::json::object();
  for (const auto& [host, m] : state.macs) {
    macs[host] = {{"phase", to_string(m.phase)}, {"since", m.since}, {"note", m.note}};
  }
  const nlohmann::json j = {{"schema", kRdmaEnableStateSchema},
                            {"updated_at", util::utc_now_iso()},
                            {"macs", macs}};
  return util::write_file_atomic(path, util::json_text(j, 2) + "\n", 0600);
}

std::filesystem::path default_enable_state_path(const std::string& cluster_file) {
  if (!cluster_file.empty()) {
    return std::filesystem::path(cluster_file).parent_path() / "rdma-enable.json";
  }
  const char* xdg = std::getenv("XDG_STATE_HOME");
  std::filesystem::path base;
  if (xdg != nullptr && xdg[0] != '\0') {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    base = std::filesystem::path(home != nullptr ? home : ".") / ".local" / "state";
  }
  return base / "clusterctl" / "rdma-enable.json";
}

EnablePlan plan_enable(const discovery::ClusterState& state, const EnableState& saved,
                       const discovery::FixCommand& fix) {
  EnablePlan plan;
  for (const auto& h : state.hosts) {  // resumed Macs first: the operator is at one of them
    if (topology::is_mac(h) && mid_walk(saved, h.host)) plan.walk.push_back(h.host);
  }
  for (const auto& p : state.problems) {
    if (mid_walk(saved, p.host)) {
      plan.walk.push_back(p.host);
    } else {
      plan.unreachable.push_back(p);
    }
  }
  for (const auto& h : state.hosts) {
    if (!topology::is_mac(h)) {
      plan.linux_hosts.push_back(h.host);
      continue;
    }
    if (mid_walk(saved, h.host)) continue;
    if (!macos_at_least(h.os.version, 26, 2)) {
      plan.blocked.push_back(
          {h.host, fmt::format("macOS {} is older than 26.2: update it first", h.os.version)});
      continue;
    }
    switch (h.rdma.state) {
      case discovery::RdmaState::kDisabled:
        plan.walk.push_back(h.host);
        break;
      case discovery::RdmaState::kEnabled:
        if (topology::thunderbolt4_only(h)) {
          plan.blocked.push_back(
              {h.host,
               "Thunderbolt 4 hardware only (RDMA enabled, no RDMA device, every link below 80 "
               "Gb/s): RDMA over Thunderbolt needs Thunderbolt 5, so macOS Recovery cannot help; "
               "it can use TCP over its cables"});
        } else {
          plan.enabled.push_back(h.host);
        }
        break;
      case discovery::RdmaState::kUnsupported:
        plan.blocked.push_back(
            {h.host, "no rdma_ctl: RDMA over Thunderbolt needs Apple silicon and Thunderbolt 5"});
        break;
      case discovery::RdmaState::kUnknown:
        plan.blocked.push_back(
            {h.host, fmt::format("its RDMA state was not read: run `{}` again", fix.rediscover())});
        break;
    }
  }
  return plan;
}

std::vector<std::string> recovery_steps(const std::string& host) {
  return {
      fmt::format("1. Shut down {}: Apple menu > Shut Down (or `sudo shutdown -h now` over SSH), "
                  "and wait until it is off.",
                  host),
      "2. Press and hold the power button until \"Loading startup options\" appears, then let go.",
      "3. Click Options, then Continue.",
      "4. If asked, pick a user and enter its password.",
      "5. In the menu bar, choose Utilities > Terminal.",
      "6. Type `rdma_ctl enable` and press Return.",
      "7. Reboot: type `reboot` and press Return.",
  };
}

}  // namespace cc::provision
