// Where a command's cluster state comes from, shared by every command that reads one
// (verify-mesh, and later network, hostfile, launch, health):
//   - a cluster state file (`discover -o cluster.json`), given positionally or as --cluster;
//   - or a live discovery over the global host selection (--lab, --inventory) narrowed by
//     --hosts, or the hosts of an MLX hostfile (--hostfile);
//   - or a support bundle replayed offline (--from DIR, written by `clusterctl collect`).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "cli/context.h"
#include "discovery/cluster_state.h"
#include "discovery/fix_command.h"
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
  std::string format;       // `hostfile --format`: what the advice for an MPI --hostfile writes
  bool replan = false;      // `network plan`: the state file's plan is replaced, not read
};

/// Adds [CLUSTER_JSON] (when `positional`), --hosts, --hostfile, --from and --timeout to `cmd`.
void add_cluster_source_options(CLI::App* cmd, ClusterSource& src, bool positional);

/// The files a command reads through the global options and `src`: the cluster state file, an
/// MLX hostfile (--hostfile), the inventory, the ssh_config. An output the command writes must
/// be none of them (util::check_output_path's `inputs`): `hostfile c4.json -o c4.json` would
/// replace the cluster state with a hostfile.
std::vector<std::filesystem::path> input_files(const GlobalOptions& g, const ClusterSource& src);

/// The cluster state: loaded from the file, or discovered (live or from the bundle) with a
/// progress line on a TTY; a live discovery with --lab NAME records NAME in the state
/// (ClusterState::lab). Errors: kUsage for conflicting or bad options and unreadable files
/// (the message names the file), and a state file of another lab than --lab (see
/// options_for_state). Hosts that could not be probed are in ClusterState::problems, not
/// errors; one whose name does not resolve while labs exist and none was selected says to add
/// --lab NAME (lab_hint).
util::Result<discovery::ClusterState> obtain_cluster_state(const Context& ctx,
                                                           const ClusterSource& src);

/// The pre-check (check_hosts, hosts.h) of every host `src` names, for a command that changes
/// something on them, before it discovers any: a state file's hosts (through the lab it
/// records: options_for_state), an MLX hostfile's, else --hosts (default: every host of --lab
/// / --inventory). Nothing for --from or --replay (recordings). Errors: kUsage listing every
/// host's problem at once (remote::hosts_refused), or the state file's or hostfile's own.
util::Status check_source_hosts(const Context& ctx, const ClusterSource& src);

/// The global options that reach the hosts of `state` (read from `file`): the lab the state
/// records when neither --lab (CLUSTERCTL_LAB) nor --inventory is given, so `health
/// cluster.json` needs no --lab for a lab's state; `g` unchanged for a state without a lab.
/// This is the one place a state's lab is resolved. Errors (kUsage, naming the file and both
/// labs): --lab or CLUSTERCTL_LAB names another lab, or --inventory is given, for a state
/// discovered on a lab.
util::Result<GlobalOptions> options_for_state(const GlobalOptions& g,
                                              const discovery::ClusterState& state,
                                              const std::string& file);

/// The global options of `g` that select the hosts, as quoted shell words for a suggested
/// command: "--lab t3a", "--inventory 'my inv.yaml'", "-F FILE"; "" for none.
std::string global_words(const GlobalOptions& g);

/// How the fixes a report on `state` suggests name the cluster, so each runs as printed: the
/// state file (shell-quoted), else --hosts (those of `src`, else every host of `state`), after
/// --lab NAME / --inventory FILE / -F FILE from `g` (resolved by options_for_state); and the
/// ssh(1) that reaches a host as clusterctl does (FixCommand::ssh: -F the lab's or the
/// inventory's ssh_config, the inventory's known_hosts, its `ssh:` destinations).
discovery::FixCommand fix_command(const GlobalOptions& g, const ClusterSource& src,
                                  const discovery::ClusterState& state);

/// One line for a command that reads the state file, not the hosts (verify-mesh, hostfile),
/// so that its output is not taken for a live check: "from cluster.json, discovered
/// 2026-12-06 21:03 UTC; `clusterctl --lab t discover --hosts h1,h2` for a live view"
/// (`fix`'s FixCommand::rediscover without -o: runnable as printed, and writes no file). "" when
/// `src` names no state file.
std::string state_file_note(const ClusterSource& src, const discovery::ClusterState& state,
                            const discovery::FixCommand& fix);

}  // namespace cc::cli
