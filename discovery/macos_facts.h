// Assembles one Mac's HostFacts from the raw outputs of the macOS probe commands (pure: the
// probe that runs them over remote::Executor comes later). The port triplets are joined as
// docs/platform.md#discovering-cables-on-macos describes:
//   system_profiler bus (receptacle N, domain UUID, speed, items)
//     -> networksetup "Thunderbolt N" -> enX -> ifconfig enX (addresses, MTU, bridge)
//     -> ibv_devices "rdma_enX" -> ibv_devinfo rdma_enX (port state, GIDs).
#pragma once

#include <string>
#include <string_view>

#include "discovery/command_outcome.h"
#include "discovery/host_facts.h"
#include "util/result.h"

namespace cc::discovery {


/// The outputs of the macOS probe, one per command (command constants in the parser headers).
struct MacosOutputs {
  RawOutput sw_vers;          // sw_vers
  RawOutput sysctl;           // sysctl -n hw.model hw.memsize machdep.cpu.brand_string
  RawOutput system_profiler;  // system_profiler SPThunderboltDataType -json
  RawOutput networksetup;     // networksetup -listallhardwareports
  RawOutput ifconfig;         // ifconfig -a
  RawOutput rdma_ctl;         // rdma_ctl status
  RawOutput ibv_devices;      // ibv_devices
  RawOutput ibv_devinfo;      // ibv_devinfo -v
  RawOutput ioreg_platform;   // ioreg -rd1 -c IOPlatformExpertDevice (machine_id.h)
};

/// HostFacts for `host`. Ports come in receptacle order, one per Thunderbolt bus with a
/// receptacle number; `interfaces` holds every other ifconfig interface (bridge0, en0, dock
/// NICs). A missing RDMA tool (rdma_ctl, ibv_devices, ibv_devinfo: an older macOS) gives
/// RdmaState::kUnsupported and no devices, not an error. machine_id is the IOPlatformUUID;
/// nullopt when ioreg did not run or printed none (a bundle recorded without it).
/// Errors (kCheckFailed; the message starts with the host and names the command): a required
/// command (sw_vers, sysctl, system_profiler, networksetup, ifconfig) missing or failing, or
/// any output its parser rejects.
util::Result<HostFacts> assemble_macos_facts(std::string_view host, const MacosOutputs& outputs);

}  // namespace cc::discovery
