#include "provision/hostfile.h"

#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "provision/network_plan.h"
#include "remote/quote.h"
#include "topology/checks.h"
#include "topology/rdma_port.h"
#include "topology/ring.h"
#include "util/address.h"
#include "util/host_name.h"
#include "util/ipv4.h"
#include "util/text.h"

namespace cc::provision {
namespace {

using discovery::ClusterState;
using topology::ClusterGraph;
using util::ExitCode;

constexpr std::array<std::pair<HostfileFormat, const char*>, 6> kFormats = {{
    {HostfileFormat::kClusterctl, "clusterctl"},
    {HostfileFormat::kMlxJaccl, "mlx-jaccl"},
    {HostfileFormat::kMlxJacclRing, "mlx-jaccl-ring"},
    {HostfileFormat::kMlxRing, "mlx-ring"},
    {HostfileFormat::kMpi, "mpi"},
    {HostfileFormat::kMpich, "mpich"},
}};

util::Error cannot(HostfileFormat f, const std::string& why) {
  return util::error(ExitCode::kCheckFailed, fmt::format("no {} hostfile: {}", to_string(f), why));
}

// The port of cable `c`'s end on host `h`, or nullopt.
std::optional<std::size_t> end_port(const ClusterGraph& g, std::size_t c, std::size_t h) {
  const auto& e = g.edges().at(c);
  if (e.a_host == h) return e.a_port;
  if (e.b_host == h) return e.b_port;
  return std::nullopt;
}

const discovery::CableEnd& end_on(const ClusterGraph& g, std::size_t c, std::size_t h) {
  return g.edges().at(c).a_host == h ? g.cable(c).a : g.cable(c).b;
}

// Devices on host i of the RDMA cables to host j: one cell of the matrix.
MlxCell cell(const ClusterGraph& g, std::size_t i, std::size_t j) {
  MlxCell out;
  for (std::size_t c : rdma_cables(g, i, j)) out.push_back(*cable_end_device(g, c, i));
  return out;
}

// The first of `addresses` outside 169.254.0.0/16, or "": a self-assigned address is never
// handed out, since the host routes all of 169.254/16 out of one interface
// (docs/platform.md#self-assigned-addresses).
std::string routable_address(const std::vector<std::string>& addresses) {
  auto routable = std::find_if(addresses.begin(), addresses.end(),
                               [](const std::string& ip) { return !util::self_assigned_ipv4(ip); });
  return routable != addresses.end() ? *routable : std::string();
}

// The IPv4 address of interface `name` of host `f` (routable_address: never 169.254/16), or "".
std::string interface_address(const discovery::HostFacts& f, const std::string& name) {
  const discovery::NetInterface* itf = nullptr;
  for (const auto& i : f.interfaces) {
    if (i.name == name) itf = &i;
  }
  for (const auto& p : f.ports) {
    if (itf == nullptr && p.interface && p.interface->name == name) itf = &*p.interface;
  }
  return itf == nullptr ? "" : routable_address(itf->ipv4);
}

// The self-assigned address of cable `c`'s end on host `h` when that is all its port holds
// (so cable_end_address gives none), else "".
std::string only_self_assigned(const ClusterGraph& g, std::size_t c, std::size_t h) {
  auto p = end_port(g, c, h);
  if (!p) return "";
  const auto& itf = g.host(h).ports[*p].port->interface;
  if (!itf || itf->ipv4.empty() || !routable_address(itf->ipv4).empty()) return "";
  return itf->ipv4.front();
}

// The rank-0 coordinator and every rank's ips for the jaccl formats: the management address
// (the address SSH reached the host on, from SSH_CONNECTION), else on a Mac en0's address, as
// MLX itself takes (with a note saying so).
util::Status add_management_ips(const ClusterGraph& g, const std::vector<std::size_t>& order,
                                HostfileFormat f, MlxHostfile& hf, std::vector<std::string>* notes,
                                const discovery::FixCommand& fix) {
  for (std::size_t r = 0; r < order.size(); ++r) {
    const auto& facts = *g.host(order[r]).facts;
    const std::string& mgmt = facts.management_address;
    std::string addr = mgmt;
    // SSH reached the host over IPv6, which MLX cannot take (mlx_address_problem), or, with
    // other hosts to reach it, at an IPv4 address they cannot reach it on: loopback or a
    // self-assigned 169.254 one (util::rank_address_problem, which parse_mlx_hostfile refuses).
    const std::optional<std::string> v6 = mlx_address_problem(addr);
    const std::optional<std::string> v4 = !v6 && !mgmt.empty() && order.size() >= 2
                                              ? util::rank_address_problem(mgmt)
                                              : std::nullopt;
    if (v6 || v4) addr.clear();
    std::string en0_self_assigned;  // en0's address when it is only a self-assigned one
    if (addr.empty() && topology::is_mac(facts)) {
      addr = interface_address(facts, "en0");
      for (const auto& i : facts.interfaces) {
        if (i.name == "en0" && addr.empty() && !i.ipv4.empty()) en0_self_assigned = i.ipv4.front();
      }
      if (!addr.empty() && notes != nullptr) {
        notes->push_back(
            v6   ? fmt::format("rank {} ({}): SSH reached it on {}, an IPv6 address, which MLX "
                               "cannot take, so its ips are en0's address {}",
                               r, facts.host, mgmt, addr)
            : v4 ? fmt::format("rank {} ({}): SSH reached it on {}, which {}, so its ips are "
                               "en0's address {}",
                               r, facts.host, mgmt, *v4, addr)
                 : fmt::format("rank {} ({}): no management address was recorded (no "
                               "SSH_CONNECTION), so its ips are en0's address {}",
                               r, facts.host, addr));
      }
    }
    if (!addr.empty()) {
      hf.hosts[r].ips = {addr};
    } else if (r == 0 && v4) {
      return cannot(f, fmt::format("rank 0 ({}) was reached over SSH on {}, which {}{}; its "
                                   "ips[0] is the coordinator's, where every other rank "
                                   "connects: reach it by an address the other hosts reach it "
                                   "on (an inventory `address:` or a HostName in the SSH "
                                   "config) and discover it again (`{}`)",
                                   facts.host, mgmt, *v4,
                                   topology::is_mac(facts)
                                       ? ", and en0 has no routable IPv4 address"
                                       : "",
                                   fix.rediscover()));
    } else if (r == 0 && v6) {
      return cannot(f, fmt::format("rank 0 ({}) was reached over SSH on {}: {}{}; its ips[0] is "
                                   "the coordinator's: reach it by an IPv4 address (an inventory "
                                   "`address:` or a HostName in the SSH config) and discover it "
                                   "again (`{}`)",
                                   facts.host, mgmt, *v6,
                                   topology::is_mac(facts)
                                       ? ", and en0 has no routable IPv4 address"
                                       : "",
                                   fix.rediscover()));
    } else if (r == 0) {
      const std::string en0 =
          !topology::is_mac(facts) ? ""
          : en0_self_assigned.empty()
              ? " and no IPv4 address on en0"
              : fmt::format(" and only the self-assigned {} on en0, which the other hosts would "
                            "reach through whichever port holds their 169.254/16 route "
                            "(docs/platform.md#self-assigned-addresses)",
                            en0_self_assigned);
      return cannot(f, fmt::format("rank 0 ({}) has no management address (no SSH_CONNECTION "
                                   "was recorded){}, and its ips[0] is the coordinator's: "
                                   "discover it over SSH (`{}`)",
                                   facts.host, en0, fix.rediscover()));
    } else if (v6 && notes != nullptr) {
      notes->push_back(
          fmt::format("rank {} ({}): SSH reached it on {}, an IPv6 address, which "
                      "MLX cannot take, so its ips are left empty (JACCL reads only "
                      "rank 0's)",
                      r, facts.host, mgmt));
    } else if (v4 && notes != nullptr) {
      notes->push_back(fmt::format("rank {} ({}): SSH reached it on {}, which {}, so its ips are "
                                   "left empty (JACCL reads only rank 0's)",
                                   r, facts.host, mgmt, *v4));
    }
  }
  return {};
}

// "`clusterctl verify-mesh ...` says what to plug where": the command that tells what is
// missing, naming the cluster as `fix` says (runnable as printed).
std::string plug_advice(const discovery::FixCommand& fix, std::string_view subcommand,
                        std::string_view what) {
  return fmt::format("`{}` says {}", fix.command(subcommand), what);
}

// `advice` (plug_advice) says which command tells what is missing.
util::Result<topology::Ring> ring_or_error(const ClusterGraph& g,
                                           const std::vector<std::vector<int>>& m, HostfileFormat f,
                                           const char* over, const std::string& advice) {
  topology::Ring ring = topology::find_ring(m);
  switch (ring.status) {
    case topology::RingStatus::kFound:
      return ring;
    case topology::RingStatus::kTooFewHosts:
      return cannot(f, "a ring needs at least 2 hosts");
    case topology::RingStatus::kGaveUp:
      return cannot(f, fmt::format("the ring search gave up after {} steps without finding a "
                                   "ring over {}: use mlx-jaccl on a full mesh",
                                   ring.steps, over));
    case topology::RingStatus::kNotFound:
      break;
  }
  std::vector<std::string> missing;
  for (std::size_t a = 0; a < g.size(); ++a) {
    for (std::size_t b = a + 1; b < g.size(); ++b) {
      if (m[a][b] == 0) missing.push_back(topology::pair_label(g, a, b));
    }
  }
  return cannot(f, fmt::format("no ring through all {} hosts uses only {} (pairs without: {}): {}",
                               g.size(), over, fmt::join(missing, ", "), advice));
}

util::Result<MlxHostfile> make_jaccl(const ClusterGraph& g, MlxHostfile hf,
                                     std::vector<std::string>* notes,
                                     const discovery::FixCommand& fix) {
  const std::size_t n = g.size();
  std::vector<std::string> missing, no_rdma;
  bool any_slow = false;  // the advice for slow links is said once, after every pair
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a + 1; b < n; ++b) {
      if (g.multiplicity(a, b) == 0) {
        missing.push_back(topology::pair_label(g, a, b));
      } else if (rdma_cables(g, a, b).empty()) {
        std::vector<std::string> ends, slow;
        for (std::size_t c : g.cables_between(a, b)) {
          if (topology::below_tb5(g.cable(c))) {
            slow.push_back(topology::cable_label(g, c));
            continue;
          }
          for (std::size_t h : {a, b}) {
            if (!cable_end_device(g, c, h)) ends.push_back(discovery::end_label(end_on(g, c, h)));
          }
        }
        std::vector<std::string> why;
        if (!ends.empty())
          why.push_back(fmt::format("no RDMA device on {}", fmt::join(ends, ", ")));
        if (!slow.empty()) {
          any_slow = true;
          why.push_back(fmt::format("{} {} below Thunderbolt 5 speed", fmt::join(slow, ", "),
                                    slow.size() == 1 ? "links" : "link"));
        }
        no_rdma.push_back(
            fmt::format("{} ({})", topology::pair_label(g, a, b), fmt::join(why, "; ")));
      }
    }
  }
  if (!missing.empty()) {
    return cannot(HostfileFormat::kMlxJaccl,
                  fmt::format("no cable between {}: jaccl needs a direct cable between every pair "
                              "(RDMA cannot route); {}",
                              fmt::join(missing, ", "),
                              plug_advice(fix, "verify-mesh", "what to plug where")));
  }
  if (!no_rdma.empty()) {
    return cannot(HostfileFormat::kMlxJaccl,
                  fmt::format("no RDMA cable between {}: {}{}", fmt::join(no_rdma, "; "),
                              any_slow ? "a link below Thunderbolt 5 speed (40 Gb/s: a "
                                         "Thunderbolt 4 port or cable) carries no RDMA, even with "
                                         "rdma_en devices on both ends: use --format mlx-ring "
                                         "(TCP over the cables) or a Thunderbolt 5 cable between "
                                         "Thunderbolt 5 ports; "
                                       : "",
                              plug_advice(fix, "rdma status", "why")));
  }
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) {
    hf.hosts.push_back({g.host(i).name(), {}, {}});
    order[i] = i;
    for (std::size_t j = 0; j < n; ++j)
      hf.hosts[i].rdma.push_back(i == j ? MlxCell{} : cell(g, i, j));
  }
  if (auto st = add_management_ips(g, order, HostfileFormat::kMlxJaccl, hf, notes, fix); !st) {
    return st.error();
  }
  return hf;
}

