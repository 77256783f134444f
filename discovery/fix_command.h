// The clusterctl commands that reports suggest as fixes ("run `clusterctl network apply
// cluster.json`"), written so that each runs as printed: naming the cluster the way the
// operator named it (the state file, shell-quoted, or the hosts), with the global options that
// select its hosts (--lab NAME, --inventory FILE).
//
// The one mechanism for every such command, in every layer: cli/ fills a FixCommand from the
// options it was given (cli/cluster_source.h, fix_command) and hands it down; topology's
// checks, provision's hostfiles, RDMA status and enablement, and healthcheck render their
// fixes through it, never as a bare "`clusterctl SUB`". It lives in discovery/ (it needs only
// remote's shell quoting) so that every layer that suggests a command can take one.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cc::discovery {

struct FixCommand {
  /// Shell words of the global options that select the hosts ("--lab t3a", "--inventory
  /// 'my inv.yaml'"), already quoted; "" when none is needed (a state that records its lab,
  /// SSH names).
  std::string global;
  /// The cluster state file the report was made from (unquoted), "" for a live discovery.
  std::string state_file;
  /// The hosts of a live discovery (--hosts), "" for all hosts of --lab / --inventory.
  std::string hosts;
  /// The options that make ssh(1) reach the hosts as clusterctl does, already quoted: "-F
  /// '/root/.local/state/clusterctl/labs/t3a/ssh_config'" for a lab (its config names each
  /// host's address, user, key and known_hosts: lab/files.cc), -F FILE, or an inventory's
  /// ssh_config and known_hosts ("-o UserKnownHostsFile=FILE"); "" for ~/.ssh/config.
  std::string ssh_options{};
  /// An inventory's SSH destination (its `ssh:`) per host name, where it is not the name.
  std::map<std::string, std::string> ssh_destinations{};
  /// The SSH config file (unquoted) the host names resolve through, the -F of ssh_options
  /// (a lab's or an inventory's ssh_config, or -F FILE); "" for ssh's own ~/.ssh/config. What
  /// another tool that runs ssh (mlx.launch, mpirun) must be told to read.
  std::string ssh_config{};

  /// "clusterctl SUB [GLOBAL] CLUSTER [EXTRA]": CLUSTER is the quoted state file, else
  /// "--hosts h1,h2" (nothing for all hosts). E.g. "clusterctl network apply 'my state.json'".
  std::string command(std::string_view subcommand, std::string_view extra = "") const;
  /// Discovery again, saved over the state file when there is one:
  /// "clusterctl [GLOBAL] discover --hosts h1,h2 -o 'cluster.json'".
  std::string rediscover() const;
  /// A support bundle of one host: "clusterctl [GLOBAL] collect --hosts H -o H-bundle".
  std::string collect(std::string_view host) const;
  /// How to try the SSH connection to `host` by hand, as clusterctl makes it: "ssh
  /// [SSH_OPTIONS] DESTINATION" ("ssh -F '/x/labs/t3a/ssh_config' h4"; "ssh h4" by default).
  std::string ssh(std::string_view host) const;
};

}  // namespace cc::discovery
