#include "launch/placement.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "discovery/fix_command.h"
#include "launch/rank_env.h"
#include "provision/hostfile.h"
#include "util/address.h"

namespace cc::launch {
namespace {

std::optional<provision::HostfileFormat> mlx_format(Runtime r) {
  switch (r) {
    case Runtime::kMlxJaccl:
      return provision::HostfileFormat::kMlxJaccl;
    case Runtime::kMlxJacclRing:
      return provision::HostfileFormat::kMlxJacclRing;
    case Runtime::kMlxRing:
      return provision::HostfileFormat::kMlxRing;
    default:
      return std::nullopt;
  }
}

// Whether ips[0] of a hostfile's host is an address every host reaches: in a jaccl hostfile it
// is (MLX makes rank 0's the coordinator, MLX_JACCL_COORDINATOR); in a ring hostfile the ips
// are the ends of the host's cables to its ring neighbour, which only that neighbour reaches
// (MLX's ring backend has no coordinator). A file that says neither (no "backend") is a
// jaccl one when it has a device matrix.
bool ips_reach_host(const provision::MlxHostfile& hf) {
  if (hf.backend == "ring") return false;
  if (!hf.backend.empty()) return true;
  return std::any_of(hf.hosts.begin(), hf.hosts.end(),
                     [](const provision::MlxHost& h) { return !h.rdma.empty(); });
}

}  // namespace

util::Result<Placement> place(const JobSpec& spec, const InventoryLoader& inventory,
                              std::string_view global) {
  Placement p;
  using Kind = ClusterRef::Kind;
  std::vector<std::string> names;
  if (!spec.hosts.empty()) {
    names = spec.hosts;
  } else if (spec.cluster->kind == Kind::kClusterState) {
    auto state = discovery::load_cluster_state(spec.cluster->value, global);
    if (!state) return state.error();
    for (const auto& h : state->hosts) {
      names.push_back(h.host);
      p.hosts.push_back({h.host, h.management_address, ""});
    }
    if (auto f = mlx_format(spec.runtime)) {
      // Its fixes name the job's cluster state, as the command line reaches its hosts.
      auto hf = provision::make_mlx_hostfile(
          *state, *f, {}, nullptr,
          discovery::FixCommand{std::string(global), spec.cluster->value, ""});
      if (!hf) return hf.error();
      p.mlx = std::move(*hf);
    }
    p.state = std::move(*state);
  } else if (spec.cluster->kind == Kind::kMlxHostfile) {
    // launch takes no --hosts: an MPI hostfile's hosts go in the job's `hosts:` instead.
    provision::MpiHostfileAdvice advice{std::string(global), true};
    // A host of an MPI hostfile that the selected inventory lacks is kept out of `hosts:`.
    if (auto inv = inventory(); inv && *inv) advice.host_check = inventory_host_check(**inv);
    if (is_mlx(spec.runtime)) advice.runtime = std::string(to_string(spec.runtime));
    auto hf = read_hostfile(spec.cluster->value, advice);
    if (!hf) return hf.error();
    // A host's address (rank 0's is the coordinator) is ips[0] only where that reaches the
    // host from every other; else the inventory's, or the name ssh reaches (cli's launch).
    const bool ips_reach = ips_reach_host(*hf);
    for (const auto& h : hf->hosts) {
      names.push_back(h.ssh);
      p.hosts.push_back({h.ssh, !ips_reach || h.ips.empty() ? "" : h.ips[0], ""});
    }
    p.mlx = std::move(*hf);
  }  // else a lab or an inventory: its hosts, below
  auto inv = inventory();
  if (!inv) return inv.error();
  if (spec.hosts.empty() && spec.cluster && spec.cluster->kind == Kind::kMlxHostfile && *inv) {
    const remote::HostIndex by_name = (*inv)->by_name();
    for (LaunchHost& h : p.hosts) {
      const remote::InventoryHost* ih = h.address.empty() ? by_name.find(h.name) : nullptr;
      if (ih != nullptr) h.address = ih->address;
    }
  }
  if (names.empty()) {
    if (!*inv) {
      return util::error(util::ExitCode::kUsage, fmt::format("{}: no hosts", spec.source.string()));
    }
    for (const auto& h : (*inv)->hosts) {
      names.push_back(h.name);
      p.hosts.push_back({h.name, h.address, h.ssh});
    }
  } else if (p.hosts.empty()) {
    remote::HostIndex by_name;  // "H1" in `hosts:` is the inventory's h1
    if (*inv) by_name = (*inv)->by_name();
    for (const auto& n : names) {
      const remote::InventoryHost* ih = by_name.find(n);
      p.hosts.push_back({n, ih != nullptr ? ih->address : "", ih != nullptr ? ih->ssh : ""});
    }
  }
  p.names = std::move(names);
  return p;
}

util::Status check_coordinator(const std::vector<LaunchHost>& hosts) {
  if (hosts.size() < 2) return {};
  const LaunchHost& h0 = hosts.front();
  const std::string& at = h0.address.empty() ? h0.name : h0.address;
  const char* what = util::link_local_ipv6(at)
                         ? "a link-local IPv6 address, which names an interface of one machine "
                           "only"
                     : util::self_assigned_ipv4(at)
                         ? "a self-assigned IPv4 address (169.254/16), which each host reaches "
                           "through whichever port holds its one route for 169.254/16, not "
                           "the one the address is on (docs/platform.md#self-assigned-addresses)"
                         : nullptr;
  if (what == nullptr) return {};
  return util::error(
      util::ExitCode::kUsage,
      fmt::format("host {} (rank 0's: the coordinator) would be reached by the other hosts at "
                  "{}, {}: give {} an `address:` in the inventory that every host reaches "
                  "(IPv4, or a global IPv6 address; for a cluster state, reach {} at one and "
                  "discover it again); nothing was started",
                  h0.name, at, what, h0.name, h0.name));
}

}  // namespace cc::launch