util::Result<MlxHostfile> make_jaccl_ring(const ClusterGraph& g, MlxHostfile hf,
                                          std::vector<std::string>* notes,
                                          const discovery::FixCommand& fix) {
  const std::size_t n = g.size();
  std::vector<std::vector<int>> m(n, std::vector<int>(n, 0));
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (a != b) m[a][b] = static_cast<int>(rdma_cables(g, a, b).size());
    }
  }
  // No ring over the cables at all: cables are missing; else RDMA devices are.
  const bool cables_ring = topology::find_ring(g.matrix()).status == topology::RingStatus::kFound;
  auto ring =
      ring_or_error(g, m, HostfileFormat::kMlxJacclRing,
                    "pairs with an RDMA device on both ends of an 80 Gb/s cable",
                    cables_ring ? plug_advice(fix, "rdma status", "why those cables carry no RDMA")
                                : plug_advice(fix, "verify-mesh", "what to plug where"));
  if (!ring) return ring.error();
  const auto& order = ring->order;
  // JACCL's ring needs every neighbour cell of one length (Config::is_valid_ring): the ring's
  // smallest RDMA cable count, the first that many cables of each pair, as
  // mlx.distributed_config writes it. Both ends list a pair's cables in the same order.
  const auto count = static_cast<std::size_t>(ring->min_cables);
  for (std::size_t r = 0; r < n; ++r) {
    hf.hosts.push_back({g.host(order[r]).name(), {}, std::vector<MlxCell>(n)});
    for (std::size_t s : {(r + n - 1) % n, (r + 1) % n}) {
      MlxCell c = cell(g, order[r], order[s]);
      if (c.size() > count) c.resize(count);
      hf.hosts[r].rdma[s] = std::move(c);
    }
  }
  if (auto st = add_management_ips(g, order, HostfileFormat::kMlxJacclRing, hf, notes, fix);
      !st) {
    return st.error();
  }
  return hf;
}

