// What each rank is given to find the others: its runtime's environment variables (and the
// files they name), exactly as mlx.launch sets them
// (docs/platform.md#mlx-environment-variables), so unmodified MLX programs run; CLUSTERCOMM_* for
// libclustercomm (comm/README.md). Pure: no I/O.
//
//   clustercomm     CLUSTERCOMM_RANK, CLUSTERCOMM_SIZE, CLUSTERCOMM_COORDINATOR=ADDR0:PORT,
//                   CLUSTERCOMM_TOKEN (a fresh per-launch secret); from a cluster state with
//                   per-cable addresses (`network apply`), CLUSTERCOMM_PEER_ADDRS (comm/config.cc:
//                   one entry per rank, "MY_ADDR>PEER_ADDR" on the pair's direct cable, "" for
//                   ranks on the same host or without a cable); when every pair of hosts has an
//                   RDMA cable, MLX_IBV_DEVICES=JOBDIR/mlx-ibv-devices.json (the device matrix,
//                   as for mlx-jaccl, one row and column per rank: with ranks_per_host > 1 the
//                   host pair's cell, null between ranks of one host, which shared memory
//                   carries; a cable end then holds ranks_per_host^2 queue pairs, and Apple's
//                   provider allows 10 per device: at most 3 ranks per Mac)
//   mlx-jaccl       MLX_RANK, MLX_IBV_DEVICES=JOBDIR/mlx-ibv-devices.json (the
//                   N x N device matrix: [[null, "rdma_en1", ...], ...], a cell with parallel
//                   cables a list), MLX_JACCL_COORDINATOR=ips[0] of rank 0:PORT
//   mlx-jaccl-ring  the same plus MLX_JACCL_RING=1 (read by presence)
//   mlx-ring        MLX_RANK, MLX_HOSTFILE=JOBDIR/mlx-hostfile.json: per rank
//                   the list of "ip:port" for its ips, ports counting up from coordinator_port
//                   across all ranks' addresses (one connection per address)
//   mpi             none here: mpirun gives its ranks their environment (mpirun_env: the
//                   defaults, the job's env and secrets)
//   none            only the job's env
// Exactly what mlx.launch sets for these backends (tests/integration/launch compares them with
// real MLX's): no MLX_WORLD_SIZE, which mlx.launch sets only for its NCCL backend. Every
// host:port brackets an IPv6 address (util::host_port). The MLX hostfile's "envs" (K=V) are set on
// every MLX rank, as mlx.launch does; then the job's env; then the secrets.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/job_spec.h"
#include "discovery/cluster_state.h"
#include "launch/wrapper.h"
#include "provision/mlx_hostfile.h"
#include "remote/inventory.h"
#include "util/result.h"

