// The remote side of a launch: a small POSIX sh script that runs one rank on its host, and
// the scripts that set up and clean a host's job directory. Every value reaches the remote
// shell as an argument quoted by remote::shell_quote (the rank wrapper's are named: --job-dir
// DIR, --rank N, ...), or through stdin; the script
// texts themselves are constants.
//
// The rank wrapper (argv from wrapper_argv()):
//   - reads the rank's environment from stdin: `export NAME='value'` lines (quoted by
//     remote::shell_quote_arg) ended by a line holding the launch's nonce, so secrets never
//     appear on a command line or in a file;
//   - enters the working directory and starts the command in its own session and process
//     group (setsid(1); on macOS, which has no setsid command, perl's POSIX::setsid), stdin
//     from /dev/null; the rank first prints "NONCE PID" on stderr (StartMarker removes it),
//     and its pid goes to JOBDIR/rank-R.pid with its start time ("PID IDENT", see below) for
//     `kill -PID` of its whole group; a pid that cannot be recorded there (a full disk) ends
//     the rank at once (exit 126, said on stderr): no rank runs that nothing records;
//   - watchdog: stdin then stays open (RunOptions::keep_stdin_open), and clusterctl writes a
//     heartbeat line to it every kHeartbeatInterval (RunOptions::heartbeat). Its end means the
//     SSH connection to clusterctl is gone (sshd killed); no heartbeat for
//     kHeartbeatTimeout means the host was cut off without either side's TCP noticing yet
//     (`ip link set down`, a pulled cable). Either way the watchdog sends SIGTERM to the rank's
//     group, SIGKILL after the grace period, and removes the job directory. Portable to dash
//     and macOS's bash 3.2 /bin/sh (no `read -t`): a reader process touches JOBDIR/beat-R per
//     heartbeat, a checker looks at it once a second;
//   - the rank's stdout and stderr are FIFOs in JOBDIR (out-R, err-R) that two `cat` relays
//     copy to the wrapper's own: when the rank exits, the relays get 2 s to pass on what is
//     left and are then ended, so a daemon the rank left in a session of its own (setsid)
//     holding its output cannot keep the connection, and the job, open;
//   - when the rank exits, kills what is left in its group and exits with the rank's status
//     (128+N after death by signal N, as sh reports it). Where perl exists (macOS, Debian) the
//     rank is started by a small perl waiter (waiter_perl) that records in JOBDIR/end-R whether
//     it exited ("exit N") or died by a signal ("signal N"), which sh cannot tell apart;
//     end_record_argv reads it back.
//   - its own tools (sh, perl, setsid, mkfifo, cat, ps, ...) never see a kToolEnv variable
//     (LD_PRELOAD, PERL5OPT, BASH_ENV, ...), wherever it came from: the job's env, the MLX
//     hostfile's envs and secrets travel as _ccw_k_NAME (env_payload; mpirun_env as _ccw_x_NAME),
//     the host's own (~/.ssh/environment, a login shell's rc file) are moved there by the first
//     lines of every script (tool_env_guard()), and the waiter puts them back under their own
//     names in the rank's process just before it runs the command. So a job's
//     `PERL5OPT: -Mstrict=nonexistent` or `LD_PRELOAD: /no/such.so` reaches the rank, exactly,
//     and cannot stop the waiter that starts it.
//
// Trust. JOBDIR (/tmp/clusterctl-job-JOBID-RANDOM-hH) has a random part no one can predict,
// and setup_argv creates it with mkdir (never -p, never reused: an existing path is an error)
// under umask 077. Every script that reads a file in it first checks that JOBDIR is a real
// directory owned by this user (not a link, not planted by another user after ours was
// removed), and signals a pid file's group only while the pid's start time still matches the
// one recorded beside it, so neither a forged nor a stale pid file can aim a signal. JOBDIR
// also holds `launcher` ("HOST PID START JOBID": the clusterctl that made it), which the
// janitor (leftovers_argv) reads to remove what a launcher killed with -9 left behind.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/atomic_file.h"