util::Result<MlxHostfile> make_ring(const ClusterGraph& g, MlxHostfile hf,
                                    const discovery::FixCommand& fix) {
  const std::size_t n = g.size();
  auto ring = ring_or_error(g, g.matrix(), HostfileFormat::kMlxRing, "cabled pairs",
                            plug_advice(fix, "verify-mesh", "what to plug where"));
  if (!ring) return ring.error();
  const auto& order = ring->order;
  const auto count = static_cast<std::size_t>(ring->min_cables);
  std::vector<std::string> unaddressed, self_assigned;
  for (std::size_t r = 0; r < n; ++r) {
    const std::size_t h = order[r], left = order[(r + n - 1) % n];
    MlxHost host{g.host(h).name(), {}, {}};
    const auto& cables = g.cables_between(h, left);
    for (std::size_t k = 0; k < count && k < cables.size(); ++k) {
      if (auto ip = cable_end_address(g, cables[k], h)) {
        host.ips.push_back(*ip);
      } else if (std::string own = only_self_assigned(g, cables[k], h); !own.empty()) {
        self_assigned.push_back(
            fmt::format("{} ({})", discovery::end_label(end_on(g, cables[k], h)), own));
      } else {
        unaddressed.push_back(discovery::end_label(end_on(g, cables[k], h)));
      }
    }
    hf.hosts.push_back(std::move(host));
  }
  if (!self_assigned.empty()) {
    // Never written as a fallback: the ring's connection to such an address would leave by the
    // one port that holds the host's 169.254/16 route, whatever cable the address is on.
    const bool one = self_assigned.size() == 1;
    const std::string also =
        unaddressed.empty() ? std::string()
                            : fmt::format("; {} {} no IPv4 address at all",
                                          fmt::join(unaddressed, ", "),
                                          unaddressed.size() == 1 ? "has" : "have");
    return cannot(
        HostfileFormat::kMlxRing,
        fmt::format("{} {} only a self-assigned 169.254 address, and a host routes all of "
                    "169.254/16 out of one port, so a ring connection to {} would take that "
                    "port, not {} cable (docs/platform.md#self-assigned-addresses){}: run `{}` "
                    "(it gives every cable an address of its own{}), then write the hostfile "
                    "again",
                    fmt::join(self_assigned, ", "), one ? "has" : "have", one ? "it" : "them",
                    one ? "its" : "their", also, fix.command("network apply"),
                    fix.state_file.empty() ? "" : " and updates the file"));
  }
  if (!unaddressed.empty()) {
    return cannot(
        HostfileFormat::kMlxRing,
        fmt::format("{} {} no IPv4 address in this cluster state: run `{}` (it addresses the "
                    "cables{})",
                    fmt::join(unaddressed, ", "), unaddressed.size() == 1 ? "has" : "have",
                    fix.command("network apply"),
                    fix.state_file.empty() ? "" : " and updates the file"));
  }
  return hf;
}

}  // namespace

