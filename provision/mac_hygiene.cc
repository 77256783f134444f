#include "provision/mac_hygiene.h"

#include <charconv>

#include <fmt/format.h>

#include "provision/rdma_probe.h"

namespace cc::provision {
namespace {

using discovery::RawOutput;
using Status = HygieneItem::Status;

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

// The first line of `text`, trimmed (for messages).
std::string first_line(std::string_view text) {
  text = trim(text);
  return std::string(trim(text.substr(0, text.find('\n'))));
}

// The integer value of `key` in `pmset -g` ("  sleep   1 (sleep prevented by ...)"); the key is
// the first word of a line, matched exactly (so "Sleep On Power Button" is not "sleep").
std::optional<int> pmset_value(std::string_view out, std::string_view key) {
  while (!out.empty()) {
    const auto nl = out.find('\n');
    std::string_view line = trim(out.substr(0, nl));
    out = nl == std::string_view::npos ? std::string_view() : out.substr(nl + 1);
    const auto sp = line.find_first_of(" \t");
    if (sp == std::string_view::npos || line.substr(0, sp) != key) continue;
    std::string_view rest = trim(line.substr(sp));
    int v = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
    if (ec == std::errc() && (end == rest.data() + rest.size() || *end == ' ' || *end == '\t')) {
      return v;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::string not_read(const RawOutput& r, std::string_view command) {
  if (r.exit_status == -1) return fmt::format("`{}` did not run: {}", command, first_line(r.err));
  if (discovery::classify_command(r.exit_status, r.err) == discovery::CommandOutcome::kMissing) {
    return fmt::format("`{}` is not on this host", command);
  }
  return fmt::format("`{}` exited {}: {}", command, r.exit_status,
                     first_line(r.err.empty() ? r.out : r.err));
}

}  // namespace

std::vector<std::string> pmset_argv() {
  return {"pmset", "-g"};
}
std::vector<std::string> restart_power_failure_argv() {
  return {"systemsetup", "-getrestartpowerfailure"};
}
std::vector<std::string> auto_login_argv() {
  return {"defaults", "read", "/Library/Preferences/com.apple.loginwindow", "autoLoginUser"};
}

const char* to_string(HygieneItem::Status s) {
  switch (s) {
    case Status::kOk:
      return "ok";
    case Status::kFix:
      return "fix";
    case Status::kUnknown:
      return "unknown";
    case Status::kUnsupported:
      return "unsupported";
  }
  return "unknown";
}

HygieneItem sleep_item(const RawOutput& pmset) {
  HygieneItem item{"sleep", Status::kUnknown, "", ""};
  if (pmset.exit_status != 0) {
    item.detail = not_read(pmset, "pmset -g");
    return item;
  }
  auto v = pmset_value(pmset.out, "sleep");
  if (!v) {
    item.detail = "`pmset -g` printed no `sleep` line";
  } else if (*v == 0) {
    item.status = Status::kOk;
    item.detail = "system sleep disabled (pmset sleep 0)";
  } else {
    item.status = Status::kFix;
    item.detail =
        fmt::format("the Mac sleeps after {} minute{} idle, and nothing wakes it over Thunderbolt",
                    *v, *v == 1 ? "" : "s");
    item.fix = "sudo pmset -a sleep 0";
  }
  return item;
}

HygieneItem restart_item(const RawOutput& systemsetup, const RawOutput& pmset) {
  HygieneItem item{"restart-after-power-failure", Status::kUnknown, "", ""};
  constexpr std::string_view kLabel = "Restart After Power Failure:";
  const std::string text = systemsetup.out + systemsetup.err;
  if (auto at = text.find(kLabel); systemsetup.exit_status != -1 && at != std::string::npos) {
    const std::string value = first_line(std::string_view(text).substr(at + kLabel.size()));
    if (value == "On") {
      item.status = Status::kOk;
      item.detail = "Restart After Power Failure: On";
      return item;
    }
    if (value == "Off") {
      item.status = Status::kFix;
      item.detail = "Restart After Power Failure: Off: after a power cut the Mac stays off";
      item.fix = "sudo systemsetup -setrestartpowerfailure on";
      return item;
    }
    if (value.find("Not supported") != std::string::npos) {
      item.status = Status::kUnsupported;
      item.detail = "not supported on this Mac (a laptop restarts on its battery)";
      return item;
    }
  }
  // systemsetup needs administrator rights (or is missing): pmset's autorestart says the same.
  if (pmset.exit_status == 0) {
    if (auto v = pmset_value(pmset.out, "autorestart")) {
      item.status = *v != 0 ? Status::kOk : Status::kFix;
      item.detail = fmt::format("pmset autorestart {}", *v);
      if (*v == 0) item.fix = "sudo systemsetup -setrestartpowerfailure on";
      return item;
    }
  }
  item.detail = fmt::format("{}; check it with `sudo systemsetup -getrestartpowerfailure`",
                            text.find("administrator access") != std::string::npos
                                ? std::string("systemsetup needs administrator rights")
                                : not_read(systemsetup, "systemsetup -getrestartpowerfailure"));
  return item;
}

HygieneItem auto_login_item(const RawOutput& defaults) {
  HygieneItem item{"auto-login", Status::kUnknown, "", ""};
  const std::string user = first_line(defaults.out);
  if (defaults.exit_status == 0 && !user.empty()) {
    item.status = Status::kOk;
    item.detail = fmt::format("logs in automatically as {}", user);
  } else if ((defaults.exit_status == 1 || defaults.exit_status == 0) &&
             (defaults.err.find("does not exist") != std::string::npos || user.empty())) {
    item.status = Status::kFix;
    item.detail = "no automatic login: after a restart the Mac waits at the login window";
    item.fix =
        "System Settings > Users & Groups > Automatically log in as (FileVault must be off), or "
        "on the Mac: sudo sysadminctl -autologin set -userName \"$USER\"";
  } else {
    item.detail = not_read(defaults, "defaults read ... autoLoginUser");
  }
  return item;
}

util::Result<std::vector<HygieneItem>> check_hygiene(remote::Executor& ex,
                                                     std::chrono::milliseconds timeout) {
  auto pmset = run_probe(ex, pmset_argv(), timeout);
  if (!pmset) return pmset.error();
  auto systemsetup = run_probe(ex, restart_power_failure_argv(), timeout);
  if (!systemsetup) return systemsetup.error();
  auto defaults = run_probe(ex, auto_login_argv(), timeout);
  if (!defaults) return defaults.error();
  return std::vector<HygieneItem>{sleep_item(*pmset), restart_item(*systemsetup, *pmset),
                                  auto_login_item(*defaults)};
}

}  // namespace cc::provision
