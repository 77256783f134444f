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
#include "util/term.h"

namespace cc::cli {

/// The inventory named by --lab NAME (lab_dir(NAME)/inventory.yaml) or --inventory FILE, or
/// nullopt when neither is given. Errors (kUsage): both given; a lab that this state directory
/// does not have (missing_lab_error); an inventory that does not load
/// (remote::load_inventory's file:line:column message).
util::Result<std::optional<remote::Inventory>> selected_inventory(const GlobalOptions& g);

/// How the operator chose lab `g.lab`, for every message that names it: "--lab or
/// CLUSTERCTL_LAB=NAME" when the environment variable holds that name (an export the operator
/// may not have in mind; CLI11 does not tell whether the command line gave it too), else "--lab
/// NAME"; "" when `g.lab` is not the lab the command line gave (a job's `cluster: lab:NAME`, a
/// cluster state's or a job record's lab) or there is none. The one wording of
/// options_for_state's conflict and of no_lab_error.
std::string lab_choice(const GlobalOptions& g);

/// Why `--lab NAME` reaches no lab (its `inventory`, lab_dir(NAME)/inventory.yaml, is missing):
/// the one message of every command that resolves --lab (through selected_inventory), kUsage.
/// Implemented beside `lab` (cmd_lab.cc, Linux): when this machine has a lab of that name that
/// is not this state directory's (another user's or state directory's, or remains), it says so
/// as `lab status` does (lab::status_error), never advising `lab up` for a taken name; only
/// when the name is free does it say to create it (no_lab_error). cmd_lab_other.cc: no lab
/// exists where there are no network namespaces: no_lab_error.
/// `chosen`: lab_choice of the options that named it, said in no_lab_error's message.
util::Error missing_lab_error(const std::string& name, const std::filesystem::path& inventory,
                              const std::string& chosen = "");

/// "no lab named 'NAME' (CHOSEN; no INVENTORY); existing labs: ... Create it with `clusterctl
/// lab up --name NAME`, or use ...": for a name no lab on this machine has. `chosen`: how the
/// name was given (lab_choice: "--lab or CLUSTERCTL_LAB=NAME"), or "".
util::Error no_lab_error(const std::string& name, const std::filesystem::path& inventory,
                         const std::string& chosen = "");

/// The names of the labs of this state directory (`clusterctl lab up`), naturally sorted.
std::vector<std::string> existing_labs();

/// The labs there are beside `name`, a lab name that no lab of this state directory has: what
/// every command says of such a name (no_lab_error, `lab status`, `lab down`), so that a typo
/// is answered with the labs that are there, never with silence or "already down".
struct OtherLabs {
  std::vector<std::string> names;  // existing_labs()
  std::string listed;              // "existing labs: nu7, nu8", or "there are no labs"
  std::string did_you_mean;        // " (did you mean 'nu7'?)" for a close name, else ""
};
OtherLabs other_labs(const std::string& name);

/// How to pick one of `labs` instead: "use lab 't3a' (--lab t3a)" for one, "use one of them
/// (--lab NAME)" for several, "" for none.
std::string use_lab_hint(const std::vector<std::string>& labs);

/// For hosts reached without an inventory (neither --lab nor --inventory, no --replay) while
/// labs exist: "; if it is a host of a lab, add --lab t3a" (with several labs: "--lab NAME
/// (labs: a, b)"). "" otherwise. The one place every command that takes hosts gets it from:
/// the SSH options of make_executors carry it (remote::SshOptions::unresolved_hint), so that
/// each message about a host name that does not resolve ends with it, found before connecting
/// (host_problems) or on connecting (exec, discover, health, ...).
std::string lab_hint(const GlobalOptions& g);

/// The host name this machine reaches for SSH destination `destination` (an SSH config alias,
/// `user@host`) with the options make_executors uses: the config's HostName, else the
/// destination's host (remote::configured_host_name); `destination` itself with --replay or
/// when the config cannot be used (connecting says why). Connects nowhere.
std::string reached_host_name(const GlobalOptions& g, const std::string& destination);

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

/// Whether make_executors reaches host `name` on this machine without SSH (the name "local"
/// without an inventory or a replay).
bool reached_locally(const GlobalOptions& g, const std::string& name);

/// A new connection to host `names[h]` each call (make_executors with one name), for a launch/
/// job. `g` and `names` must outlive the factory.
std::function<util::Result<std::unique_ptr<remote::Executor>>(size_t)> one_host_connector(
    const GlobalOptions& g, const std::vector<std::string>& names);

/// What is wrong with reaching each of `names` (hosts make_executors would be given), found
/// without connecting to any, all at once (remote::check_each, in parallel): with an
/// inventory, a name it does not have (remote::select_hosts' "did you mean"), else a
/// destination its SshExecutor::check refuses, as "INVENTORY: host h2: 'fe80::1%nosuch0' is not
/// a valid SSH destination: ...; fix host h2's `ssh:` in INVENTORY"; without one, the name as an
/// SSH destination (remote::check_destination: malformed, a scope that is no interface here, a
/// name that resolves nowhere; "local" always passes; the message ends with lab_hint). Nothing
/// is checked for --replay. Returns one message per host with a problem, in the order of
/// `names` (empty: all can be tried); an error (kUsage) only when the inventory itself cannot
/// be selected or read.
util::Result<std::vector<std::string>> host_problems(const GlobalOptions& g,
                                                     const std::vector<std::string>& names,
                                                     const util::OutputStyle& style = {});

/// host_problems per host: one entry for each of `names`, in order, "" for a host that can be
/// tried (launch places each at its job file line).
util::Result<std::vector<std::string>> host_problems_each(const GlobalOptions& g,
                                                          const std::vector<std::string>& names,
                                                          const util::OutputStyle& style = {});

/// The one pre-check of every command that changes or runs something on several hosts (exec,
/// push, launch, network apply, rdma enable): ok, or remote::hosts_refused (kUsage) listing
/// every host_problems line at once, before anything ran on any host.
util::Status check_hosts(const GlobalOptions& g, const std::vector<std::string>& names,
                         const util::OutputStyle& style = {});

/// make_executors after check_hosts passed for every host `hosts_spec` chooses: what a command
/// that acts on the hosts uses, so that a bad destination of one host stops it before any
/// other host ran anything.
util::Result<std::vector<std::unique_ptr<remote::Executor>>> make_checked_executors(
    const GlobalOptions& g, std::string_view hosts_spec, const util::OutputStyle& style = {});

}  // namespace cc::cli