const char* to_string(HostfileFormat f) {
  for (const auto& [format, name] : kFormats) {
    if (format == f) return name;
  }
  return "unknown";
}

std::optional<HostfileFormat> hostfile_format(std::string_view name) {
  for (const auto& [format, n] : kFormats) {
    if (name == n) return format;
  }
  return std::nullopt;
}

std::vector<std::string> hostfile_format_names() {
  std::vector<std::string> out;
  for (const auto& f : kFormats) out.emplace_back(f.second);
  return out;
}

std::optional<std::string> cable_end_device(const ClusterGraph& g, std::size_t cable,
                                            std::size_t host) {
  const auto& end = end_on(g, cable, host);
  if (end.rdma_device) return end.rdma_device;
  if (auto p = end_port(g, cable, host)) return g.host(host).ports[*p].end.rdma_device;
  return std::nullopt;
}

std::optional<std::string> cable_end_address(const ClusterGraph& g, std::size_t cable,
                                             std::size_t host) {
  auto p = end_port(g, cable, host);
  if (!p) return std::nullopt;
  const auto& itf = g.host(host).ports[*p].port->interface;
  if (!itf || itf->ipv4.empty()) return std::nullopt;
  const auto& c = g.cable(cable);
  if (const auto* link = find_link(g.state().network, c.a, c.b)) {
    const bool a = link->a.host == g.host(host).name() && link->a.interface == itf->name;
    const std::string& planned = a ? link->a_address : link->b_address;
    if (std::find(itf->ipv4.begin(), itf->ipv4.end(), planned) != itf->ipv4.end()) return planned;
  }
  std::string routable = routable_address(itf->ipv4);
  if (routable.empty()) return std::nullopt;
  return routable;
}

