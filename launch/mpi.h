// runtime: mpi. Open MPI's mpirun starts the ranks, and runs on the launching machine (as the
// operator would run it), under the same rank wrapper (wrapper.h) as any rank: its own process
// group, its environment on stdin, a watchdog, a job directory of its own on this machine
// (local_job_dir) holding the Open MPI hostfile (provision's writer: "HOST slots=N" per host).
// mpirun reaches the hosts with the operator's ssh options (the inventory's or lab's ssh_config
// and known_hosts, BatchMode), so the hosts need no SSH keys to each other.
//
// Each rank runs under the rank script (a small sh text, values as named arguments): it
// finds its host's job directory (/tmp/clusterctl-job-JOBID-hH, H = rank / ranks_per_host, as
// `--map-by slot` places them), enters cwd, records its pid (Open MPI makes each rank a process
// group leader) for clusterctl's SIGTERM/SIGKILL and cleanup, and prints "NONCE start PID AT"
// and "NONCE end exit N AT" / "NONCE end signal N AT" on stderr around the command (AT: the
// host's clock, MpiEvent::at); `--tag-output` marks each line with its
// rank ("[JOB,RANK]<stdout>:"), and MpiDemux turns mpirun's two streams back into per-rank
// lines and events. So per-rank logs, the first failed rank and every rank's exit status are
// the same as for the other runtimes. Facts (docs/platform.md#open-mpi-and-gloo):
// --allow-run-as-root for root, --bind-to none, TCP kept to the management subnet.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/rank_env.h"
#include "util/result.h"

namespace cc::launch {

/// What mpirun's command line is made from (besides the plan).
struct MpiLaunch {
  std::string job_id;        // names the hosts' job directories (runner.h job_dir)
  std::string local_dir;     // this machine's job directory (holds the hostfile)
  std::string nonce;         // the rank markers' nonce ([0-9a-f]+)
  std::string cwd;           // the ranks' working directory (as JobSpec::cwd)
  int grace_s = 30;          // the wrapper's SIGTERM -> SIGKILL of mpirun (timeouts.grace)
  std::string rsh_agent;     // mpirun's ssh command ("ssh -F CONFIG -o ..."); empty: "ssh"
  std::string tcp_include;   // CIDR of the management network ("10.9.0.0/24"); empty: Open MPI's
  bool run_as_root = false;  // add --allow-run-as-root
  std::vector<std::string> command;  // the rank's argv
};

/// The hostfile's name inside local_dir.
inline constexpr const char* kMpiHostfile = "mpi-hostfile";

/// The Open MPI hostfile ("HOST slots=ranks_per_host" per host, rank order), from provision's
/// writer. Hosts are named as ssh reaches them (plan.hosts[i].ssh, else .name).
util::Result<std::string> mpi_hostfile(const WorldPlan& plan);

/// mpirun's argv: --hostfile, -np, --map-by slot, --bind-to none, --tag-output, the rsh agent
/// (and no tree spawn: only this machine starts Open MPI's daemons over ssh),
/// -x NAME for every variable of plan.env and plan.secrets (values only in mpirun's
/// environment, never on a command line), the TCP subnets unless the job's env sets
/// OMPI_MCA_oob_tcp_if_include / OMPI_MCA_btl_tcp_if_include itself, then the rank script.
std::vector<std::string> mpirun_argv(const WorldPlan& plan, const MpiLaunch& m);

/// runtime mpi: the command of a host's watch. Open MPI's daemons are not clusterctl's, so
/// nothing tells clusterctl when a host is cut off (mpirun waits on for its ranks); each host
/// therefore runs this under the rank wrapper (wrapper.h) as rank `watch_rank` (a number no
/// rank has), on a connection of its own with the heartbeat every rank of the other runtimes
/// has: a host cut off fails that connection after kHeartbeatTimeout (its ranks' connections
/// lost, the job fails), and the wrapper's watchdog ends the watch, which ends the job's ranks
/// there (SIGTERM, SIGKILL after `grace_s`) before the watchdog removes the job directory.
std::vector<std::string> host_watch_argv(const std::string& job_dir, int grace_s, int watch_rank);

/// mpirun's own environment (forwarded by -x): rank_env_defaults, the job's env and secrets, a
/// kToolEnv NAME as kToolEnvForwarded + NAME (wrapper.h: the rank gets it as NAME).
std::vector<EnvVar> mpirun_env(const WorldPlan& plan);

/// The "ssh ..." command for mpirun's plm_rsh_agent: the same config file and known_hosts as
/// clusterctl's own connections, keys checked, never a prompt. Paths are shell-quoted.
std::string mpi_rsh_agent(const std::string& ssh_config, const std::string& known_hosts);

/// The CIDR ("10.9.0.0/24") of the first local IPv4 interface whose network holds `address`,
/// or "" (not an IPv4 address, no such interface).
std::string local_network_of(const std::string& address);

/// What mpirun's output means, line by line.
struct MpiEvent {
  enum class Kind {
    kLine,     // a line of rank `rank` on fd (1 or 2), `text` without its newline
    kStarted,  // rank `rank` is running, pid `value` on its host
    kEnded,    // rank `rank` ended with exit status `value` (0..255; 128+N after signal N)
    kMpirun,   // a line of mpirun's own (not from a rank), `text`
  };
  Kind kind = Kind::kLine;
  int rank = -1;
  int fd = 1;
  long value = 0;
  std::string text;
  bool signaled = false;  // kEnded: death by signal value-128 (not an exit with 128+N)
  /// kStarted, kEnded: when, by the rank's host's clock (seconds since the epoch), where the
  /// host's perl has Time::HiRes.
  std::optional<double> at;
};

/// Whether a line of mpirun's own is a warning of Open MPI's, not why anything ended: "[vm:20026]
/// plm:rsh: Warning: setpgid(20032,20032) failed in parent with errno=Permission denied(13)",
/// or the first line of a help box, "WARNING: There was an error initializing ...". Shown as
/// any line of mpirun's ("mpirun: ..."), never quoted as why mpirun or a rank ended.
bool mpirun_warning(std::string_view line);

/// Splits mpirun's --tag-output streams into per-rank lines and the rank markers. One per job;
/// feed each of mpirun's streams (fd 1, 2) as bytes arrive, any split.
class MpiDemux {
 public:
  explicit MpiDemux(std::string nonce) : nonce_(std::move(nonce)) {}
  std::vector<MpiEvent> feed(int fd, std::string_view bytes);
  /// At the end of mpirun's output: what is still held (lines without a newline).
  std::vector<MpiEvent> flush();

 private:
  struct Pending {
    int rank = -1;  // -1: mpirun's own text
    int fd = 1;
    std::string text;
  };
  void emit(int rank, int fd, std::string line, std::vector<MpiEvent>& out) const;
  void take(int fd, bool at_end, std::vector<MpiEvent>& out);

  std::string nonce_;
  std::string buf_[2];  // unparsed bytes of mpirun's stdout, stderr
  std::vector<Pending> partial_;  // per (rank, fd): the line so far
  Pending* partial(int rank, int fd);
};

}  // namespace cc::launch
