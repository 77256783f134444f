// The one word for a host's RDMA state, shared by every command that prints one: `discover`'s
// table, `rdma status` (provision/rdma_status.h, which adds each state's detail and fix),
// `health` (through rdma status) and verify-mesh's findings. Discovery's own RdmaState is the
// raw fact as probed (what `rdma_ctl status` said, or on Linux whether `rdma link` listed a
// device) and is what the cluster state file stores; this is what it means for the operator:
// a Linux host without a device is `no-device` (add Soft-RoCE), never `unsupported`. Pure.
// Facts: docs/platform.md#rdma-devices-and-port-states.
#pragma once

#include <string>

#include "discovery/host_facts.h"

namespace cc::topology {

/// One state, for a host or a port (provision/rdma_status.h says which apply where).
enum class RdmaReadiness {
  kReady,
  kDisabled,
  kEnabledNoDevices,
  kTb4Only,
  kOsTooOld,
  kUnsupported,
  kUnknown,
  kNoDevice,
  kTb4Link,
  kWaitingForPeer,
  kPortDown,
  kNoIpv4,
  kNoInterface,
  kUnreachable,
  kBadDestination,
  kProbeFailed,
};

/// "ready", "disabled", "enabled-but-no-devices", "tb4-only", "os-too-old", "unsupported",
/// "unknown", "no-device", "tb4-link", "waiting-for-peer", "port-down", "no-ipv4",
/// "no-interface", "unreachable", "bad-destination", "probe-failed".
const char* to_string(RdmaReadiness r);

/// The state of probed host `f` as a whole (never a port-only or not-probed state):
///   Mac    os-too-old (before 26.2), unsupported (no rdma_ctl), unknown, disabled, tb4-only,
///          enabled-but-no-devices, ready
///   Linux  unknown (not read), no-device (no RDMA device, or no RDMA subsystem), ready
RdmaReadiness host_rdma_readiness(const discovery::HostFacts& f);

/// True when macOS `version` ("26.2", "15.6.1") is at least major.minor; true when the
/// version cannot be read (an unknown version is not reported as too old).
bool macos_at_least(const std::string& version, int major, int minor);

}  // namespace cc::topology
