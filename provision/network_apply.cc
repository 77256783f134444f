#include "provision/network_apply.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include "discovery/text.h"
#include "provision/network_plan.h"
#include "topology/checks.h"
#include "util/interrupt.h"

namespace cc::provision {
namespace {

using discovery::ClusterState;
using discovery::HostFacts;
using discovery::LinkAddress;
using discovery::NetInterface;
using discovery::ProbeCommand;
using namespace std::chrono_literals;

const NetInterface* port_interface(const HostFacts& h, const std::string& name) {
  for (const auto& p : h.ports) {
    if (p.interface && p.interface->name == name) return &*p.interface;
  }
  return nullptr;
}

bool in_base(const std::string& address, const util::Ipv4Prefix& base) {
  auto a = util::parse_ipv4_prefix(address);
  return a && overlaps(util::Ipv4Prefix{a->address, 32}, base);
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

void linux_changes(const HostFacts& h, const std::vector<EndAddress>& ends,
                   const util::Ipv4Prefix& base, std::vector<HostCommand>& out) {
  for (const auto& e : ends) {
    const NetInterface* i = port_interface(h, e.interface);
    std::vector<std::string> current = i ? i->ipv4 : std::vector<std::string>{};
    for (const auto& old : current) {
      if (old != e.address && in_base(old, base)) {
        out.push_back({{"ip", "addr", "del", old, "dev", e.interface},
                       {},
                       fmt::format("{}: remove {} (an older plan's address)", e.interface, old)});
      }
    }
    if (!contains(current, e.address)) {
      std::string cidr = fmt::format("{}/{}", e.address, e.prefix_length);
      out.push_back({{"ip", "addr", "add", cidr, "dev", e.interface},
                     {"ip", "addr", "del", cidr, "dev", e.interface},
                     fmt::format("{}: address {} for the cable to {}", e.interface, cidr, e.peer)});
    }
    if (i == nullptr || !i->up) {
      out.push_back({{"ip", "link", "set", e.interface, "up"},
                     {"ip", "link", "set", e.interface, "down"},
                     fmt::format("{}: bring the port up", e.interface)});
    }
  }
}

void macos_changes(const HostFacts& h, const std::vector<EndAddress>& ends,
                   const std::vector<topology::BridgedPort>& bridged, const util::Ipv4Prefix& base,
                   bool persist, std::vector<HostCommand>& out) {
  // The Thunderbolt Bridge: take every cabled port out of it (or disable it for good): the
  // ports verify-mesh's thunderbolt-bridge check fails on, planned or not.
  for (const auto& b : bridged) {
    out.push_back({{"ifconfig", b.bridge, "deletem", b.interface},
                   {"ifconfig", b.bridge, "addm", b.interface},
                   fmt::format("{}: leave the Thunderbolt Bridge {}", b.interface, b.bridge)});
  }
  if (persist) {
    out.push_back({{"networksetup", "-setnetworkserviceenabled", "Thunderbolt Bridge", "off"},
                   {"networksetup", "-setnetworkserviceenabled", "Thunderbolt Bridge", "on"},
                   "disable the Thunderbolt Bridge service (persistent)"});
  }
  for (const auto& e : ends) {
    const NetInterface* i = port_interface(h, e.interface);
    std::vector<std::string> current = i ? i->ipv4 : std::vector<std::string>{};
    std::string mask = util::format_ipv4(util::prefix_mask(e.prefix_length));
    for (const auto& old : current) {
      if (old != e.address && in_base(old, base)) {
        out.push_back({{"ifconfig", e.interface, "inet", old, "-alias"},
                       {},
                       fmt::format("{}: remove {} (an older plan's address)", e.interface, old)});
      }
    }
    if (!contains(current, e.address)) {
      out.push_back({{"ifconfig", e.interface, "inet", e.address, "netmask", mask, "alias"},
                     {"ifconfig", e.interface, "inet", e.address, "-alias"},
                     fmt::format("{}: address {}/{} for the cable to {}", e.interface, e.address,
                                 e.prefix_length, e.peer)});
    }
    if (persist) {
      std::string service = fmt::format("clusterctl {}", e.interface);
      out.push_back({{"networksetup", "-createnetworkservice", service, e.interface},
                     {"networksetup", "-removenetworkservice", service},
                     fmt::format("{}: network service \"{}\" (persistent)", e.interface, service)});
      out.push_back({{"networksetup", "-setmanual", service, e.address, mask},
                     {},
                     fmt::format("{}: static address {} in \"{}\"", e.interface, e.address,
                                 service)});
    }
  }
}

}  // namespace

std::vector<HostChanges> network_changes(const ClusterState& live,
                                         const std::vector<LinkAddress>& plan,
                                         const util::Ipv4Prefix& base, bool persist) {
  std::vector<HostChanges> result;
  const topology::ClusterGraph g(live);
  for (std::size_t hi = 0; hi < live.hosts.size(); ++hi) {
    const HostFacts& h = live.hosts[hi];
    HostChanges c;
    c.host = h.host;
    c.macos = h.os.name == "macOS";
    auto ends = addresses_of(plan, h.host);
    if (c.macos) {
      macos_changes(h, ends, topology::bridged_cabled_ports(g, hi), base, persist, c.commands);
    } else {
      linux_changes(h, ends, base, c.commands);
    }
    result.push_back(std::move(c));
  }
  return result;
}

util::Result<Privilege> detect_privilege(remote::Executor& ex) {
  remote::RunOptions opts;
  opts.timeout = 10s;
  auto id = ex.run({{"id", "-u"}, false}, opts);
  if (!id) return id.error();
  if (id->exit_status == 0 && discovery::trim(id->out) == "0") return Privilege::kRoot;
  auto sudo = ex.run({{"sudo", "-n", "true"}, false}, opts);
  if (!sudo) return sudo.error();
  return sudo->exit_status == 0 ? Privilege::kSudo : Privilege::kNone;
}

std::vector<std::string> with_privilege(Privilege p, const std::vector<std::string>& argv) {
  if (p != Privilege::kSudo) return argv;
  std::vector<std::string> out{"sudo", "-n"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

ApplyResult apply_host(remote::Executor& ex, const HostChanges& changes, Privilege p) {
  ApplyResult r{changes.host, 0, false, false, ""};
  remote::RunOptions opts;
  opts.timeout = 10s;
  std::vector<const HostCommand*> done;
  for (const auto& c : changes.commands) {
    util::Result<remote::CommandResult> res =
        util::interrupted() ? util::Result<remote::CommandResult>(
                                  util::interrupted_error())
                            : ex.run({with_privilege(p, c.argv), false}, opts);
    std::string problem;
    if (!res && res.error().code == util::ExitCode::kInterrupted) {
      r.interrupted = true;
    } else if (!res) {
      problem = res.error().message;
    } else if (res->timed_out) {
      problem = "timed out after 10 s";
    } else if (res->exit_status != 0) {
      problem = fmt::format("exit status {}: {}", res->exit_status,
                            discovery::trim(res->err.empty() ? res->out : res->err));
    }
    if (problem.empty() && !r.interrupted) {
      done.push_back(&c);
      ++r.applied;
      continue;
    }
    r.failed = !r.interrupted;
    int undone = 0;
    remote::RunOptions undo_opts = opts;
    undo_opts.cancelled = [] { return false; };  // the rollback runs to its end, Ctrl-C or not
    for (auto it = done.rbegin(); it != done.rend(); ++it) {
      if ((*it)->undo.empty()) continue;
      auto u = ex.run({with_privilege(p, (*it)->undo), false}, undo_opts);
      undone += (u && u->exit_status == 0) ? 1 : 0;
    }
    if (r.interrupted) {
      r.message =
          fmt::format("{}: {} before `{}`; rolled back {} of {} earlier change{} on this host",
                      changes.host, util::interruption(), fmt::join(c.argv, " "), undone,
                      done.size(), done.size() == 1 ? "" : "s");
      r.applied = 0;
      return r;
    }
    r.message = fmt::format("{}: `{}` failed ({}); rolled back {} of {} earlier change{} on this "
                            "host",
                            changes.host, fmt::join(c.argv, " "), problem, undone, done.size(),
                            done.size() == 1 ? "" : "s");
    return r;
  }
  return r;
}

ProbeCommand link_ping(bool macos, const std::string& interface, const std::string& address) {
  if (macos) {
    return ProbeCommand{fmt::format("ping -c 1 -t 2 -b {} {}", interface, address),
                        {"ping", "-c", "1", "-t", "2", "-b", interface, address}};
  }
  return ProbeCommand{fmt::format("ping -n -c 1 -W 2 -I {} {}", interface, address),
                      {"ping", "-n", "-c", "1", "-W", "2", "-I", interface, address}};
}

std::vector<ProbeCommand> link_pings_of(const ClusterState& live,
                                        const std::vector<LinkAddress>& plan,
                                        const std::string& host) {
  const HostFacts* h = live.find_host(host);
  bool macos = h != nullptr && h->os.name == "macOS";
  std::vector<ProbeCommand> out;
  for (const auto& l : plan) {
    if (l.a.host == host) out.push_back(link_ping(macos, l.a.interface, l.b_address));
    if (l.b.host == host) out.push_back(link_ping(macos, l.b.interface, l.a_address));
  }
  return out;
}

namespace {

// Whether cable end `e` has the IPv4 address `addr` in the live facts; nullopt when they do
// not show the end's interface.
std::optional<bool> end_has(const ClusterState& live, const discovery::CableEnd& e,
                            const std::string& addr) {
  const HostFacts* h = live.find_host(e.host);
  if (h == nullptr) return std::nullopt;
  for (const auto& p : h->ports) {
    if (p.interface && p.interface->name == e.interface) {
      const auto& v4 = p.interface->ipv4;
      return std::find(v4.begin(), v4.end(), addr) != v4.end();
    }
  }
  return std::nullopt;
}

// Why `from`'s ping to `address` (the planned address of `to`, the cable's other end) failed,
// or "" when it went through; a ping fails when either end lacks its planned address (it was
// removed, or the interface was reset), and the live facts say which (mlx#3755: pings fine on
// some hops, EHOSTUNREACH on others).
std::string ping_problem(const ClusterState& live,
                         const std::vector<discovery::ProbeOutputs>& pings,
                         const discovery::CableEnd& from, const std::string& own,
                         const discovery::CableEnd& to, const std::string& address,
                         const discovery::FixCommand& fix) {
  size_t index = 0;
  while (index < live.hosts.size() && live.hosts[index].host != from.host) ++index;
  if (index == live.hosts.size() || index >= pings.size()) {
    return fmt::format("{} was not reachable", from.host);
  }
  bool macos = live.hosts[index].os.name == "macOS";
  const auto* r = pings[index].find(link_ping(macos, from.interface, address));
  if (r == nullptr) return fmt::format("{} ran no ping", from.host);
  if (r->exit_status == 0) return "";
  std::string why = fmt::format("no reply from {} over {} {}", address, from.host, from.interface);
  std::vector<std::string> missing;
  if (end_has(live, to, address) == false) {
    missing.push_back(fmt::format("{} {} does not have {}", to.host, to.interface, address));
  }
  if (end_has(live, from, own) == false) {
    missing.push_back(fmt::format("{} {} does not have {}", from.host, from.interface, own));
  }
  if (!missing.empty()) {
    why += fmt::format(": {}, its planned address: run `{}`", fmt::join(missing, "; "),
                       fix.command("network apply"));
  }
  return why;
}

// An RDMA port without the IPv4-mapped GID of its planned address.
std::string gid_problem(const ClusterState& live, const discovery::CableEnd& end,
                        const std::string& address) {
  if (!end.rdma_device) return "";
  const HostFacts* h = live.find_host(end.host);
  if (h == nullptr) return "";
  for (const auto& d : h->rdma.devices) {
    if (d.name != *end.rdma_device) continue;
    for (const auto& p : d.ports) {
      for (const auto& g : p.gids) {
        if (g.gid == "::ffff:" + address) return "";
      }
    }
    return fmt::format("{} {} has no GID ::ffff:{} (the IPv4-mapped GID of its address)",
                       end.host, d.name, address);
  }
  return "";
}

}  // namespace

std::vector<LinkCheck> check_links(const ClusterState& live, const std::vector<LinkAddress>& plan,
                                   const std::vector<discovery::ProbeOutputs>& pings,
                                   const discovery::FixCommand& fix) {
  std::vector<LinkCheck> out;
  for (const auto& l : plan) {
    LinkCheck c;
    c.link = l;
    c.a_problem = ping_problem(live, pings, l.a, l.a_address, l.b, l.b_address, fix);
    c.b_problem = ping_problem(live, pings, l.b, l.b_address, l.a, l.a_address, fix);
    c.a_to_b = c.a_problem.empty();
    c.b_to_a = c.b_problem.empty();
    if (c.a_problem.empty()) c.a_problem = gid_problem(live, l.a, l.a_address);
    if (c.b_problem.empty()) c.b_problem = gid_problem(live, l.b, l.b_address);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace cc::provision