namespace cc::launch {

/// How often clusterctl writes a heartbeat line to every rank wrapper's stdin.
inline constexpr std::chrono::seconds kHeartbeatInterval{1};
/// A wrapper that got no heartbeat for this long ends its rank (the host is cut off); on
/// clusterctl's side a rank connection whose heartbeats stay unacknowledged this long is lost
/// (TCP_USER_TIMEOUT on Linux, TCP_RXT_CONNDROPTIME on macOS), which fails the job (exit 4).
/// Ten heartbeats: a loaded host or a brief network hiccup does not end a job.
inline constexpr std::chrono::seconds kHeartbeatTimeout{10};

/// One environment variable of a rank (name valid for sh, value any bytes but NUL).
using EnvVar = std::pair<std::string, std::string>;

/// Variables that change how a program is loaded or how perl and sh start, rather than what it
/// is given to work on: the dynamic loader's (ld.so(8), dyld(1)), glibc's allocator tunables,
/// perl's (perlrun: PERL5OPT -M modules, PERL5LIB, ...) and the shells' start-up files. The
/// wrapper's own tools run without them; a rank gets them as set (wrapper.h). Not SHELLOPTS,
/// BASHOPTS or POSIXLY_CORRECT: bash (macOS's sh) sets or acts on them itself, and cannot
/// unset the first two.
// clang-format off
inline constexpr std::string_view kToolEnv[] = {
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "LD_BIND_NOT", "LD_BIND_NOW", "LD_DEBUG",
    "LD_DEBUG_OUTPUT", "LD_DYNAMIC_WEAK", "LD_HWCAP_MASK", "LD_ORIGIN_PATH", "LD_PROFILE",
    "LD_PROFILE_OUTPUT", "LD_SHOW_AUXV", "LD_TRACE_LOADED_OBJECTS", "LD_USE_LOAD_BIAS",
    "LD_VERBOSE", "LD_WARN", "LD_ASSUME_KERNEL", "GLIBC_TUNABLES", "MALLOC_CHECK_",
    "MALLOC_PERTURB_", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH", "DYLD_FRAMEWORK_PATH",
    "DYLD_FALLBACK_LIBRARY_PATH", "DYLD_FALLBACK_FRAMEWORK_PATH", "DYLD_IMAGE_SUFFIX",
    "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "PERLIO", "PERLIO_DEBUG", "PERL_UNICODE",
    "BASH_ENV", "ENV", "CDPATH"};
// clang-format on
/// The name a kToolEnv variable travels under to the waiter, which restores it in the rank.
inline constexpr std::string_view kToolEnvHidden = "_ccw_k_";
/// The name mpirun forwards one under (-x): the rank script turns it into kToolEnvHidden's.
inline constexpr std::string_view kToolEnvForwarded = "_ccw_x_";
/// True for a kToolEnv name.
bool is_tool_env(std::string_view name);

struct WrapperArgs {
  std::string job_dir;  // the job's directory on the host (absolute)
  int rank = 0;
  std::string cwd;    // the rank's working directory; empty: job_dir
  int grace_s = 30;   // watchdog: SIGTERM to SIGKILL, seconds
  std::string nonce;  // ends the environment on stdin and marks the start line; [0-9a-f]+
  std::vector<std::string> command;  // the rank's argv (not empty)
  int heartbeat_timeout_s = static_cast<int>(kHeartbeatTimeout.count());  // watchdog, seconds
};

/// {"sh", "-c", WRAPPER, "clusterctl-rank", "--job-dir", job_dir, "--rank", rank, "--cwd", cwd,
/// "--grace", grace, "--nonce", nonce, "--heartbeat-timeout", seconds, "--waiter",
/// waiter_perl(), "--", command...}: run it as a remote::Command argv (shell_quote'd for the
/// remote login shell). The wrapper exits 125 naming a missing or unknown argument.
std::vector<std::string> wrapper_argv(const WrapperArgs& args);

/// What the wrapper reads on stdin: one `export NAME=VALUE` per variable (value shell-quoted;
/// a kToolEnv NAME as kToolEnvHidden + NAME, see above), then the nonce line.
std::string env_payload(const std::vector<EnvVar>& env, std::string_view nonce);

/// A script (argv for remote::Command) that creates the job directory, mode 0700, which must
/// not exist yet, and writes `launcher` (one line, see launcher_record) into it.
std::vector<std::string> setup_argv(const std::string& job_dir, const std::string& launcher);
/// This process's launcher record: "HOST PID START JOBID" (util::host_name,
/// util::process_start_time).
std::string launcher_record(const std::string& job_id);
/// True when `record` names a launcher on this machine that is no longer running (its pid is
/// gone or names a later process); false for a live one, another machine's, or a malformed
/// record.
bool launcher_gone(std::string_view record);
/// A script printing "DIR RECORD" for each of this user's job directories on the host, RECORD
/// being its launcher record.
std::vector<std::string> leftovers_argv();
/// Removes one job directory the janitor found (killing its live groups); prints "removed"
/// when this call removed it (another janitor sharing the host's /tmp may have first).
std::vector<std::string> sweep_argv(const std::string& job_dir);
/// A script that checks the rank's working directory `cwd` (as written in the job: absolute,
/// or relative to `job_dir`) is a directory this user can enter on the host; exits 1 with
/// "the working directory ABSOLUTE does not exist on HOST (cwd: X is relative to ...)" on
/// stderr when not. Run once per host after its uploads, before any rank starts.
std::vector<std::string> cwd_check_argv(const std::string& job_dir, const std::string& cwd);
/// A script that writes its stdin to `path` (mode 0600 under the wrapper's umask).
std::vector<std::string> write_file_argv(const std::string& path);
/// Sends `signal` ("TERM" or "KILL") to every rank's process group listed in job_dir.
std::vector<std::string> signal_argv(const std::string& job_dir, std::string_view signal);
/// SIGKILL to every rank group still listed, then removes the job directory.
std::vector<std::string> cleanup_argv(const std::string& job_dir);

/// What every script run on a host starts with: tool_env_guard(), then the shell functions
/// that check JOBDIR and pid files (ours, ident, pidfile, live). mpi.cc's rank script starts
/// with them too.
std::string_view trust_functions();
/// Shell code that moves each kToolEnv variable the script was started with to
/// kToolEnvHidden + NAME (exported), so that the script's tools run without it, and sets
/// _ccw_R to code that moves them back (for a shell that then execs the rank: `eval "$_ccw_R"`).
std::string_view tool_env_guard();

/// The perl waiter's text (see above): `perl -e TEXT -- NEWSESSION FILE NONCE ARGV...`. In
/// the rank's process, every kToolEnvHidden + NAME becomes NAME again before the exec.
std::string_view waiter_perl();
/// A script that prints "in use" when TCP `port` on `address` ("10.0.0.1", "fd00::1", or a
/// name, resolved on the host as libclustercomm's rank 0 resolves it: its IPv4 address when it
/// has one, else its IPv6 one) cannot be bound as a listener would bind it (SO_REUSEADDR):
/// something listens on it or holds it. It uses perl, else python3, and prints "unchecked" when
/// the host has neither; nothing when the port is free or the host cannot tell. Before that,
/// "loopback ADDR" when the address it would bind is a loopback one (127.0.0.0/8, ::1): a name
/// that the host resolves to itself (Debian's `127.0.1.1 HOSTNAME` in /etc/hosts), where only
/// that host's own programs can connect.
std::vector<std::string> port_held_argv(const std::string& address, int port);
/// A script that prints rank `rank`'s end record (JOBDIR/end-R), or nothing.
std::vector<std::string> end_record_argv(const std::string& job_dir, int rank);
/// What one of the scripts above is for, in a few words, for messages in place of its text
/// ("rank 2's wrapper", "the cleanup of JOBDIR", "SIGTERM to the ranks of JOBDIR");
/// "" for an argv that is none of them. Every run of one sets it as remote::RunOptions::what,
/// so a connection lost while it runs reads "lost while running the cleanup of JOBDIR", never
/// with shell code.
std::string describe_step(const std::vector<std::string>& argv);

/// Why the waiter could not run the rank's command, from its stderr line ("clusterctl: cannot
/// run python3: No such file or directory (looked for in PATH=/x)"): "command not found:
/// python3 (looked for in PATH=/x)", "command not found: ../bin/x (relative to the working
/// directory /tmp/clusterctl-job-...)", "command not found: /opt/x"; "not executable:
/// ./run.sh: Permission denied"; "interpreter not found: /usr/bin/python9, named by the #! line
/// of ./run.sh" (the script is there, its interpreter is not: kWaiterText); else "cannot run
/// ARGV0: WHY". "" for any other line.
std::string exec_failure(std::string_view line);

/// The end record "exit N" / "signal N": true for a death by signal, false for an exit;
/// nullopt for anything else (no record).
std::optional<bool> parse_end_record(std::string_view text);

/// An end record in full: "exit N AT" / "signal N AT", AT when the rank ended by its host's
/// clock (seconds since the epoch, microseconds; the waiter's Time::HiRes, absent without it).
/// It orders the ranks' failures as they happened, where the order their ends reached the
/// launcher need not (one rank's exit status may come over a slower connection, or after its
/// relays' wait): a rank that ended because a peer did is never taken for the cause.
struct EndRecord {
  bool signaled = false;
  std::optional<double> exited_at;
};
std::optional<EndRecord> read_end_record(std::string_view text);

/// Removes the wrapper's start line ("NONCE PID") from a rank's stderr stream as it arrives.
/// Until the line came, stderr is held back (the wrapper's own messages come before it).
class StartMarker {
 public:
  explicit StartMarker(std::string nonce) : nonce_(std::move(nonce)) {}
  /// The bytes to pass on (possibly empty) for the `bytes` just received.
  std::string feed(std::string_view bytes);
  /// What is still held back (the stream ended before the marker).
  std::string flush();
  bool started() const { return pid_ > 0; }
  long pid() const { return pid_; }

 private:
  std::string nonce_;
  std::string held_;
  long pid_ = 0;
};

/// Random hex digits from the OS CSPRNG (nonces, tokens, names no one can predict).
using util::random_hex;

}  // namespace cc::launch
