// Running the lab's external programs (ip, ssh-keygen, unshare, sshd) through an Executor on
// this machine, each with a timeout; a failure becomes an Error that names the command and
// quotes its stderr.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "remote/executor.h"
#include "util/result.h"

namespace cc::lab {

/// How long one `ip` call (or `ip -batch`) may take: it only edits kernel tables, so 30 s
/// means the kernel or the machine is stuck.
inline constexpr std::chrono::seconds kIpTimeout{30};

/// Runs argv (no shell) with `timeout`, feeding `input` to stdin when given. Success only for
/// exit status 0. Errors: the Executor's own (kInterrupted after Ctrl-C, ...); otherwise
/// `failure_code` with "`ARGV` failed (exit status N): STDERR", "`ARGV` timed out after S s",
/// or, for status 127, a hint to install the package that provides the program.
util::Result<remote::CommandResult> run_checked(
    remote::Executor& local, const std::vector<std::string>& argv,
    std::chrono::milliseconds timeout, std::optional<std::string> input = std::nullopt,
    util::ExitCode failure_code = util::ExitCode::kUsage);

/// A network interface as `ip -j link show` lists it.
struct Link {
  std::string name;       // "ifname"
  std::string alias;      // "ifalias", empty when unset
  std::string operstate;  // "operstate": "UP", "DOWN", "LOWERLAYERDOWN", "UNKNOWN", ...
};

/// Parses `ip -j link show` output. Errors (kUsage) when it is not the JSON ip prints.
util::Result<std::vector<Link>> parse_ip_links(std::string_view json);

/// The interfaces of the root network namespace (`ip -j link show`), or of the named network
/// namespace `netns` (`ip -n NETNS -j link show`).
util::Result<std::vector<Link>> list_links(remote::Executor& local, const std::string& netns = {});

}  // namespace cc::lab
