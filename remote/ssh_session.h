// Internal to the SSH executor (ssh_connect.cc, ssh_executor.cc, ssh_upload.cc): the libssh
// session an SshExecutor owns. Not for use outside remote/.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <libssh/libssh.h>

#include "remote/ssh_executor.h"

namespace cc::remote {

struct SshExecutor::Session {
  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() {
    if (ssh == nullptr) return;
    // A broken connection is closed without waiting; a healthy one says goodbye (bounded by
    // the round-trip timeout).
    ssh_set_blocking(ssh, broken ? 0 : 1);
    ssh_disconnect(ssh);
    ssh_free(ssh);
  }

  ssh_session ssh = nullptr;
  bool broken = false;
  std::string target;  // "user@address:port" after the config was applied, for messages
};

/// The remote login shell first reports its pid on stderr (read back and removed from the
/// output), so that on timeout the whole remote process group can be killed: sshd makes that
/// shell a session and process-group leader, and refuses "signal" requests for root logins.
inline constexpr std::string_view kPidMarker = "clusterctl-pid=";

/// "echo clusterctl-pid=$$ >&2; LINE".
std::string with_pid_report(const std::string& line);

/// Removes the pid report line from `err` (normally its first line; after anything a shell
/// startup file printed otherwise) once complete. Returns the pid; 0 while not yet seen; -1
/// when it cannot come any more (64 KiB of stderr without it, or a malformed pid).
long take_pid_report(std::string& err);

/// libssh 0.10 runs `ProxyJump J` as the ProxyCommand `ssh -W '[%h]:%p' J` (with -l, -p and -J
/// for a user, a port and further hops) through the system's ssh(1), which reads only
/// ~/.ssh/config (not -F or an inventory's ssh_config, so J went unknown) and would ask for a
/// password on the terminal while libssh hides its stderr. Returns that command with
/// clusterctl's own files and no prompts: `ssh -F CONFIG -o UserKnownHostsFile=KNOWN -o
/// GlobalKnownHostsFile=/dev/null -o BatchMode=yes -W ...` (each file when `options` has
/// one, absolute); `proxy` unchanged when it is not that form (a ProxyCommand the operator
/// wrote is theirs).
std::string jump_proxy_command(std::string_view proxy, const SshOptions& options);

/// Sets libssh's per-round-trip timeout (SSH_OPTIONS_TIMEOUT + _USEC), at least 1 ms.
void set_round_trip_timeout(ssh_session s, std::chrono::milliseconds timeout);

}  // namespace cc::remote
