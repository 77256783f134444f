// `clusterctl rdma enable`: the guided walk through macOS Recovery that enables RDMA on each Mac
// that needs it, one Mac at a time. RDMA over Thunderbolt can be enabled only from macOS
// Recovery, never over SSH (docs/platform.md#enabling-rdma-on-a-mac), so the tool prints the
// physical steps and watches the Mac over SSH:
//
//   (pending) --steps printed--> waiting-down --unreachable--> waiting-up --back on SSH--> verify
//       verify: rdma_ctl enabled + ibv_devices lists devices  -> done (next Mac)
//               enabled but no devices (or no rdma_ctl)      -> failed (next Mac; exit 1)
//               still disabled                                -> steps again, waiting-down
//   waiting-down: a Mac found back with RDMA enabled (it rebooted between two polls) is verified.
//
// Each Mac has `timeout` (default 20 min, restarted on a resume or a second attempt) from its
// steps to being back on SSH; on expiry the walk stops with a message (exit 1 when it never went
// down, 3 when it never came back) and a re-run resumes it. Every poll re-probes the Mac
// (MacProber: `rdma_ctl status`, `ibv_devices`), then sleeps `poll_interval` in slices of at most
// 100 ms, drawing a spinner with the elapsed time and polling util::interrupted(): Ctrl-C ends
// the walk with kInterrupted.
//
// Resume. The phase of each Mac is saved (atomically, util::write_file_atomic) in a state file at
// every change, so Ctrl-C and a re-run continue where the walk stopped: a Mac saved as
// waiting-down or waiting-up is walked first, from that phase, even when the cluster state could
// not probe it (it is in macOS Recovery). State file (schema "clusterctl.rdma-enable/1"):
//   {"schema": "clusterctl.rdma-enable/1", "updated_at": "2026-11-30T18:00:00Z",
//    "macs": {"a": {"phase": "waiting-up", "since": "2026-11-30T17:58:00Z", "note": ""}}}
// Default path: rdma-enable.json beside the cluster state file when one is given, else
// ${XDG_STATE_HOME:-~/.local/state}/clusterctl/rdma-enable.json.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/cluster_state.h"
#include "discovery/fix_command.h"
#include "provision/rdma_probe.h"
#include "util/clock.h"
#include "util/exit_code.h"
#include "util/result.h"

