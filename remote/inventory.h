// The inventory: the cluster's hosts, in a YAML file the operator writes (or `lab up` writes).
//
//   # inventory.yaml
//   ssh_config: ssh_config        # optional, relative to this file's directory
//   known_hosts: known_hosts      # optional, relative to this file's directory
//   hosts:
//     - name: h1                  # required, unique ignoring case and a final dot ("H1", "h1."
//                                 # are h1 too); [A-Za-z0-9._-], at most 64 bytes, not "all"
//       ssh: h1                   # optional SSH destination ("alias", "user@host",
//                                 # "fe80::1%en0"); default: name
//       address: 10.0.0.1         # optional management address: an IPv4 or IPv6 address,
//                                 # not a name, not with a port; of two hosts or more, one
//                                 # the others reach (util::rank_address_problem): not
//                                 # link-local (fe80::/10: the other hosts reach it only
//                                 # through a scope of their own), not self-assigned
//                                 # (169.254/16), not loopback or unspecified
//
// Host order is significant: it is the order of output, and later of ranks.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace cc::remote {

struct InventoryHost {
  std::string name;     // as the operator refers to it (--hosts, output)
  std::string ssh;      // SSH destination: an ssh_config alias, a host name or user@host
  std::string address;  // management address, empty when not given
};

/// The hosts of an inventory by name, looked up as host names compare (util::host_key: "H1"
/// and "h1." find h1): the one lookup of a name the operator gives (--hosts, a job's `hosts:`).
/// Linear to build, O(1) per lookup: 40,000 names are looked up at once. Holds pointers into
/// the hosts it was built from: valid while they are not changed.
class HostIndex {
 public:
  HostIndex() = default;
  explicit HostIndex(const std::vector<InventoryHost>& hosts);
  /// The host `name` names, or nullptr.
  const InventoryHost* find(std::string_view name) const;

 private:
  std::unordered_map<std::string, const InventoryHost*> by_key_;
};

struct Inventory {
  std::filesystem::path path;                        // the file it came from; empty if in memory
  std::optional<std::filesystem::path> ssh_config;   // absolute once loaded
  std::optional<std::filesystem::path> known_hosts;  // absolute once loaded
  std::vector<InventoryHost> hosts;

  /// The host `name` names (util::same_host_name: "H1" and "h1." are h1), or nullptr. A
  /// linear scan: to look up many names, use by_name().
  const InventoryHost* find(std::string_view name) const;
  std::vector<std::string> names() const;
  /// Every host by name (HostIndex), for lookups of many names in linear time.
  HostIndex by_name() const;
};

/// Reads and validates an inventory file; relative ssh_config / known_hosts are resolved
/// against the file's directory. Errors (kUsage), each as "FILE:LINE:COLUMN: problem":
/// unreadable file, YAML syntax, a key that is not known (with "did you mean"), a missing or
/// duplicate host name (util::host_key: names that differ only in case or a final dot are one
/// host), a malformed name, an address that is no IP address (util::address_problem) or, in an
/// inventory of two hosts or more, one the other hosts cannot reach (util::rank_address_problem:
/// link-local IPv6, self-assigned IPv4, loopback, unspecified), a value of the wrong type.
util::Result<Inventory> load_inventory(const std::filesystem::path& path);

/// Writes `inv` to `path` atomically (mode 0644) in the format above. ssh_config and
/// known_hosts inside `path`'s directory are written relative to it, others absolute; `ssh`
/// is written only when it differs from the name. Errors: kUsage naming the path.
util::Status save_inventory(const std::filesystem::path& path, const Inventory& inv);

/// Chooses hosts by a --hosts value: "all" (every host, in inventory order) or a comma list
/// of names ("h1,h3"; order kept, spaces around names ignored), each found as HostIndex finds
/// it ("H1" and "h1." choose h1; the host comes back under the inventory's name).
/// Errors (kUsage): an empty list, one host named twice, alike or not ("h1,h1", "h1,H1":
/// check_distinct_hosts), or a name not in the inventory (with "did you mean" and the
/// inventory's path).
util::Result<std::vector<InventoryHost>> select_hosts(const Inventory& inv, std::string_view spec);

/// The one message for a host name that `where` (an inventory's path, a cluster state file)
/// does not have: "no host 'h9' in WHERE (did you mean 'h1'?); its hosts: h1, h2, ..." (at most
/// 12 listed), kUsage. select_hosts' and every other command's that takes host names.
util::Error unknown_host_error(std::string_view name, const std::vector<std::string>& known,
                               std::string_view where);

/// Ok when no two of `names` name one host (util::same_host: "Studio1", "studio1" and
/// "studio1." are one; "h1" twice too); else kUsage naming both, starting with `what`
/// ("--hosts"): the one duplicate rule of every list of hosts the operator gives.
util::Status check_distinct_hosts(const std::vector<std::string>& names, std::string_view what);

/// Splits a comma list of host names: trimmed, empty items dropped, order kept. A repeat is
/// kept, for check_distinct_hosts to refuse (never dropped in silence).
std::vector<std::string> split_host_list(std::string_view spec);

/// The directory of lab NAME: ${XDG_STATE_HOME:-$HOME/.local/state}/clusterctl/labs/NAME.
/// `lab up` writes NAME's inventory.yaml there (with ssh_config and known_hosts beside it), so
/// `--lab NAME` means `--inventory lab_dir(NAME)/inventory.yaml`.
std::filesystem::path lab_dir(const std::string& name);

/// Checks a lab name: 1 to 32 letters, digits, '-' or '_', starting with a letter or digit (so
/// lab_dir(NAME) is one directory under labs/, never a path elsewhere). Errors (kUsage) say
/// what is allowed.
util::Status validate_lab_name(std::string_view name);

}  // namespace cc::remote