util::Status check_envs(const std::vector<std::string>& envs) {
  std::string problems;  // every bad entry, one line each (README: all in one run)
  for (const auto& e : envs) {
    if (auto why = env_entry_problem(e)) {
      problems += fmt::format("{}--env {}: {}", problems.empty() ? "" : "\n", e, *why);
    }
  }
  if (!problems.empty()) return util::error(ExitCode::kUsage, std::move(problems));
  return {};
}

std::vector<std::size_t> rdma_cables(const ClusterGraph& g, std::size_t a, std::size_t b) {
  std::vector<std::size_t> out;
  if (a == b) return out;
  for (std::size_t c : g.cables_between(a, b)) {
    // A 40 Gb/s link never carries RDMA, even where macOS made rdma_enX devices on both ends
    // (Thunderbolt 4 ports do get them: docs/platform.md#ports-per-mac-model).
    if (topology::below_tb5(g.cable(c))) continue;
    if (cable_end_device(g, c, a) && cable_end_device(g, c, b)) out.push_back(c);
  }
  return out;
}

util::Status check_complete(const ClusterState& state, const discovery::FixCommand& fix) {
  if (state.hosts.empty() && state.problems.empty()) {
    return util::error(ExitCode::kUsage,
                       fmt::format("the cluster state has no hosts: discover some (`{}`)",
                                   fix.rediscover()));
  }
  if (state.problems.empty()) return {};
  ExitCode code = ExitCode::kOk;
  std::vector<std::string> lines;
  for (const auto& p : state.problems) {
    code = util::worst(code, p.code());
    lines.push_back(p.message);
  }
  const char* which = state.hosts.empty() ? "none" : lines.size() == 1 ? "one" : "some";
  return util::error(code,
                     fmt::format("a hostfile needs every host, and {} could {}be "
                                 "probed:\n  {}",
                                 which, state.hosts.empty() ? "" : "not ",
                                 fmt::join(lines, "\n  ")));
}