namespace cc::launch {

/// One host of the job, in rank order.
struct LaunchHost {
  std::string name;     // as shown in output and logs ("h1", "studio1")
  std::string address;  // management address (the coordinator's for rank 0); empty: name
  std::string ssh;      // how ssh reaches it (an inventory's `ssh:`, "user@host"); empty: name
};

/// Everything that decides the ranks' environment.
struct WorldPlan {
  Runtime runtime = Runtime::kClusterComm;
  int coordinator_port = 32323;
  int ranks_per_host = 1;
  std::vector<LaunchHost> hosts;
  std::optional<provision::MlxHostfile> mlx;   // required for the mlx-* runtimes
  std::string token;                           // CLUSTERCOMM_TOKEN
  /// CLUSTERCOMM_COORDINATOR_FROM (runtimes clustercomm and mlx-*): where the coordinator's
  /// port was chosen ("`coordinator_port:` in JOB.yaml"), so that libclustercomm's messages
  /// point there and not at a variable the operator never set; "" : not set.
  std::string coordinator_from;
  std::map<std::string, std::string> env;      // the job's env
  std::map<std::string, std::string> secrets;  // secret_env, resolved
  /// clustercomm: routes[a][b] = "A_ADDR>B_ADDR", host a's and host b's IPv4 addresses on their
  /// first cable with one on both ends; "" when none (and on the diagonal). Empty: unknown.
  std::vector<std::vector<std::string>> routes;
  /// clustercomm: the RDMA device matrix (mlx-jaccl's), when every pair has an RDMA cable.
  std::optional<provision::MlxHostfile> devices;
  int world_size() const { return static_cast<int>(hosts.size()) * ranks_per_host; }
  /// Rank r runs on host r / ranks_per_host (consecutive ranks share a host).
  size_t host_of(int rank) const { return static_cast<size_t>(rank / ranks_per_host); }
};

/// A file every host gets in its job directory before the ranks start.
struct RuntimeFile {
  std::string name;  // inside the job directory
  std::string content;
};

/// Checks the plan can be started: hosts present; for mlx-* a hostfile with one host per job
/// host and ranks_per_host 1 (MLX runs one rank per host); for jaccl a full N x N matrix.
/// Errors: kUsage naming what is missing and what to do.
util::Status check_world(const WorldPlan& plan);

/// The runtime's files (MLX_IBV_DEVICES, MLX_HOSTFILE content), the same on every host.
std::vector<RuntimeFile> runtime_files(const WorldPlan& plan);

/// What every rank gets unless the job's env, its secrets or the hostfile's envs set it:
/// PYTHONUNBUFFERED=1. A rank's stdout is a pipe, to which Python writes only once 8 KiB have
/// gathered or it exits: a job's progress lines came at its end, and a busy rank that printed
/// drew the stall warning. (mlx.launch runs ranks under `ssh -tt`, a terminal, where Python
/// writes each line.) Not among launch_env_names(): a job may set it (to the empty string to
/// have Python buffer again: any other value, 0 too, means unbuffered to Python).
struct RankEnvDefault {
  std::string_view name;
  std::string_view value;
};
inline constexpr RankEnvDefault kRankEnvDefaults[] = {{"PYTHONUNBUFFERED", "1"}};

/// The kRankEnvDefaults the job's env, its secrets and (for an mlx-* runtime) the hostfile's
/// envs do not set: every runtime's ranks get them (rank_env; mpirun_env for runtime mpi).
std::vector<EnvVar> rank_env_defaults(const WorldPlan& plan);

/// What launch itself sets on rank `rank` under plan.runtime (the table above): no defaults,
/// no hostfile envs, no job env.
std::vector<EnvVar> runtime_env(const WorldPlan& plan, int rank, const std::string& job_dir);

/// CLUSTERCOMM_COORDINATOR of every rank (runtimes clustercomm and mlx-ring): rank 0's host
/// address (its name when it has none) and coordinator_port, "10.0.0.1:32323",
/// "[2001:db8::1]:32323". Never an address from an MLX ring hostfile: those are cable ends.
std::string coordinator_address(const WorldPlan& plan);

/// Rank `rank`'s environment, in the order set: rank_env_defaults, runtime_env, hostfile envs,
/// job env, secrets. `job_dir` is the job's directory on the rank's host
/// (for file paths).
std::vector<EnvVar> rank_env(const WorldPlan& plan, int rank, const std::string& job_dir);

/// The JSON of the MLX device matrix (MLX_IBV_DEVICES's file): one row and column per rank,
/// ranks_per_host consecutive ranks per host of `hf`, null between ranks of one host.
std::string mlx_ibv_devices_json(const provision::MlxHostfile& hf, int ranks_per_host = 1);
/// The JSON list per rank of "ip:port" (MLX_HOSTFILE's file).
std::string mlx_ring_hostfile_json(const provision::MlxHostfile& hf, int first_port);

/// Fills plan.routes and plan.devices from a cluster state (its hosts in plan order): the
/// routes when any cable end has an IPv4 address, the devices when provision can make the
/// mlx-jaccl hostfile (every pair has an RDMA cable with a device on both ends).
void add_cable_links(WorldPlan& plan, const discovery::ClusterState& state);

/// The cables add_cable_links routes the pairs of hosts over (per pair, its first cable with an
/// IPv4 address on both ends), one per pair that has one, in pair order: what launch checks
/// is up before it starts a rank (cli/cmd_launch.cc).
std::vector<discovery::Cable> routed_cables(const discovery::ClusterState& state);

/// The cables of `state` an MLX ring hostfile's ranks use: each cable with an end whose IPv4
/// address (provision::cable_end_address) is among its host's "ips" (hosts matched by their
/// "ssh" name), in pair order; what launch watches while the job runs (cli/cable_watch.h).
std::vector<discovery::Cable> hostfile_cables(const provision::MlxHostfile& hf,
                                              const discovery::ClusterState& state);

/// Every variable launch sets on a rank under any runtime (sorted): taken from runtime_env itself,
/// run for each runtime on a plan with every optional part, so that this list and what ranks
/// get cannot drift apart. No job and no hostfile may set one of them: a job-wide value would
/// be wrong on every rank but one (`envs: ["MLX_RANK=0"]` once made every rank rank 0).
const std::vector<std::string>& launch_env_names();

/// The CLUSTERCOMM_* variables libclustercomm reads (comm/config.cc, its one reader) that a job
/// may set itself (CLUSTERCOMM_TIMEOUT_MS, CLUSTERCOMM_TRANSPORT, ...; sorted): with the
/// CLUSTERCOMM_* of launch_env_names(), every one it reads (a unit test compares the two with
/// comm/config.cc).
const std::vector<std::string>& clustercomm_tuning_names();

/// For a name that begins with CLUSTERCOMM_ but that libclustercomm does not read, why setting it
/// changes nothing, with the closest name it does read ("libclustercomm reads no variable
/// CLUSTERCOMM_TIMEOUT, so it changes nothing (did you mean 'CLUSTERCOMM_TIMEOUT_MS'?)");
/// nullopt for any other name. A misspelt tuning variable was silently ignored: a job that set
/// CLUSTERCOMM_TIMEOUT: "240000" for a slow rendezvous still timed out at the default.
std::optional<std::string> unread_clustercomm_name(std::string_view name);

/// unread_clustercomm_name for the NAME of each "NAME=VALUE" of `entries`, said where else than
/// a job's env: and secret_env: (parse_job_spec_draft warns of those) an operator's variable
/// reaches the ranks: an MLX hostfile's "envs", `hostfile --env`, the launching shell's
/// environment that ranks on `local` inherit. One "WHERE: NAME: why" each, `where` saying where
/// it was set ("hosts.json: warning: \"envs\""); never its value (it may be a secret).
std::vector<std::string> unread_clustercomm_warnings(const std::vector<std::string>& entries,
                                                     std::string_view where);

/// Why a job's env: or secret_env:, an MLX hostfile's "envs" or `hostfile --env` may not set a
/// variable.
enum class EnvNameProblem {
  kInvalid,      // not [A-Za-z_][A-Za-z0-9_]*
  kSetByLaunch,  // in launch_env_names()
  kWrapperOwn,   // begins with kWrapperVariablePrefix: the rank wrapper's own shell variables
                 // (_ccw_d is its job directory, which its watchdog removes at the end)
};

/// The problem with NAME as a variable set on every rank, or nullopt when there is none.
std::optional<EnvNameProblem> env_name_problem(std::string_view name);

/// "'1BAD' is not a valid environment variable name: use ...", "'MLX_RANK' is set by launch
/// for each rank", "'_ccw_d': names beginning with '_ccw_' are the rank wrapper's own".
std::string describe(EnvNameProblem p, std::string_view name);

/// The problem with "NAME=VALUE" as a variable set on every rank (an MLX hostfile's "envs",
/// `hostfile --env`), or nullopt: a malformed entry (provision::env_entry_problem), or a NAME
/// with an env_name_problem, said with where to remove it from (`remove`, "--env"), e.g.
/// "'MLX_RANK' is set by launch for each rank (each rank gets its own value; ...): remove it
/// from the hostfile's "envs"".
std::optional<std::string> rank_env_entry_problem(std::string_view entry, std::string_view remove);

/// MpiHostfileAdvice::host_check for hosts reached through `inventory` (what --lab or
/// --inventory selects): "is not a host of INVENTORY ..." for a name it does not have
/// (util::host_key: "H1" is h1), so a suggested `--hosts` or `hosts:` never carries it.
std::function<std::optional<std::string>(std::string_view host)> inventory_host_check(
    const remote::Inventory& inventory);

/// Reads an MLX hostfile as launch and every command that is given one do:
/// provision::read_mlx_hostfile with rank_env_entry_problem applied to each of its "envs" in
/// the same pass, so every problem of the file is reported at once. Errors (kUsage):
/// read_mlx_hostfile's (an MPI hostfile's advice per `mpi`), among them "FILE: envs[K] =
/// "ENTRY": problem".
util::Result<provision::MlxHostfile> read_hostfile(const std::string& path,
                                                   const provision::MpiHostfileAdvice& mpi = {});

/// secret_env values: from the local environment or files. Errors: kUsage naming the variable
/// (never its value) and the missing source.
util::Result<std::map<std::string, std::string>> resolve_secrets(const JobSpec& spec);

}  // namespace cc::launch
