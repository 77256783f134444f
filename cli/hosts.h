// Turning --hosts (and the global --lab / --inventory / -F options) into Executors.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/context.h"
#include "remote/executor.h"
#include "remote/inventory.h"
#include "util/result.h"

namespace cc::cli {

/// The inventory named by --lab NAME (lab_dir(NAME)/inventory.yaml) or --inventory FILE, or
/// nullopt when neither is given. Errors (kUsage): both given; a lab that does not exist
/// (the message says to run `clusterctl lab up --name NAME`, and lists the labs that do); an
/// inventory that does not load (remote::load_inventory's file:line:column message).
util::Result<std::optional<remote::Inventory>> selected_inventory(const GlobalOptions& g);

/// The names of the labs of this state directory (`clusterctl lab up`), naturally sorted.
std::vector<std::string> existing_labs();

/// How to pick one of `labs` instead: "use lab 't3a' (--lab t3a)" for one, "use one of them
/// (--lab NAME)" for several, "" for none.
std::string use_lab_hint(const std::vector<std::string>& labs);

/// For a host reached without an inventory (neither --lab nor --inventory, no --replay) whose
/// name does not resolve (remote::check_destination) while labs exist: "; if it is a host of
/// a lab, add --lab t3a" (with several labs: "--lab NAME (labs: a, b)"). "" otherwise.
std::string lab_hint(const GlobalOptions& g, const std::string& host);

/// One Executor per host chosen by `hosts_spec` ("h1,h2" or "all"), in that order.
///  - With an inventory (--lab/--inventory): names must be inventory hosts ("did you mean");
///    each host is reached at its `ssh` destination with the inventory's ssh_config and
///    known_hosts (-F overrides the ssh_config).
///  - Without one: each name is an SSH destination as for ssh (alias from -F or
///    ~/.ssh/config, host name, user@host); the name "local" is this machine (fork/exec, no
///    SSH). "all" is a usage error that says to pass --lab NAME or --inventory FILE.
///  - With --replay BUNDLE (a recorded bundle, see remote/replay_executor.h): hosts answer from
///    it; "all" without an inventory means every host directory in the bundle.
/// Connect timeout and --accept-new-host-keys come from `g`.
util::Result<std::vector<std::unique_ptr<remote::Executor>>> make_executors(
    const GlobalOptions& g, std::string_view hosts_spec);

/// A new connection to host `names[h]` each call (make_executors with one name), for a launch/
/// job. `g` and `names` must outlive the factory.
std::function<util::Result<std::unique_ptr<remote::Executor>>(size_t)> one_host_connector(
    const GlobalOptions& g, const std::vector<std::string>& names);

/// Whether each of `names` is a host make_executors can reach, checked without connecting:
/// with an inventory, it must be one of its hosts (remote::select_hosts' "did you mean");
/// without one, an SSH destination that exists (remote::check_destination: a Host entry of the
/// SSH config or a host name; "local" always; its message ends with lab_hint). Returns one message per unknown name (empty:
/// all known); an error (kUsage) only when the inventory itself cannot be selected or read.
util::Result<std::vector<std::string>> unknown_hosts(const GlobalOptions& g,
                                                     const std::vector<std::string>& names);

}  // namespace cc::cli
