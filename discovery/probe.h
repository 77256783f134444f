// The probes: which commands discovery runs on a host, how they travel (one round trip per
// host), and how their raw outputs are kept (a support bundle) and turned into HostFacts.
//
// One round trip. A live probe sends a single POSIX sh script that runs `uname -s`, then the
// command list of that OS, each with stdin from /dev/null and its stdout, stderr and exit status
// captured into a private temporary directory (removed on exit), and prints them as sections:
//
//   @@clusterctl-NONCE@@ out KEY\n<stdout bytes>\n@@clusterctl-NONCE@@ err KEY\n<stderr bytes>
//   \n@@clusterctl-NONCE@@ exit KEY STATUS\n
//
// KEY is remote::replay_key(argv) (a filename-safe slug), NONCE 16 random hex digits chosen per
// run so that no output can forge a marker. The neighbour probe (neighbours.h) uses the same
// framing with its pings run in parallel.
//
// Bundles. `clusterctl collect` saves every section as BUNDLE/HOST/KEY.{out,err,exit}, the
// layout of remote::ReplayExecutor, so `discover --from BUNDLE` replays the same commands one
// by one (ProbeMode::kEach) and reaches the same result offline.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/host_facts.h"
#include "discovery/macos_facts.h"
#include "remote/executor.h"
#include "util/result.h"

namespace cc::discovery {

/// One probe command: the command line as documented in the parser headers (kIfconfigCommand,
/// ...) and the argv that runs it (`sh -c LINE` for the sysfs dumps, which need globs).
struct ProbeCommand {
  std::string line;
  std::vector<std::string> argv;
  std::string key() const;  // remote::replay_key of argv
};

enum class ProbeOs { kMacos, kLinux };

/// `uname -s`: run first; "Darwin" or "Linux" picks the list below.
ProbeCommand uname_command();
/// `printenv SSH_CONNECTION`: the management address is its third field (the address sshd
/// accepted the connection on); absent for a local host.
ProbeCommand ssh_connection_command();
/// The commands of one OS, in the order they run (uname and printenv SSH_CONNECTION included).
/// macOS: sw_vers, sysctl, system_profiler SPThunderboltDataType -json, networksetup,
/// ifconfig -a, rdma_ctl status, ibv_devices, ibv_devinfo -v, `ioreg -rd1 -c
/// IOPlatformExpertDevice` (the hardware UUID). Linux: /etc/os-release, /proc/meminfo, the CPU
/// model line of /proc/cpuinfo, the DMI product name, `ip -j -d addr`, `rdma -j link`, the
/// sysfs dumps of /sys/bus/thunderbolt and /sys/class/infiniband, /etc/machine-id and
/// /var/lib/dbus/machine-id (machine_id.h).
std::vector<ProbeCommand> probe_commands(ProbeOs os);

/// Every section of one host's probe, by key.
struct ProbeOutputs {
  std::map<std::string, RawOutput> by_key;
  /// The executor's host_key_fingerprint() after the probe ran ("" for none): a fact of the
  /// connection, not of a command; saved beside the sections as remote::kHostKeyFile.
  std::string ssh_host_key;
  /// The command's output, or nullptr when the probe did not run it.
  const RawOutput* find(const ProbeCommand& cmd) const;
};

/// Commands another part (healthcheck) adds to the host probe so that they travel in the same
/// round trip, framed the same way: `first` right after uname (both OSes), then the OS's own
/// commands, then `on_macos` or `on_linux`, then `last` (both OSes). Keys must not collide with
/// the probe's own (probe_commands()).
struct ProbeExtras {
  std::vector<ProbeCommand> first;
  std::vector<ProbeCommand> on_macos;
  std::vector<ProbeCommand> on_linux;
  std::vector<ProbeCommand> last;
};

/// Runs `commands` through `sh` with the section framing above: in order, or all at once
/// (`parallel`, for the neighbour pings). With `os_switch`, the script runs uname first and
/// then the list of the OS it names, with `extras` around it (the commands argument is ignored).
std::string probe_script(std::string_view nonce, const std::vector<ProbeCommand>& commands,
                         bool parallel, bool os_switch, const ProbeExtras& extras = {});

/// Splits a probe script's stdout into sections. Errors (kCheckFailed, message starts with
/// `host`): a section cut short (the output ended early: a timeout or a killed shell), a
/// malformed marker or exit status.
util::Result<ProbeOutputs> split_probe_output(std::string_view host, std::string_view out,
                                              std::string_view nonce);

/// 16 random hex digits (std::random_device).
std::string make_nonce();

enum class ProbeMode {
  kScript,  // one shell script, one round trip (live hosts)
  kEach,    // one run() per command (replayed bundles: nothing to gain from a script)
};

/// Runs the host probe: uname, then its OS's commands. Errors: the executor's (kUnreachable
/// for an unreachable host), kCheckFailed for an unsupported OS, a failed or timed-out script,
/// or broken framing; every message starts with the host.
/// `extras` are run in the same round trip (kScript) or one by one after the OS's commands
/// (kEach; a command the bundle did not record is left out).
util::Result<ProbeOutputs> run_host_probe(remote::Executor& ex, ProbeMode mode,
                                          std::chrono::milliseconds timeout,
                                          const ProbeExtras& extras = {});

/// Runs arbitrary probe commands (the neighbour pings) the same way, all at once in kScript
/// mode. An empty list returns at once with no sections.
util::Result<ProbeOutputs> run_commands(remote::Executor& ex,
                                        const std::vector<ProbeCommand>& commands,
                                        ProbeMode mode, std::chrono::milliseconds timeout);

/// Writes every section to DIR/KEY.{out,err,exit} atomically (the replay bundle layout), and
/// the host key fingerprint, when there is one, to DIR/ssh-host-key.
util::Status save_probe_outputs(const std::filesystem::path& dir, const ProbeOutputs& outputs);

/// The host's facts from its probe outputs (macOS through assemble_macos_facts, Linux through
/// assemble_linux_facts). `fallback_address` is the management address used when the probe
/// did not report one (a local host). ssh_host_key comes from outputs.ssh_host_key, machine_id
/// from the OS's identity commands (absent or unusable: nullopt, not an error).
/// Errors (kCheckFailed, naming the host and the command).
util::Result<HostFacts> facts_from_probe(std::string_view host, const ProbeOutputs& outputs,
                                         std::string_view fallback_address);

}  // namespace cc::discovery
