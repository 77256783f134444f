// Where a job's ranks run: the job's hosts, in rank order, with how to reach each one and, for
// the MLX runtimes, the MLX hostfile, from the job's `hosts:` or `cluster:` (job_spec.h) and
// the inventory (a lab's or a file's) that cli/ selected for it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/cluster_state.h"
#include "launch/job_spec.h"
#include "launch/rank_env.h"
#include "provision/mlx_hostfile.h"
#include "remote/inventory.h"
#include "util/result.h"

namespace cc::launch {

struct Placement {
  std::vector<LaunchHost> hosts;   // rank order: host i runs ranks i*ranks_per_host...
  std::vector<std::string> names;  // per host, the name to connect to (cli's make_executors)
  std::optional<provision::MlxHostfile> mlx;     // runtimes mlx-*: their hostfile
  std::optional<discovery::ClusterState> state;  // `cluster: cluster.json`: its cables
};

/// The inventory cli/ selected for the job (none: nullopt), read only when needed.
using InventoryLoader = std::function<util::Result<std::optional<remote::Inventory>>()>;

/// The hosts of `spec`:
///   - `hosts: [...]`: those names, with the inventory's address and ssh destination where it
///     has them;
///   - `cluster: lab:NAME` / `inventory:FILE`: every host of the inventory, in its order;
///   - `cluster: FILE.json` (a cluster state): its hosts and management addresses (and, for an
///     MLX runtime, the hostfile made from its cables);
///   - `cluster: hostfile:FILE` (an MLX hostfile): its hosts and, but for mlx-ring, their first
///     addresses.
/// Errors: the cluster state's, hostfile's or inventory's own (kUsage, naming the file; a bad
/// cluster state's fix, `clusterctl GLOBAL discover -o FILE`, with `global`: the quoted global
/// options that select the hosts, discovery::load_cluster_state); kUsage "FILE: no hosts" when
/// neither the job nor the inventory names one.
util::Result<Placement> place(const JobSpec& spec, const InventoryLoader& inventory,
                              std::string_view global = "");

/// Ok unless rank 0's host (hosts[0]; its address, else its name) is one the other hosts cannot
/// reach as clustercomm's coordinator (CLUSTERCOMM_COORDINATOR): a link-local IPv6 address
/// (fe80::/10, scoped or not: a scope names an interface of one machine only) or a
/// self-assigned IPv4 one (169.254/16: reached through whichever port holds each host's one
/// route for it), which would keep every rank waiting for the coordinator until the startup
/// timeout. One host alone is never refused. Errors: kUsage naming the host and the address and
/// saying what to give instead, ending "; nothing was started". (The mlx-* runtimes take their
/// coordinator from an MLX hostfile, which provision refuses such addresses in.)
util::Status check_coordinator(const std::vector<LaunchHost>& hosts);

}  // namespace cc::launch
