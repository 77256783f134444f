// The classification behind `clusterctl rdma status` (rdma_status.h); the renderings are in
// rdma_status_report.cc.
#include "provision/rdma_status.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "topology/graph.h"
#include "topology/rdma_port.h"
#include "topology/rdma_readiness.h"
#include "util/address.h"

namespace cc::provision {
namespace {

using discovery::HostFacts;
using discovery::RdmaState;
using R = RdmaReadiness;

// The fixes' commands name the cluster as the operator did (fix_command.h).
std::string enable_fix(const discovery::FixCommand& c) {
  return fmt::format("enable RDMA once from macOS Recovery (it cannot be done over SSH): `{}` "
                     "walks you through it",
                     c.command("rdma enable"));
}
std::string soft_roce_fix(const discovery::FixCommand& c) {
  return fmt::format("add Soft-RoCE devices on the cabled interfaces: `{}`",
                     c.command("rdma enable", "--soft-roce"));
}
std::string no_subsystem_fix(const discovery::FixCommand& c) {
  return fmt::format(
      "this kernel has no RDMA subsystem, so Soft-RoCE cannot be added here either: use a "
      "kernel with the rdma_rxe module (Debian's standard kernel has it; containers and some "
      "cloud kernels do not), then `{}`; until then collectives use TCP",
      c.command("rdma enable", "--soft-roce"));
}
std::string network_fix(const discovery::FixCommand& c) {
  return fmt::format("give every cabled port an IPv4 address: `{}`", c.command("network apply"));
}
std::string rediscover_fix(const discovery::FixCommand& c) {
  return fmt::format("run `{}` again", c.rediscover());
}

std::string os_label(const discovery::OsInfo& os) {
  return os.build.empty() ? fmt::format("{} {}", os.name, os.version)
                          : fmt::format("{} {} ({})", os.name, os.version, os.build);
}

std::vector<std::string> device_names(const HostFacts& f) {
  std::vector<std::string> names;
  for (const auto& d : f.rdma.devices) names.push_back(d.name);
  return names;
}

// The host's state is topology::host_rdma_readiness's (the one word every command prints);
// this adds why and what to do.
void classify_mac(const HostFacts& f, HostRdmaStatus& h, const discovery::FixCommand& c) {
  h.state = topology::host_rdma_readiness(f);
  switch (h.state) {
    case R::kOsTooOld:
      h.detail = fmt::format("{}: RDMA over Thunderbolt needs macOS 26.2 or later", os_label(f.os));
      h.fix = fmt::format(
          "update {} to macOS 26.2 or later (the same build as the other Macs), then `{}`",
          f.host, c.command("rdma enable"));
      return;
    case R::kUnsupported:
      h.detail = fmt::format(
          "no rdma_ctl on {}: RDMA over Thunderbolt needs Apple silicon and Thunderbolt 5 ports",
          os_label(f.os));
      h.fix = "use a Mac with Thunderbolt 5 ports (Mac Studio M3 Ultra or M4 Max, Mac mini M4 Pro)";
      return;
    case R::kUnknown:
      h.detail = "the RDMA state was not read (no rdma_ctl status output)";
      h.fix = rediscover_fix(c);
      return;
    case R::kDisabled:
      h.detail = "rdma_ctl status: disabled";
      h.fix = enable_fix(c);
      return;
    case R::kTb4Only:
      h.detail =
          "rdma_ctl status: enabled, but no RDMA device and every Thunderbolt link is below 80 "
          "Gb/s: Thunderbolt 4 hardware only";
      h.fix = fmt::format(
          "RDMA over Thunderbolt needs Thunderbolt 5 ports, which {} does not have (enabling "
          "RDMA again cannot help): it can use TCP over its cables (`{}`); for RDMA, use a Mac "
          "with Thunderbolt 5 ports",
          f.host, c.command("network apply"));
      return;
    case R::kEnabledNoDevices:
      h.detail = "rdma_ctl status: enabled, but ibv_devices lists no device";
      h.fix = fmt::format(
          "reboot {} (stale RDMA state clears only with a reboot); if ibv_devices still lists "
          "nothing, enable RDMA again from macOS Recovery (`{}`)",
          f.host, c.command("rdma enable"));
      return;
    default:
      h.detail = fmt::format("rdma_ctl status: enabled; {}", fmt::join(h.devices, ", "));
      return;
  }
}

void classify_linux(const HostFacts& f, HostRdmaStatus& h, const discovery::FixCommand& c) {
  h.state = topology::host_rdma_readiness(f);
  if (h.state == R::kUnknown) {
    h.detail = "the RDMA devices were not read (no `rdma -j link` output)";
    h.fix = rediscover_fix(c);
  } else if (h.state == R::kNoDevice) {
    h.detail = f.rdma.state == RdmaState::kUnsupported
                   ? "no RDMA subsystem in this kernel (`rdma link`: Failed to open NETLINK_RDMA "
                     "socket)"
                   : "no RDMA device";
    h.fix = f.rdma.state == RdmaState::kUnsupported ? no_subsystem_fix(c) : soft_roce_fix(c);
  } else {
    h.detail = fmt::format("RDMA devices: {}", fmt::join(h.devices, ", "));
  }
}

bool self_assigned_gid(const std::string& gid) {
  return gid.size() > 7 && util::self_assigned_ipv4(std::string_view(gid).substr(7));
}

// The IPv4-mapped GID (::ffff:a.b.c.d) of an RDMA port's table that a rank uses, or nullopt:
// the first that is not of a self-assigned 169.254 address, else the first (libclustercomm's
// find_ipv4_mapped; docs/platform.md#gid-table-and-addressing).
std::optional<std::string> ipv4_gid(const discovery::RdmaPort& p) {
  std::optional<std::string> first;
  for (const auto& g : p.gids) {
    if (g.gid.size() > 7 && (g.gid.rfind("::ffff:", 0) == 0 || g.gid.rfind("::FFFF:", 0) == 0) &&
        g.gid.find('.') != std::string::npos) {
      if (!self_assigned_gid(g.gid)) return g.gid;
      if (!first) first = g.gid;
    }
  }
  return first;
}

PortRdmaStatus classify_port(const topology::ClusterGraph& g, std::size_t hi,
                             const topology::PortNode& p, const topology::CabledPeer& cp,
                             const HostRdmaStatus& host, const discovery::FixCommand& c) {
  const HostFacts& f = *g.host(hi).facts;
  const HostFacts& q = *g.host(cp.host).facts;
  const discovery::Cable& cable = g.cable(cp.cable);
  const bool mac = topology::is_mac(f);
  PortRdmaStatus s;
  s.end = p.end;
  s.peer = cable.a == p.end ? cable.b : cable.a;
  s.link_speed_gbps = cable.link_speed_gbps;
  const discovery::RdmaDevice* dev = topology::rdma_device_of(f, *p.port);
  const discovery::RdmaPort* rp =
      dev != nullptr && !dev->ports.empty() ? &dev->ports.front() : nullptr;
  if (dev != nullptr) s.rdma_device = dev->name;
  if (rp != nullptr) {
    s.port_state = rp->state;
    s.gid = ipv4_gid(*rp);
  }
  const std::string port = discovery::end_label(p.end);
  if (mac && topology::below_tb5(cable)) {
    s.state = R::kTb4Link;
    s.detail = fmt::format("{} Gb/s", cable.link_speed_gbps);
    if (cable.generation > 0) s.detail += fmt::format(", Thunderbolt {}", cable.generation);
    s.detail += ": TB4 link, RDMA impossible on this cable";
    s.fix = topology::tb4_link_fix(f, q);  // verify-mesh's tb4-link fix, word for word
    return s;
  }
  if (mac && topology::lacks_hardware_port(p.end)) {
    // Before the host's state: enabling RDMA gives this port no device until macOS has made
    // its hardware port (topology::no_hardware_port, verify-mesh's no-interface).
    const topology::NoHardwarePort why = topology::no_hardware_port(p.end, c);
    s.state = R::kNoInterface;
    s.detail = fmt::format(
        "no network interface: {}, so the port can get no address and no RDMA device",
        why.reason);
    s.fix = why.fix;
    return s;
  }
  if (host.state != R::kReady) {
    s.state = host.state;
    s.detail = fmt::format("see host {} ({})", f.host, to_string(host.state));
    return s;  // the host's fix covers it
  }
  const bool peer_off = topology::peer_rdma_off(q, p.host_peer());
  const std::string enable_peer =
      fmt::format("enable RDMA on {}: `{}`", q.host, c.command("rdma enable"));
  if (dev == nullptr) {
    if (peer_off) {
      s.state = R::kWaitingForPeer;
      s.waiting_for = q.host;
      s.detail =
          fmt::format("no RDMA device on this port while its peer {} has RDMA disabled", q.host);
      s.fix = enable_peer;
    } else {
      s.state = R::kNoDevice;
      s.detail = fmt::format("no RDMA device rides on {}",
                             s.end.interface.empty() ? std::string("this port") : s.end.interface);
      s.fix = mac ? fmt::format("reboot {}, then run `{}` again", f.host,
                                c.command("rdma status"))
                  : soft_roce_fix(c);
    }
    return s;
  }
  if (rp == nullptr || !rp->active) {
    const std::string state = s.port_state.empty() ? std::string("down") : s.port_state;
    if (peer_off) {
      s.state = R::kWaitingForPeer;
      s.waiting_for = q.host;
      s.detail = fmt::format("{}: its peer {} has RDMA disabled", state, q.host);
      s.fix = enable_peer;
    } else {
      s.state = R::kPortDown;
      s.detail = fmt::format("{} although its peer {}'s RDMA is {}", state, q.host,
                             to_string(topology::host_rdma_readiness(q)));
      s.fix = fmt::format("reseat the cable {} <-> {}, then run `{}` again", port,
                          discovery::end_label(s.peer), c.command("rdma status"));
    }
    return s;
  }
  const auto& itf = p.port->interface;
  if (rp->gids.empty()) {
    if (itf && !itf->ipv4.empty()) {
      s.state = R::kReady;
      s.detail = fmt::format("{}, IPv4 {} (GID table not read)", s.port_state, itf->ipv4.front());
    } else {
      s.state = R::kNoIpv4;
      s.detail = fmt::format(
          "{} has no IPv4 address, so {} has no IPv4-mapped GID (queue pairs fail moving to RTR, "
          "errno 22)",
          s.end.interface.empty() ? std::string("the interface") : s.end.interface, dev->name);
      s.fix = network_fix(c);
    }
  } else if (s.gid) {
    s.state = R::kReady;
    s.detail = fmt::format("{}, GID {}", s.port_state, *s.gid);
    if (self_assigned_gid(*s.gid)) {
      // Ready now, but macOS drops this address at boot and renumbers it after re-cabling
      // (ml-explore/mlx#3467): queue pairs then fail moving to RTR (errno 22).
      s.detail += " (self-assigned: gone at boot and renumbered after re-cabling, when RTR "
                  "fails with errno 22)";
      s.fix = fmt::format("give {} a fixed address: `{}`",
                          s.end.interface.empty() ? std::string("the port") : s.end.interface,
                          c.command("network apply"));
    }
  } else {
    s.state = R::kNoIpv4;
    s.detail = fmt::format(
        "no IPv4-mapped GID (::ffff:a.b.c.d) in {}'s GID table: queue pairs fail moving to RTR "
        "(errno 22)",
        dev->name);
    s.fix = network_fix(c);
  }
  return s;
}

}  // namespace

RdmaStatus rdma_status(const discovery::ClusterState& state, const discovery::FixCommand& fix) {
  topology::ClusterGraph g(state);
  RdmaStatus out;
  for (std::size_t hi = 0; hi < g.size(); ++hi) {
    const HostFacts& f = *g.host(hi).facts;
    HostRdmaStatus h;
    h.host = f.host;
    h.macos = topology::is_mac(f);
    h.os = f.os;
    h.devices = device_names(f);
    if (*h.macos) {
      classify_mac(f, h, fix);
    } else {
      classify_linux(f, h, fix);
    }
    for (const auto& p : g.host(hi).ports) {
      if (auto cp = topology::cabled_peer(g, hi, p)) {
        h.ports.push_back(classify_port(g, hi, p, *cp, h, fix));
      }
    }
    out.hosts.push_back(std::move(h));
  }
  for (const auto& p : state.problems) {
    HostRdmaStatus h;
    h.host = p.host;
    h.state = p.unreachable()       ? R::kUnreachable
              : p.bad_destination() ? R::kBadDestination
                                    : R::kProbeFailed;
    h.detail = p.message;
    out.hosts.push_back(std::move(h));
  }
  return out;
}

util::ExitCode exit_code(const RdmaStatus& s) {
  util::ExitCode rc = util::ExitCode::kOk;
  for (const auto& h : s.hosts) {
    if (h.state == R::kUnreachable) rc = util::worst(rc, util::ExitCode::kUnreachable);
    if (h.state == R::kBadDestination) rc = util::worst(rc, util::ExitCode::kUsage);
    if (h.state != R::kReady) rc = util::worst(rc, util::ExitCode::kCheckFailed);
    for (const auto& p : h.ports) {
      if (p.state != R::kReady) rc = util::worst(rc, util::ExitCode::kCheckFailed);
    }
  }
  return rc;
}

}  // namespace cc::provision
