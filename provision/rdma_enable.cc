// The walkthrough's state machine (rdma_enable.h).
#include "provision/rdma_enable.h"

#include <algorithm>
#include <future>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "discovery/discover.h"
#include "util/clock.h"
#include "util/interrupt.h"

namespace cc::provision {
namespace {

using std::chrono::milliseconds;
using util::ExitCode;

constexpr milliseconds kSlice{100};  // spinner frame and util::interrupted() polling
constexpr const char* kSpinner = "|/-\\";

milliseconds since(std::chrono::steady_clock::time_point now,
                   std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(now - start);
}

}  // namespace

std::string format_elapsed(milliseconds d) {
  const long long s = std::max<long long>(0, d.count() / 1000);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

void Walkthrough::draw(std::string_view waiting, const std::string& host,
                       std::chrono::steady_clock::time_point start) {
  const auto now = clock_.now();
  console_.status(fmt::format("{} {}: {}  {} (gives up after {})", kSpinner[frame_++ % 4], host,
                              waiting, format_elapsed(since(now, start)),
                              format_elapsed(opts_.timeout)));
}

util::Result<MacRdma> Walkthrough::probe_with_spinner(const std::string& host,
                                                      std::string_view waiting,
                                                      std::chrono::steady_clock::time_point start) {
  // On its own thread, so the spinner keeps turning while an SSH connect to a Mac that is off
  // waits for its timeout (the executor itself notices Ctrl-C and returns kInterrupted).
  auto pending = std::async(std::launch::async, [this, &host] { return prober_.probe(host); });
  while (pending.wait_for(kSlice) != std::future_status::ready) draw(waiting, host, start);
  return pending.get();
}

bool Walkthrough::pause(std::string_view waiting, const std::string& host,
                        std::chrono::steady_clock::time_point start) {
  const auto until = clock_.now() + opts_.poll_interval;
  for (auto now = clock_.now(); now < until; now = clock_.now()) {
    if (util::interrupted()) return false;
    draw(waiting, host, start);
    clock_.sleep_for(std::min(kSlice, std::chrono::duration_cast<milliseconds>(until - now)));
  }
  return !util::interrupted();
}

util::Status Walkthrough::set_phase(EnableState& state, const std::string& host, MacPhase phase,
                                    std::string note) {
  state.macs[host] = {phase, util::utc_now_iso(), std::move(note)};
  return save_enable_state(state, opts_.state_path);
}

std::string Walkthrough::interrupted_message() const {
  return fmt::format(
      "Interrupted. Progress is saved in {}: run `{}` again to resume.",
      opts_.state_path.string(), opts_.resume_command);
}

void Walkthrough::print_steps(const std::string& host) {
  for (const auto& line : recovery_steps(host)) console_.say("  " + line);
  console_.say(fmt::format(
      "Waiting for {} to shut down. clusterctl watches it over SSH and goes on by itself; "
      "Ctrl-C stops, and `{}` again resumes here.",
      host, opts_.resume_command));
}

Walkthrough::Step Walkthrough::walk_one(const std::string& host, std::size_t n, std::size_t of,
                                        EnableState& state, WalkResult& result) {
  auto fail = [&](ExitCode code, const std::string& message) {
    console_.clear_status();
    console_.say(message);
    result.code = util::worst(result.code, code);
    return Step::kStop;
  };
  auto saved = [&](util::Status st) {
    if (!st) fail(st.error().code, st.error().message);
    return st.ok();
  };
  MacPhase phase = state.macs.count(host) != 0 ? state.macs[host].phase : MacPhase::kPending;
  console_.say("");
  if (phase == MacPhase::kWaitingDown || phase == MacPhase::kWaitingUp) {
    console_.say(fmt::format("[{}/{}] Mac {}: resuming ({})", n, of, host,
                             phase == MacPhase::kWaitingDown
                                 ? "it had not shut down yet; the steps again:"
                                 : "it had gone down for macOS Recovery"));
    if (phase == MacPhase::kWaitingDown) print_steps(host);
  } else {
    auto first = probe_with_spinner(host, "checking", clock_.now());
    console_.clear_status();
    if (!first) return fail(first.error().code, first.error().message);
    if (first->reachable && first->state == discovery::RdmaState::kEnabled &&
        !first->devices.empty()) {
      console_.say(fmt::format("[{}/{}] Mac {}: RDMA is enabled already ({})", n, of, host,
                               fmt::join(first->devices, ", ")));
      if (!saved(set_phase(state, host, MacPhase::kDone))) return Step::kStop;
      result.enabled.push_back(host);
      return Step::kDone;
    }
    console_.say(fmt::format("[{}/{}] Mac {}: enable RDMA from macOS Recovery", n, of, host));
    phase = MacPhase::kWaitingDown;
    if (!saved(set_phase(state, host, phase))) return Step::kStop;
    print_steps(host);
  }

  auto start = clock_.now();
  auto phase_start = start;
  for (;;) {
    if (util::interrupted()) return fail(ExitCode::kInterrupted, interrupted_message());
    const bool down_phase = phase == MacPhase::kWaitingDown;
    const std::string waiting =
        down_phase ? "waiting for it to shut down" : "waiting for it to come back on SSH";
    if (clock_.now() - start >= opts_.timeout) {
      return down_phase
                 ? fail(ExitCode::kCheckFailed,
                        fmt::format("{} did not shut down within {}: follow the steps above, "
                                    "then run `{}` again (it resumes here).",
                                    host, format_elapsed(opts_.timeout), opts_.resume_command))
                 : fail(ExitCode::kUnreachable,
                        fmt::format("{} did not come back on SSH within {}: check that it "
                                    "restarted into macOS (in Recovery: Apple menu > Restart) "
                                    "and that Remote Login is on, then run `{}` again (it "
                                    "resumes here).",
                                    host, format_elapsed(opts_.timeout), opts_.resume_command));
    }
    auto probe = probe_with_spinner(host, waiting, phase_start);
    if (!probe) return fail(probe.error().code, probe.error().message);
    const auto elapsed = format_elapsed(since(clock_.now(), start));
    if (!probe->reachable) {
      if (down_phase) {
        console_.clear_status();
        console_.say(
            fmt::format("{} is down ({}). Now steps 2-7 in macOS Recovery; waiting for it "
                        "to come back on SSH after the reboot.",
                        host, elapsed));
        phase = MacPhase::kWaitingUp;
        phase_start = clock_.now();
        if (!saved(set_phase(state, host, phase))) return Step::kStop;
        continue;
      }
    } else if (!down_phase || probe->state == discovery::RdmaState::kEnabled) {
      console_.clear_status();
      if (!down_phase) console_.say(fmt::format("{} is back on SSH ({}).", host, elapsed));
      if (probe->state != discovery::RdmaState::kDisabled) {
        return verify(host, *probe, state, result);
      }
      console_.say(fmt::format(
          "{} is up with RDMA still disabled: `rdma_ctl enable` did not run in macOS Recovery. "
          "Once more:",
          host));
      phase = MacPhase::kWaitingDown;
      start = phase_start = clock_.now();
      if (!saved(set_phase(state, host, phase))) return Step::kStop;
      print_steps(host);
      continue;
    }
    if (!pause(waiting, host, phase_start)) {
      return fail(ExitCode::kInterrupted, interrupted_message());
    }
  }
}

Walkthrough::Step Walkthrough::verify(const std::string& host, const MacRdma& probe,
                                      EnableState& state, WalkResult& result) {
  std::string note;
  if (probe.state == discovery::RdmaState::kEnabled && !probe.devices.empty()) {
    console_.say(fmt::format("{}: RDMA enabled (rdma_ctl status: enabled; ibv_devices: {}).", host,
                             fmt::join(probe.devices, ", ")));
    if (auto st = set_phase(state, host, MacPhase::kDone); !st) {
      console_.say(st.error().message);
      result.code = util::worst(result.code, st.error().code);
      return Step::kStop;
    }
    result.enabled.push_back(host);
    return Step::kDone;
  }
  if (probe.state == discovery::RdmaState::kEnabled) {
    note = fmt::format(
        "rdma_ctl status says enabled but ibv_devices lists no device: reboot {} once more, then "
        "run `{}`",
        host, opts_.status_command);
  } else {
    note = fmt::format(
        "rdma_ctl status: {}: RDMA over Thunderbolt needs macOS 26.2 or later on "
        "Apple silicon",
        discovery::to_string(probe.state));
  }
  console_.say(fmt::format("{}: {}.", host, note));
  result.failed.push_back(host);
  result.code = util::worst(result.code, ExitCode::kCheckFailed);
  if (auto st = set_phase(state, host, MacPhase::kFailed, note); !st) {
    console_.say(st.error().message);
    result.code = util::worst(result.code, st.error().code);
    return Step::kStop;
  }
  return Step::kFailed;
}

WalkResult Walkthrough::run(const std::vector<std::string>& macs, EnableState& state) {
  WalkResult result;
  for (std::size_t i = 0; i < macs.size(); ++i) {
    if (walk_one(macs[i], i + 1, macs.size(), state, result) == Step::kStop) break;
  }
  console_.clear_status();
  return result;
}

}  // namespace cc::provision
