// The Executor over SSH (libssh): real hosts and the lab's sshd processes.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "remote/executor.h"
#include "remote/resolve.h"

namespace cc::remote {

struct SshOptions {
  /// OpenSSH client config (-F FILE): only this file is read. Without it, ~/.ssh/config then
  /// /etc/ssh/ssh_config, as ssh does. Honoured: Host, HostName, User, Port, IdentityFile,
  /// UserKnownHostsFile (what libssh 0.10 supports; Match only in part, and Host lines after
  /// a HostName, negated Host patterns and Includes of several paths otherwise than ssh, which
  /// cli/ notes: remote/ssh_config_scan.h), and ProxyJump, run through the
  /// system's ssh with this same file and known_hosts (jump_proxy_command, ssh_session.h).
  std::optional<std::filesystem::path> config_file;
  /// When set, the only known_hosts file consulted and updated (UserKnownHostsFile from the
  /// config and the global /etc/ssh/ssh_known_hosts are then ignored).
  std::optional<std::filesystem::path> known_hosts;
  /// Record host keys that are not yet known (as ssh's StrictHostKeyChecking=accept-new).
  /// A known host whose key changed is refused regardless.
  bool accept_new_host_keys = false;
  /// The whole connection (name lookup, TCP connect, SSH handshake, host key check and
  /// authentication), and the bound of each later protocol round trip (channel open, SFTP
  /// request). The name lookup alone takes at most remote::kResolveTimeout (5 s) of it.
  std::chrono::milliseconds connect_timeout{10'000};
  /// The name lookup (getaddrinfo; tests stand in a slow one), run by remote::resolve_host.
  LookupFn lookup = ::getaddrinfo;
  /// Appended to the message when the host name does not resolve, both at connect time and
  /// in check_destination (cli/: "; if it is a host of a lab, add --lab NAME"). "" for none.
  std::string unresolved_hint;
};

/// One SSH session to one host, opened on the first run()/upload() and reused by later ones;
/// a session that died (host rebooted, network gone) is reopened on the next call.
///
/// Commands: argv is sent as shell_quote(argv) and a shell Command as
/// shell_quote({"sh", "-c", SCRIPT}), so the remote login shell (which must be POSIX: sh,
/// bash, zsh, ksh, dash) passes exactly these arguments. No PTY, no agent forwarding. The line
/// is prefixed with `echo clusterctl-pid=$$ >&2; `: the login shell reports its pid (sshd made
/// it a process-group leader) on stderr, where run() removes it again.
/// On timeout (and Ctrl-C) the remote command is ended twice over: a "signal" request TERM
/// (sshd refuses those for root logins) and, from a second channel, `kill -TERM -- -PID` of the
/// whole remote process group, then `kill -9` of what is left after a second (the command's
/// traps run first: the discovery probe removes its temporary directory); the channel is then
/// closed and the result has timed_out = true with the output read so far.
/// Death by signal N (SSH "exit-signal") gives 128+N for the POSIX-numbered signals (HUP INT
/// QUIT ILL TRAP ABRT FPE KILL SEGV PIPE ALRM TERM), 255 for others (as ssh exits 255).
///
/// Errors, all naming the host and what to do:
///  - kUnreachable: name resolution or TCP connect failed or timed out (the message names the
///    host name the lookup gave no answer for); the SSH handshake
///    failed; host key unknown (message: the key's SHA256 fingerprint and the flag
///    --accept-new-host-keys), changed or of another type (message: the known_hosts file and
///    `ssh-keygen -R`); public-key authentication (agent, IdentityFile, ~/.ssh/id_*) denied;
///    the connection broke during a command (the session is then dropped).
///  - kUsage: a malformed Command; a config file (-F) that does not exist; for upload(), a
///    local file that cannot be read or a remote path that cannot be created (SFTP status:
///    no such directory, permission denied). A temporary file that cannot be written, closed,
///    given its mode or renamed into place is the host's fault: kUnreachable.
///  - kInterrupted: Ctrl-C (util::interrupted(), polled at least every 100 ms while connecting
///    and while a command runs).
/// Not thread-safe (one thread per executor, as fan_out does). Key material never appears in
/// messages; only public-key fingerprints.
class SshExecutor final : public Executor {
 public:
  /// `host` is the name shown to the operator; `destination` is what ssh would be given
  /// ("alias", "host.example", "user@host"); both usually equal.
  SshExecutor(std::string host, std::string destination, SshOptions options);
  ~SshExecutor() override;
  SshExecutor(const SshExecutor&) = delete;
  SshExecutor& operator=(const SshExecutor&) = delete;

  const std::string& host() const override { return host_; }
  util::Result<CommandResult> run(const Command& cmd, const RunOptions& opts) override;
  /// The key checked against known_hosts when the session was opened; kept after the session
  /// is dropped (a reopened one must pass the same check). "" before the first connection.
  std::string host_key_fingerprint() const override { return host_key_; }
  /// check_destination(destination, options), its message led by the host's name ("h2: ...").
  util::Status check() const override;
  /// Over SFTP: writes REMOTE_PATH.clusterctl-tmp-MACHINE-PID-RANDOM (upload_temp.h), sets
  /// `mode`, renames it over `remote_path` (POSIX rename when the server offers it, as
  /// OpenSSH's does). Removes beside it the temporaries that earlier uploads to `remote_path`
  /// left and nobody will finish (stale_upload_temp). Each SFTP round trip is bounded by
  /// `timeout`, and the whole upload too.
  util::Status upload(const std::filesystem::path& local, const std::string& remote_path,
                      unsigned mode, std::chrono::milliseconds timeout) override;

 private:
  struct Session;
  util::Status connect();
  /// Ends the session; `broken`: without waiting on the peer.
  void disconnect(bool broken = false);

  std::string host_;
  std::string destination_;
  SshOptions options_;
  std::unique_ptr<Session> session_;
  std::string host_key_;  // of the last session that was opened
};

/// Whether `destination` names a host at all, before anything connects: the SSH config
/// (options.config_file, else ~/.ssh/config) is applied and the resulting host name looked up.
/// Error (kUsage) when the name certainly does not exist (getaddrinfo: EAI_NONAME), naming
/// the config; when libssh refuses the destination (malformed, or a scope that is no interface
/// of this machine: destination_refusal's reason); when the config file does not exist or
/// cannot be used (as connecting would report it). A host behind a ProxyCommand, a DNS server that does not answer (the lookup is
/// given up after remote::kResolveTimeout) or anything else is left to the connection (ok here).
util::Status check_destination(const std::string& destination, const SshOptions& options);

/// The host name ssh connects to for `destination` once the SSH config (options.config_file,
/// else ~/.ssh/config) is applied: its HostName, else the destination's own host, without a
/// `user@` or IPv6 brackets ("studio1" with `HostName 192.168.1.10` -> "192.168.1.10";
/// "root@h1" without an entry -> "h1"). A name of the operator's SSH config only is no name
/// the hosts can look up; this one is what this machine reaches (behind a ProxyJump, what the
/// jump host reaches). nullopt when the destination or the config cannot be used
/// (check_destination says why). Connects nowhere, looks nothing up.
std::optional<std::string> configured_host_name(const std::string& destination,
                                                const SshOptions& options);

}  // namespace cc::remote
