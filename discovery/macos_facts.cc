#include "discovery/macos_facts.h"

#include <algorithm>

#include <fmt/format.h>

#include "discovery/command_outcome.h"
#include "discovery/ibv_devices.h"
#include "discovery/ibv_devinfo.h"
#include "discovery/machine_id.h"
#include "discovery/macos_ifconfig.h"
#include "discovery/macos_networksetup.h"
#include "discovery/macos_system.h"
#include "discovery/macos_thunderbolt.h"
#include "discovery/natural_sort.h"
#include "discovery/text.h"

namespace cc::discovery {


util::Result<HostFacts> assemble_macos_facts(std::string_view host, const MacosOutputs& o) {
  HostFacts f;
  f.host = std::string(host);

  auto os = parse_required(host, kSwVersCommand, o.sw_vers, parse_sw_vers);
  if (!os) return os.error();
  f.os = *os;
  auto hw = parse_required(host, kSysctlCommand, o.sysctl, parse_sysctl_hw);
  if (!hw) return hw.error();
  f.model = hw->model;
  f.cpu = hw->cpu;
  f.memory_bytes = hw->memory_bytes;
  if (o.ioreg_platform.exit_status == 0) {
    if (auto uuid = parse_ioreg_platform_uuid(o.ioreg_platform.out)) f.machine_id = *uuid;
  }
  auto buses = parse_required(host, kSystemProfilerCommand, o.system_profiler,
                              parse_system_profiler_thunderbolt);
  if (!buses) return buses.error();
  auto hwports =
      parse_required(host, kNetworksetupCommand, o.networksetup, parse_networksetup_hardware_ports);
  if (!hwports) return hwports.error();
  auto ifaces = parse_required(host, kIfconfigCommand, o.ifconfig, parse_ifconfig);
  if (!ifaces) return ifaces.error();

  // RDMA: every tool may be missing on an older macOS.
  std::vector<IbvDevice> ibv;
  switch (classify_command(o.rdma_ctl.exit_status, o.rdma_ctl.err)) {
    case CommandOutcome::kMissing:
      f.rdma.state = RdmaState::kUnsupported;
      break;
    case CommandOutcome::kFailed:
      return for_host(host, check_ran(kRdmaCtlCommand, o.rdma_ctl).error());
    case CommandOutcome::kRan: {
      auto state = parse_rdma_ctl_status(o.rdma_ctl.out);
      if (!state) return for_host(host, state.error());
      f.rdma.state = *state;
      break;
    }
  }
  if (classify_command(o.ibv_devices.exit_status, o.ibv_devices.err) != CommandOutcome::kMissing) {
    auto devices = parse_required(host, kIbvDevicesCommand, o.ibv_devices, parse_ibv_devices);
    if (!devices) return devices.error();
    ibv = *devices;
  }
  if (!ibv.empty() &&
      classify_command(o.ibv_devinfo.exit_status, o.ibv_devinfo.err) != CommandOutcome::kMissing) {
    auto info = parse_required(host, kIbvDevinfoCommand, o.ibv_devinfo, parse_ibv_devinfo);
    if (!info) return info.error();
    f.rdma.devices = *info;
  }
  for (const IbvDevice& d : ibv) {  // listed but not described: keep the name and GUID
    auto it = std::find_if(f.rdma.devices.begin(), f.rdma.devices.end(),
                           [&](const RdmaDevice& r) { return r.name == d.name; });
    if (it == f.rdma.devices.end()) {
      RdmaDevice r;
      r.name = d.name;
      r.node_guid = d.node_guid;
      f.rdma.devices.push_back(std::move(r));
    }
  }
  for (RdmaDevice& d : f.rdma.devices) {
    if (d.name.rfind("rdma_", 0) == 0) d.netdev = d.name.substr(5);  // rdma_enX rides on enX
  }
  std::stable_sort(
      f.rdma.devices.begin(), f.rdma.devices.end(),
      [](const RdmaDevice& a, const RdmaDevice& b) { return natural_less(a.name, b.name); });

  // Ports: one per bus with a receptacle, joined to its interface and RDMA device.
  std::vector<std::string> used;
  for (const ThunderboltBus& bus : *buses) {
    if (!bus.receptacle) continue;
    Port p;
    p.receptacle = bus.receptacle;
    p.domain_uuid = bus.domain_uuid;
    p.link_speed_gbps = bus.link_speed_gbps;
    p.generation = bus.generation;
    if (bus.link_speed_gbps == 0) p.idle_speed_gbps = bus.max_speed_gbps;  // "Up to N Gb/s"
    p.peers = bus.peers;
    if (auto ifname = interface_for_receptacle(*hwports, *bus.receptacle)) {
      auto it = std::find_if(ifaces->begin(), ifaces->end(),
                             [&](const NetInterface& i) { return i.name == *ifname; });
      if (it != ifaces->end()) {
        p.interface = *it;
      } else {
        NetInterface bare;  // named by networksetup, absent from ifconfig
        bare.name = *ifname;
        p.interface = bare;
      }
      used.push_back(*ifname);
      std::string rdma = "rdma_" + *ifname;
      if (std::any_of(f.rdma.devices.begin(), f.rdma.devices.end(),
                      [&](const RdmaDevice& d) { return d.name == rdma; })) {
        p.rdma_device = rdma;
      }
    }
    f.ports.push_back(std::move(p));
  }
  for (const NetInterface& i : *ifaces) {
    if (std::find(used.begin(), used.end(), i.name) == used.end()) f.interfaces.push_back(i);
  }
  return f;
}

}  // namespace cc::discovery
