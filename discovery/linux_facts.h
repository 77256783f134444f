// Assembles one Linux host's HostFacts from the raw outputs of the Linux probe (pure; probe.h
// runs the commands).
//
// Ports. A Linux host has no receptacle numbers, so its cable ports are its interfaces that can
// carry a point-to-point cable: thunderbolt-net interfaces (an XDomain's netdev, or a name
// starting with "thunderbolt"; docs/platform.md#thunderbolt-and-rdma-on-linux), interfaces an RDMA
// device rides on, and veth interfaces (how the lab emulates a Thunderbolt cable). Never a port:
// the management interface (the one holding the management address), loopback, bridges and their
// members. Ports are in natural order of interface name (tb2 < tb10); every other interface goes to
// HostFacts::interfaces.
#pragma once

#include <string_view>

#include "discovery/host_facts.h"
#include "discovery/macos_facts.h"  // RawOutput
#include "util/result.h"

namespace cc::discovery {

inline constexpr std::string_view kCpuModelCommand = "grep -m 1 '^model name' /proc/cpuinfo";
inline constexpr std::string_view kProductNameCommand = "cat /sys/class/dmi/id/product_name";
inline constexpr std::string_view kIpDetailAddrCommand = "ip -j -d addr show";

/// The outputs of the Linux probe, one per command.
struct LinuxOutputs {
  RawOutput os_release;         // cat /etc/os-release
  RawOutput meminfo;            // cat /proc/meminfo
  RawOutput cpu_model;          // kCpuModelCommand ("model name\t: AMD EPYC 7B13")
  RawOutput product_name;       // kProductNameCommand (absent in VMs and containers: optional)
  RawOutput ip_addr;            // kIpDetailAddrCommand
  RawOutput rdma_link;          // rdma -j link
  RawOutput sysfs_thunderbolt;  // kSysfsThunderboltCommand (linux_sysfs.h)
  RawOutput sysfs_infiniband;   // kSysfsInfinibandCommand
  RawOutput machine_id;         // kMachineIdCommand (machine_id.h)
  RawOutput dbus_machine_id;    // kDbusMachineIdCommand: used when machine_id is unusable
};

/// HostFacts for `host`; `management_address` is the address the probe reached it on.
/// RDMA: kEnabled with at least one device (sysfs, netdevs completed from `rdma -j link`),
/// kUnsupported with none or without an RDMA subsystem. machine_id: /etc/machine-id, else the
/// D-Bus copy; nullopt when neither ran and parsed (a container may have none).
/// Errors (kCheckFailed; the message starts with the host and names the command): os-release,
/// meminfo or `ip` missing or failing, or an output its parser rejects.
util::Result<HostFacts> assemble_linux_facts(std::string_view host, const LinuxOutputs& outputs,
                                             std::string_view management_address);

}  // namespace cc::discovery