util::Status check_direct(const ClusterState& state, HostfileFormat format,
                          const discovery::FixCommand& fix) {
  const ClusterGraph g(state);
  std::vector<std::string> hub;
  for (std::size_t i = 0; i < g.edges().size(); ++i) {
    if (topology::through_hub(g, i)) hub.push_back(topology::cable_label(g, i));
  }
  if (hub.empty()) return {};
  return cannot(format,
                fmt::format("{} {} through a hub or dock, which is not a direct link (no RDMA, "
                            "not part of the mesh): plug {} directly between the two hosts, then "
                            "run `{}` again",
                            fmt::join(hub, ", "), hub.size() == 1 ? "runs" : "run",
                            hub.size() == 1 ? "it" : "each", fix.rediscover()));
}

util::Result<MlxHostfile> make_mlx_hostfile(const ClusterState& state, HostfileFormat format,
                                            const std::vector<std::string>& envs,
                                            std::vector<std::string>* notes,
                                            const discovery::FixCommand& fix) {
  if (auto st = check_complete(state, fix); !st) return st.error();
  if (auto st = check_direct(state, format, fix); !st) return st.error();
  if (auto st = check_envs(envs); !st) return st.error();
  const ClusterGraph g(state);
  MlxHostfile hf;
  hf.envs = envs;
  util::Result<MlxHostfile> made = util::error(ExitCode::kUsage, "");
  switch (format) {
    case HostfileFormat::kMlxJaccl:
      hf.backend = "jaccl";
      made = make_jaccl(g, std::move(hf), notes, fix);
      break;
    case HostfileFormat::kMlxJacclRing:
      hf.backend = "jaccl-ring";
      made = make_jaccl_ring(g, std::move(hf), notes, fix);
      break;
    case HostfileFormat::kMlxRing:
      hf.backend = "ring";
      made = make_ring(g, std::move(hf), fix);
      break;
    default:
      throw std::invalid_argument(
          fmt::format("make_mlx_hostfile: {} is not an MLX format", to_string(format)));
  }
  if (!made) return made;
  // What we write passes the same checks as what we read (JACCL's rules among them): a
  // cluster state that gives an invalid matrix (one device named for two cables, say) is
  // refused here, not by a silent fallback on the ranks.
  if (auto st = validate_mlx_hostfile(*made, fix); !st) {
    return cannot(format, st.error().message);
  }
  return made;
}

