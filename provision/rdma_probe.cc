#include "provision/rdma_probe.h"

#include <fmt/format.h>

#include "discovery/ibv_devices.h"
#include "discovery/macos_system.h"

namespace cc::provision {

using util::ExitCode;

namespace {

// A command that did not run at all (timed out; a recording missing from a bundle).
util::Error did_not_run(const remote::Executor& ex, std::string_view command,
                        const discovery::RawOutput& r) {
  return util::error(ExitCode::kCheckFailed,
                     fmt::format("{}: `{}` did not run: {}", ex.host(), command, r.err));
}

}  // namespace

util::Result<discovery::RawOutput> run_probe(remote::Executor& ex,
                                             const std::vector<std::string>& argv,
                                             std::chrono::milliseconds timeout) {
  remote::RunOptions opts;
  opts.timeout = timeout;
  auto r = ex.run({argv, false}, opts);
  if (!r) {
    if (r.error().code == ExitCode::kUnreachable || r.error().code == ExitCode::kInterrupted) {
      return r.error();
    }
    return discovery::RawOutput{"", r.error().message, -1};
  }
  if (r->timed_out) {
    return discovery::RawOutput{r->out, fmt::format("timed out after {} ms", timeout.count()), -1};
  }
  return discovery::RawOutput{r->out, r->err, r->exit_status};
}

util::Result<MacRdma> probe_mac_rdma(remote::Executor& ex, std::chrono::milliseconds timeout) {
  MacRdma m;
  auto ctl = run_probe(ex, {"rdma_ctl", "status"}, timeout);
  if (!ctl) {
    if (ctl.error().code != ExitCode::kUnreachable) return ctl.error();
    m.unreachable = ctl.error().message;
    return m;
  }
  m.reachable = true;
  if (ctl->exit_status == -1) return did_not_run(ex, discovery::kRdmaCtlCommand, *ctl);
  switch (discovery::classify_command(ctl->exit_status, ctl->err)) {
    case discovery::CommandOutcome::kMissing:
      m.state = discovery::RdmaState::kUnsupported;
      return m;
    case discovery::CommandOutcome::kFailed:
      return discovery::for_host(ex.host(),
                                 discovery::check_ran(discovery::kRdmaCtlCommand, *ctl).error());
    case discovery::CommandOutcome::kRan:
      break;
  }
  auto state = discovery::parse_rdma_ctl_status(ctl->out);
  if (!state) return discovery::for_host(ex.host(), state.error());
  m.state = *state;
  if (m.state != discovery::RdmaState::kEnabled) return m;

  auto devices = run_probe(ex, {"ibv_devices"}, timeout);
  if (!devices) {
    if (devices.error().code != ExitCode::kUnreachable) return devices.error();
    m = MacRdma{};  // went away between the two commands
    m.unreachable = devices.error().message;
    return m;
  }
  if (devices->exit_status == -1) return did_not_run(ex, discovery::kIbvDevicesCommand, *devices);
  if (discovery::classify_command(devices->exit_status, devices->err) ==
      discovery::CommandOutcome::kMissing) {
    return m;  // no ibv_devices: no devices to list
  }
  auto list = discovery::parse_required(ex.host(), discovery::kIbvDevicesCommand, *devices,
                                        discovery::parse_ibv_devices);
  if (!list) return list.error();
  for (const auto& d : *list) m.devices.push_back(d.name);
  return m;
}

ExecutorProber::ExecutorProber(const std::vector<remote::Executor*>& executors,
                               std::chrono::milliseconds timeout)
    : timeout_(timeout) {
  for (auto* ex : executors) by_host_[ex->host()] = ex;
}

util::Result<MacRdma> ExecutorProber::probe(const std::string& host) {
  auto it = by_host_.find(host);
  if (it == by_host_.end()) {
    return util::error(ExitCode::kUsage, fmt::format("{}: no connection to this host", host));
  }
  return probe_mac_rdma(*it->second, timeout_);
}

}  // namespace cc::provision