namespace cc::provision {

inline constexpr const char* kRdmaEnableStateSchema = "clusterctl.rdma-enable/1";

enum class MacPhase { kPending, kWaitingDown, kWaitingUp, kDone, kFailed };
const char* to_string(MacPhase p);  // "pending", "waiting-down", "waiting-up", "done", "failed"

struct MacProgress {
  MacPhase phase = MacPhase::kPending;
  std::string since;  // ISO 8601 UTC: when the phase began
  std::string note;   // why it failed, or ""
};

struct EnableState {
  std::map<std::string, MacProgress> macs;  // by host
};

/// The saved state; an empty one when the file does not exist. Errors (kUsage): unreadable
/// file, invalid JSON, another schema, an unknown phase; the message names the file and says
/// to delete it to start over.
util::Result<EnableState> load_enable_state(const std::filesystem::path& path);
/// Writes it atomically (util::write_file_atomic), with updated_at = now.
util::Status save_enable_state(const EnableState& state, const std::filesystem::path& path);
/// The default path (header comment); `cluster_file` is "" when none was given.
std::filesystem::path default_enable_state_path(const std::string& cluster_file);

/// Which Macs the walk covers, from a cluster state and the saved progress. Pure.
struct EnablePlan {
  std::vector<std::string> walk;     // resumed Macs first (saved waiting-down/-up), then every
                                     // Mac whose rdma_ctl says disabled, in cluster order
  std::vector<std::string> enabled;  // Macs with RDMA enabled (not resumed)
  struct Blocked {
    std::string host;
    std::string reason;  // "macOS 15.6 is older than 26.2: update it first"
  };
  std::vector<Blocked> blocked;  // Macs that cannot be enabled: OS too old, no rdma_ctl,
                                 // unknown, Thunderbolt 4 only (enabled, no use)
  std::vector<discovery::HostProblem> unreachable;  // not probed and not resumed
  std::vector<std::string> linux_hosts;             // non-Mac hosts (for --soft-roce)
};
/// The commands its reasons suggest name the cluster as `fix` says.
EnablePlan plan_enable(const discovery::ClusterState& state, const EnableState& saved,
                       const discovery::FixCommand& fix);

/// The physical steps for `host`, one numbered line each (header comment of the file).
std::vector<std::string> recovery_steps(const std::string& host);

/// Time, behind an interface so the tests run the walk on a fake clock (util/clock.h).
using util::Clock;
using util::SteadyClock;

/// Where the walk's words go: permanent lines (the steps, each event) and one transient status
/// line (spinner and elapsed time: shown only on a TTY; cli/ decides).
class WalkConsole {
 public:
  virtual ~WalkConsole() = default;
  virtual void say(std::string_view line) = 0;
  virtual void status(std::string_view line) = 0;
  virtual void clear_status() = 0;
};

struct WalkOptions {
  std::chrono::milliseconds timeout{20 * 60 * 1000};  // per Mac and attempt
  std::chrono::milliseconds poll_interval{2000};      // between two re-probes
  std::filesystem::path state_path;                   // where progress is saved
  /// What the operator runs to resume the walk and to check the ports afterwards, runnable as
  /// printed (cli/ gives them the cluster, the --lab and the --state in use:
  /// discovery::FixCommand).
  std::string resume_command = "clusterctl rdma enable";
  std::string status_command = "clusterctl rdma status";
};

struct WalkResult {
  util::ExitCode code = util::ExitCode::kOk;  // worst outcome; kInterrupted on Ctrl-C
  std::vector<std::string> enabled;           // Macs verified enabled by this walk
  std::vector<std::string> failed;            // Macs that came back without RDMA devices
};

class Walkthrough {
 public:
  Walkthrough(MacProber& prober, Clock& clock, WalkConsole& console, WalkOptions opts)
      : prober_(prober), clock_(clock), console_(console), opts_(std::move(opts)) {}

  /// Walks `macs` (EnablePlan::walk) in order, each from its phase in `state`, saving `state`
  /// at every change. Stops at the first timeout, probe error or Ctrl-C; goes on to the next Mac
  /// after a failed verification.
  WalkResult run(const std::vector<std::string>& macs, EnableState& state);

 private:
  enum class Step { kDone, kFailed, kStop };
  Step walk_one(const std::string& host, std::size_t n, std::size_t of, EnableState& state,
                WalkResult& result);
  /// The Mac is reachable with RDMA not disabled: done, or failed (next Mac).
  Step verify(const std::string& host, const MacRdma& probe, EnableState& state,
              WalkResult& result);
  util::Result<MacRdma> probe_with_spinner(const std::string& host, std::string_view waiting,
                                           std::chrono::steady_clock::time_point since);
  /// Sleeps one poll interval, drawing the spinner; false when interrupted.
  bool pause(std::string_view waiting, const std::string& host,
             std::chrono::steady_clock::time_point since);
  void draw(std::string_view waiting, const std::string& host,
            std::chrono::steady_clock::time_point since);
  util::Status set_phase(EnableState& state, const std::string& host, MacPhase phase,
                         std::string note = {});
  void print_steps(const std::string& host);
  std::string interrupted_message() const;

  MacProber& prober_;
  Clock& clock_;
  WalkConsole& console_;
  WalkOptions opts_;
  unsigned frame_ = 0;
};

/// "0:07", "12:34", "1:02:03".
std::string format_elapsed(std::chrono::milliseconds d);

}  // namespace cc::provision
