// The clusterctl commands that reports suggest as fixes ("run `clusterctl network apply
// cluster.json`"), written so that each runs as printed: naming the cluster the way the
// operator named it (the state file, shell-quoted, or the hosts), with the global options that
// select its hosts (--lab NAME, --inventory FILE).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cc::provision {

struct FixCommand {
  /// Shell words of the global options that select the hosts ("--lab t3a", "--inventory
  /// 'my inv.yaml'"), already quoted; "" when none is needed (a state that records its lab,
  /// SSH names).
  std::string global;
  /// The cluster state file the report was made from (unquoted), "" for a live discovery.
  std::string state_file;
  /// The hosts of a live discovery (--hosts), "" for all hosts of --lab / --inventory.
  std::string hosts;

  /// "clusterctl SUB [GLOBAL] CLUSTER [EXTRA]": CLUSTER is the quoted state file, else
  /// "--hosts h1,h2" (nothing for all hosts). E.g. "clusterctl network apply 'my state.json'".
  std::string command(std::string_view subcommand, std::string_view extra = "") const;
  /// Discovery again, saved over the state file when there is one:
  /// "clusterctl [GLOBAL] discover --hosts h1,h2 -o 'cluster.json'".
  std::string rediscover() const;
  /// A support bundle of one host: "clusterctl [GLOBAL] collect --hosts H -o H-bundle".
  std::string collect(std::string_view host) const;
};

}  // namespace cc::provision
