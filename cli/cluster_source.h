// Where a command's cluster state comes from, shared by every command that reads one
// (verify-mesh, and later network, hostfile, launch, health):
//   - a cluster state file (`discover -o cluster.json`), given positionally or as --cluster;
//   - or a live discovery over the global host selection (--lab, --inventory) narrowed by
//     --hosts, or the hosts of an MLX hostfile (--hostfile);
//   - or a support bundle replayed offline (--from DIR, written by `clusterctl collect`).
#pragma once

#include <string>

#include "cli/context.h"
#include "discovery/cluster_state.h"
#include "util/result.h"

namespace CLI {
class App;
}

namespace cc::cli {

struct ClusterSource {
  std::string state_file;  // positional / --cluster FILE
  std::string hosts;       // --hosts a,b | all
  std::string hostfile;    // --hostfile MLX.json
  std::string from_dir;    // --from DIR
  double timeout_s = 60;   // --timeout: per round trip and host
  std::string collect_dir;  // `collect -o DIR`: keep every raw output there
};

/// Adds [CLUSTER_JSON] (when `positional`), --hosts, --hostfile, --from and --timeout to `cmd`.
void add_cluster_source_options(CLI::App* cmd, ClusterSource& src, bool positional);

/// The cluster state: loaded from the file, or discovered (live or from the bundle) with a
/// progress line on a TTY. Errors: kUsage for conflicting or bad options and unreadable files
/// (the message names the file). Hosts that could not be probed are in ClusterState::problems,
/// not errors.
util::Result<discovery::ClusterState> obtain_cluster_state(const Context& ctx,
                                                           const ClusterSource& src);

}  // namespace cc::cli