util::Result<std::string> render_hostfile(const ClusterState& state, const HostfileOptions& opts,
                                          std::vector<std::string>* notes) {
  switch (opts.format) {
    case HostfileFormat::kClusterctl:
      return render_clusterctl_hostfile(state, opts.envs, opts.fix);
    case HostfileFormat::kMlxJaccl:
    case HostfileFormat::kMlxJacclRing:
    case HostfileFormat::kMlxRing: {
      auto hf = make_mlx_hostfile(state, opts.format, opts.envs, notes, opts.fix);
      if (!hf) return hf.error();
      return render_mlx_hostfile(*hf);
    }
    case HostfileFormat::kMpi:
    case HostfileFormat::kMpich:
      break;
  }
  const bool mpi = opts.format == HostfileFormat::kMpi;
  if (!opts.envs.empty()) {
    return util::error(ExitCode::kUsage,
                       mpi ? "--env has no place in an Open MPI hostfile: give it to mpirun "
                             "(-x NAME=VALUE)"
                           : "--env has no place in an MPICH hostfile: give it to mpiexec "
                             "(-genv NAME VALUE)");
  }
  if (opts.slots < 1) {
    return util::error(ExitCode::kUsage, fmt::format("--slots {}: at least 1", opts.slots));
  }
  if (auto st = check_complete(state, opts.fix); !st) return st.error();
  if (mpi) {
    std::vector<std::string> bad;
    for (const auto& h : state.hosts) {
      if (auto why = open_mpi_host_problem(h.host)) {
        bad.push_back(fmt::format("host {}: {}: {}", h.host, *why,
                                  open_mpi_host_fix(h.host, h.host)));
      }
    }
    if (!bad.empty()) {
      return util::error(
          ExitCode::kUsage,
          fmt::format("{} of {} {} a name that Open MPI's mpirun does not take in its hostfile "
                      "(letters, digits, '.' and '-', after an optional USER@): it would stop "
                      "before any rank starts:\n  {}",
                      bad.size(), state.hosts.size(), bad.size() == 1 ? "hosts has" : "hosts have",
                      fmt::join(bad, "\n  ")));
    }
  }
  if (mpi && notes != nullptr) {
    std::vector<std::string> names;
    for (const auto& h : state.hosts) names.push_back(h.host);
    if (std::string note = open_mpi_fqdn_note(names); !note.empty()) notes->push_back(note);
  }
  std::string out;
  for (const auto& h : state.hosts) {
    out += mpi ? fmt::format("{} slots={}\n", h.host, opts.slots)
               : util::host_port(h.host, opts.slots) + "\n";  // MPICH's HOST:SLOTS
  }
  return out;
}

std::string hostfile_ssh_hint(HostfileFormat format, const discovery::FixCommand& fix,
                              std::string_view file, bool root) {
  if (format == HostfileFormat::kClusterctl || fix.ssh_config.empty()) return "";
  const std::string config = fix.ssh_config;
  const std::string why = fmt::format(
      "its host names resolve only through the SSH config {}, which ssh reads only when told",
      remote::shell_quote_arg(config));
  // Open MPI's plm_rsh_agent is split at blanks, quotes taken literally.
  const std::string agent = "ssh " + fix.ssh_options;
  const bool plain = agent.find_first_of("'\"\\") == std::string::npos;
  if (format == HostfileFormat::kMpi && plain) {
    return fmt::format("{}: run `mpirun --hostfile {} --mca plm_rsh_agent \"{}\"{} PROGRAM` "
                       "(README, \"Hostfiles\")",
                       why, file.empty() ? std::string("FILE") : remote::shell_quote_arg(file),
                       agent, root ? " --allow-run-as-root" : "");
  }
  // ssh_config's own quoting: double quotes around a path with blanks.
  const bool blank = config.find_first_of(" \t") != std::string::npos;
  return fmt::format("{}: for {}, put `Include {}` at the top of ~/.ssh/config (README, "
                     "\"Hostfiles\")",
                     why, format == HostfileFormat::kMpi ? "mpirun" : format == HostfileFormat::kMpich
                                                            ? "mpiexec"
                                                            : "mlx.launch",
                     blank ? "\"" + config + "\"" : config);
}

