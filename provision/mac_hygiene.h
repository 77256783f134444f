// The cluster hygiene settings a Mac in an RDMA cluster needs
// (docs/platform.md#mac-cluster-hygiene): it must never sleep (nothing wakes it over Thunderbolt),
// must start up by itself after a power failure, and must log in automatically (so its jobs' user
// session comes back after a restart). `clusterctl rdma enable` checks them on each Mac and prints
// the command that fixes each.
//
// Probes (argv, run through remote::Executor without a shell; replayed from a bundle under the
// same keys as discovery's probes, remote::replay_key):
//   pmset -g              key pmset_-g
//       " sleep                1 (sleep prevented by sharingd)"  -> the sleep timer, minutes;
//       0 = never. " autorestart          1" (desktops) -> restart after power failure.
//   systemsetup -getrestartpowerfailure     key systemsetup_-getrestartpowerfailure
//       "Restart After Power Failure: On" | "Off" | "... Not supported on this machine."
//       (systemsetup wants administrator rights: "You need administrator access to run this
//       tool... exiting!"; then pmset's autorestart line answers instead.)
//   defaults read /Library/Preferences/com.apple.loginwindow autoLoginUser
//       key defaults_read_Library_Preferences_com.apple.loginwindow_autoLoginUser
//       the user name (exit 0), or exit 1 "The domain/default pair of (...) does not exist".
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/command_outcome.h"
#include "remote/executor.h"
#include "util/result.h"

namespace cc::provision {

/// The probes above, in the order they run.
std::vector<std::string> pmset_argv();
std::vector<std::string> restart_power_failure_argv();
std::vector<std::string> auto_login_argv();

struct HygieneItem {
  enum class Status {
    kOk,           // set as a cluster needs
    kFix,          // not set: `fix` says how
    kUnknown,      // could not be read: `detail` says why
    kUnsupported,  // this Mac has no such setting (restart after power failure on a laptop)
  };
  std::string setting;  // "sleep", "restart-after-power-failure", "auto-login"
  Status status = Status::kUnknown;
  std::string detail;  // "sleep 10 (minutes)", "Restart After Power Failure: Off"
  std::string fix;     // the command (or settings path) that fixes it; "" unless kFix
};

const char* to_string(HygieneItem::Status s);  // "ok", "fix", "unknown", "unsupported"

/// Pure parsers of the probes' outcomes (each never fails: unreadable output is kUnknown).
HygieneItem sleep_item(const discovery::RawOutput& pmset);
HygieneItem restart_item(const discovery::RawOutput& systemsetup,
                         const discovery::RawOutput& pmset);
HygieneItem auto_login_item(const discovery::RawOutput& defaults);

/// Runs the three probes on a Mac and parses them. Errors: kUnreachable (the host cannot be
/// reached) and kInterrupted only; a missing, failing or timed-out command, or one not recorded
/// in a replayed bundle, is a kUnknown item saying why.
util::Result<std::vector<HygieneItem>> check_hygiene(remote::Executor& ex,
                                                     std::chrono::milliseconds timeout);

}  // namespace cc::provision
