#include "discovery/linux_facts.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "discovery/command_outcome.h"
#include "discovery/linux_ip.h"
#include "discovery/linux_rdma.h"
#include "discovery/linux_sysfs.h"
#include "discovery/linux_system.h"
#include "discovery/machine_id.h"
#include "discovery/natural_sort.h"
#include "discovery/text.h"

namespace cc::discovery {
namespace {

// A `grep -s -H` dump: exit 0 (all matched), 1 (nothing matched) or 2 (some files missing,
// which is normal in sysfs) all leave usable stdout. Anything else (no sh, a timeout): nothing.
bool dump_usable(const RawOutput& r) {
  return r.exit_status >= 0 && r.exit_status <= 2;
}

bool has_address(const NetInterface& i, std::string_view address) {
  return std::find(i.ipv4.begin(), i.ipv4.end(), address) != i.ipv4.end() ||
         std::find(i.ipv6.begin(), i.ipv6.end(), address) != i.ipv6.end();
}

util::Status read_rdma(std::string_view host, const LinuxOutputs& o, RdmaFacts& rdma) {
  if (dump_usable(o.sysfs_infiniband)) {
    auto devices = parse_sysfs_infiniband(o.sysfs_infiniband.out);
    if (!devices) return for_host(host, devices.error());
    rdma.devices = std::move(*devices);
  }
  if (classify_command(o.rdma_link.exit_status, o.rdma_link.err) != CommandOutcome::kMissing) {
    auto links = parse_rdma_link(o.rdma_link.out, o.rdma_link.err, o.rdma_link.exit_status);
    if (!links) return for_host(host, links.error());
    for (auto& d : links->devices) {
      auto same = std::find_if(rdma.devices.begin(), rdma.devices.end(),
                               [&](const RdmaDevice& s) { return s.name == d.name; });
      if (same == rdma.devices.end()) {
        rdma.devices.push_back(std::move(d));  // sysfs was unreadable: take what rdma says
      } else if (!same->netdev) {
        same->netdev = d.netdev;
      }
    }
  }
  std::sort(rdma.devices.begin(), rdma.devices.end(),
            [](const RdmaDevice& a, const RdmaDevice& b) { return natural_less(a.name, b.name); });
  rdma.state = rdma.devices.empty() ? RdmaState::kUnsupported : RdmaState::kEnabled;
  return {};
}

}  // namespace

util::Result<HostFacts> assemble_linux_facts(std::string_view host, const LinuxOutputs& o,
                                             std::string_view management_address) {
  HostFacts f;
  f.host = std::string(host);
  f.management_address = std::string(management_address);

  auto os = parse_required(host, kOsReleaseCommand, o.os_release, parse_os_release);
  if (!os) return os.error();
  f.os = *os;
  auto mem = parse_required(host, kMeminfoCommand, o.meminfo, parse_meminfo_total);
  if (!mem) return mem.error();
  f.memory_bytes = *mem;
  if (o.cpu_model.exit_status == 0) {
    auto line = trim(o.cpu_model.out);
    if (auto colon = line.find(':'); colon != std::string_view::npos) {
      f.cpu = std::string(trim(line.substr(colon + 1)));
    }
  }
  if (o.product_name.exit_status == 0) f.model = std::string(trim(o.product_name.out));
  for (auto [raw, command] : {std::pair{&o.machine_id, kMachineIdCommand},
                              std::pair{&o.dbus_machine_id, kDbusMachineIdCommand}}) {
    if (raw->exit_status != 0) continue;
    if (auto id = parse_machine_id(raw->out, command)) {
      f.machine_id = *id;
      break;
    }
  }

  auto ifaces = parse_required(host, kIpDetailAddrCommand, o.ip_addr, [](std::string_view out) {
    return parse_ip_addr(out, kIpDetailAddrCommand);
  });
  if (!ifaces) return ifaces.error();
  if (auto st = read_rdma(host, o, f.rdma); !st) return st.error();

  LinuxThunderbolt tb;
  if (dump_usable(o.sysfs_thunderbolt)) {
    auto parsed = parse_sysfs_thunderbolt(o.sysfs_thunderbolt.out);
    if (!parsed) return for_host(host, parsed.error());
    tb = std::move(*parsed);
  }

  for (NetInterface& i : *ifaces) {
    auto xd = std::find_if(tb.xdomains.begin(), tb.xdomains.end(),
                           [&](const ThunderboltXDomain& x) { return x.interface == i.name; });
    auto dev = std::find_if(f.rdma.devices.begin(), f.rdma.devices.end(),
                            [&](const RdmaDevice& d) { return d.netdev == i.name; });
    bool excluded = i.kind == "loopback" || i.kind == "bridge" || i.bridge || !i.members.empty() ||
                    (!management_address.empty() && has_address(i, management_address));
    bool cable_capable = i.kind == "veth" || i.name.starts_with("thunderbolt") ||
                         xd != tb.xdomains.end() || dev != f.rdma.devices.end();
    if (excluded || !cable_capable) {
      f.interfaces.push_back(std::move(i));
      continue;
    }
    Port p;
    if (dev != f.rdma.devices.end()) p.rdma_device = dev->name;
    if (xd != tb.xdomains.end()) {
      for (const auto& [domain, uuid] : tb.host_uuids) {
        if (domain == xd->domain) p.domain_uuid = uuid;
      }
      p.link_speed_gbps = xd->link_speed_gbps;
      p.generation = xd->generation;
      Peer peer;
      peer.kind = Peer::Kind::kHost;
      peer.name = xd->device_name;
      peer.vendor = xd->vendor_name;
      peer.domain_uuid = xd->unique_id;
      p.peers.push_back(std::move(peer));
    }
    p.interface = std::move(i);
    f.ports.push_back(std::move(p));
  }
  std::sort(f.ports.begin(), f.ports.end(), [](const Port& a, const Port& b) {
    return natural_less(a.interface->name, b.interface->name);
  });
  return f;
}

}  // namespace cc::discovery