std::optional<std::string> open_mpi_host_problem(std::string_view host) {
  std::string_view name = host;
  if (auto at = name.rfind('@'); at != std::string_view::npos) name.remove_prefix(at + 1);
  if (name.empty()) return fmt::format("'{}' names no host", host);
  if (name.front() == '[' || name.find(':') != std::string_view::npos) {
    return fmt::format("'{}' is an IPv6 address", host);
  }
  auto ok = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '-';
  };
  // By whole character (util::utf8_char_length): "has 'ü'", never a lone byte of it.
  for (std::size_t i = 0; i < name.size(); i += util::utf8_char_length(name.substr(i))) {
    if (ok(name[i])) continue;
    const std::string_view c = name.substr(i, util::utf8_char_length(name.substr(i)));
    if (c == " ") return fmt::format("{} has a space", util::quote(host));
    return fmt::format("{} has a {}", util::quote(host), util::quote(c));
  }
  return std::nullopt;
}

std::string open_mpi_fqdn_note(const std::vector<std::string>& hosts) {
  std::vector<std::string> cut;                              // "'studio1' for studio1.local"
  std::map<std::string, std::vector<std::string>> by_first;  // Open MPI's node name -> hosts
  for (const std::string& h : hosts) {
    const auto at = h.rfind('@');
    const std::string user = at == std::string::npos ? "" : h.substr(0, at + 1);
    const std::string name = h.substr(user.size());
    const auto dot = name.find('.');
    if (dot == std::string::npos || util::parse_ipv4_prefix(name).ok()) continue;
    cut.push_back(fmt::format("'{}{}' for {}", user, name.substr(0, dot), h));
    by_first[util::host_key(name.substr(0, dot))].push_back(h);
  }
  if (cut.empty()) return "";
  std::vector<std::string> merged;
  for (const auto& [first, names] : by_first) {
    if (names.size() > 1) {
      merged.push_back(fmt::format("{} for one node '{}'", fmt::join(names, " and "), first));
    }
  }
  return fmt::format(
      "Open MPI 4 cuts a host name at its first '.' unless told not to: mpirun would ssh to "
      "{}{}; run it with `--mca {} 1`",
      fmt::join(cut, ", "),
      merged.empty() ? "" : fmt::format(", and take {}", fmt::join(merged, "; ")),
      kOpenMpiKeepFqdn);
}

std::string open_mpi_host_fix(std::string_view name, std::string_view destination) {
  std::string alias;  // one '-' for each run of other characters (a whole 'ü', not its bytes)
  for (char c : name) {
    if (util::is_ascii_alnum(c)) {
      alias += c;
    } else if (alias.empty() || alias.back() != '-') {
      alias += '-';
    }
  }
  while (!alias.empty() && alias.front() == '-') alias.erase(alias.begin());
  while (!alias.empty() && alias.back() == '-') alias.pop_back();
  if (alias.empty()) alias = "node1";
  std::string_view dest = destination;
  if (auto at = dest.rfind('@'); at != std::string_view::npos) dest.remove_prefix(at + 1);
  if (dest.size() > 1 && dest.front() == '[' && dest.back() == ']') {
    dest = dest.substr(1, dest.size() - 2);
  }
  std::string user;
  if (auto at = destination.rfind('@'); at != std::string_view::npos) {
    user = fmt::format(" and `User {}`", destination.substr(0, at));
  }
  return fmt::format(
      "give it a name Open MPI takes: in the SSH config, `Host {}` with `HostName {}`{}, and "
      "name the host `{}` (in an inventory, without `ssh:`)",
      alias, dest, user, alias);
}

}  // namespace cc::provision
