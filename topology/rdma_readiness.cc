#include "topology/rdma_readiness.h"

#include <charconv>

#include "topology/graph.h"
#include "topology/rdma_port.h"

namespace cc::topology {

using R = RdmaReadiness;

const char* to_string(RdmaReadiness r) {
  switch (r) {
    case R::kReady:
      return "ready";
    case R::kDisabled:
      return "disabled";
    case R::kEnabledNoDevices:
      return "enabled-but-no-devices";
    case R::kTb4Only:
      return "tb4-only";
    case R::kOsTooOld:
      return "os-too-old";
    case R::kUnsupported:
      return "unsupported";
    case R::kUnknown:
      return "unknown";
    case R::kNoDevice:
      return "no-device";
    case R::kTb4Link:
      return "tb4-link";
    case R::kWaitingForPeer:
      return "waiting-for-peer";
    case R::kPortDown:
      return "port-down";
    case R::kNoIpv4:
      return "no-ipv4";
    case R::kNoInterface:
      return "no-interface";
    case R::kUnreachable:
      return "unreachable";
    case R::kBadDestination:
      return "bad-destination";
    case R::kProbeFailed:
      return "probe-failed";
  }
  return "unknown";
}

RdmaReadiness host_rdma_readiness(const discovery::HostFacts& f) {
  using discovery::RdmaState;
  if (!is_mac(f)) {
    if (f.rdma.state == RdmaState::kUnknown && f.rdma.devices.empty()) return R::kUnknown;
    return f.rdma.devices.empty() ? R::kNoDevice : R::kReady;
  }
  if (!macos_at_least(f.os.version, 26, 2)) return R::kOsTooOld;
  switch (f.rdma.state) {
    case RdmaState::kUnsupported:
      return R::kUnsupported;
    case RdmaState::kUnknown:
      return R::kUnknown;
    case RdmaState::kDisabled:
      return R::kDisabled;
    case RdmaState::kEnabled:
      break;
  }
  if (thunderbolt4_only(f)) return R::kTb4Only;
  return f.rdma.devices.empty() ? R::kEnabledNoDevices : R::kReady;
}

bool macos_at_least(const std::string& version, int major, int minor) {
  const char* p = version.data();
  const char* end = p + version.size();
  int v_major = 0;
  int v_minor = 0;
  auto [next, ec] = std::from_chars(p, end, v_major);
  if (ec != std::errc()) return true;  // unreadable: never reported as too old
  if (next != end && *next == '.') {
    if (std::from_chars(next + 1, end, v_minor).ec != std::errc()) v_minor = 0;
  }
  return v_major != major ? v_major > major : v_minor >= minor;
}

}  // namespace cc::topology
