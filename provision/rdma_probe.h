// The small probes of `clusterctl rdma enable`, run one command at a time through
// remote::Executor (so a replayed bundle answers them under the usual keys, remote::replay_key):
// a Mac's RDMA state (`rdma_ctl status`, `ibv_devices`; the parsers are discovery's), used to
// re-check a Mac while the walkthrough waits for it, and the runner the hygiene probes share.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "discovery/command_outcome.h"
#include "discovery/host_facts.h"
#include "remote/executor.h"
#include "util/result.h"

namespace cc::provision {

/// Runs argv (no shell) and returns its outcome. Errors: only kUnreachable (the host cannot be
/// reached) and kInterrupted (Ctrl-C). Any other executor error (a recording missing from a
/// replayed bundle) and a timeout come back as exit_status -1 with the reason in `err`.
util::Result<discovery::RawOutput> run_probe(remote::Executor& ex,
                                             const std::vector<std::string>& argv,
                                             std::chrono::milliseconds timeout);

/// A Mac's RDMA state as one re-probe sees it.
struct MacRdma {
  bool reachable = false;
  std::string unreachable;  // the executor's message when !reachable
  discovery::RdmaState state = discovery::RdmaState::kUnknown;  // kUnsupported: no rdma_ctl
  std::vector<std::string> devices;  // ibv_devices, natural order (empty with RDMA off)
};

/// `rdma_ctl status`, then `ibv_devices` (skipped when rdma_ctl is missing or says disabled).
/// An unreachable host is a result (reachable = false), not an error. Errors: kInterrupted;
/// kCheckFailed naming the host and command when an output cannot be read (rdma_ctl failing,
/// output neither "enabled" nor "disabled", a malformed ibv_devices table, a recording missing
/// from a replayed bundle).
util::Result<MacRdma> probe_mac_rdma(remote::Executor& ex, std::chrono::milliseconds timeout);

/// Re-probes a Mac by name: the interface the walkthrough (rdma_enable.h) polls, so its tests
/// use a fake. Errors as probe_mac_rdma's.
class MacProber {
 public:
  virtual ~MacProber() = default;
  virtual util::Result<MacRdma> probe(const std::string& host) = 0;
};

/// probe_mac_rdma over one Executor per host (not owned; they must outlive the prober).
/// Errors: kUsage for a host it has no executor for; else probe_mac_rdma's.
class ExecutorProber final : public MacProber {
 public:
  ExecutorProber(const std::vector<remote::Executor*>& executors,
                 std::chrono::milliseconds timeout);
  util::Result<MacRdma> probe(const std::string& host) override;

 private:
  std::map<std::string, remote::Executor*> by_host_;
  std::chrono::milliseconds timeout_;
};

}  // namespace cc::provision
