// MLX hostfiles (docs/platform.md#mlx-hostfiles): the JSON that `mlx.launch` and
// `mlx.distributed_config` use, as a value we can write (hostfile.h builds one from a cluster
// state), read back, validate on its own, and check against the cabling.
//
// File shape (rank = position in "hosts"; a bare list of host objects is accepted too):
//   {"backend": "jaccl" | "jaccl-ring" | "ring" | "",
//    "envs": ["K=V", ...],
//    "hosts": [{"ssh": "mac1", "ips": ["10.0.0.11"], "rdma": [null, "rdma_en1", ...]}, ...]}
//   CELL = null | "rdma_enX" | ["rdma_enX", "rdma_enY"]: rdma[i][j] is the device on host i for
//   each cable to host j; with parallel cables the k-th entry on both ends is the same cable.
//   - jaccl: every off-diagonal cell set (a full mesh); ips[0] of rank 0 is the coordinator.
//   - jaccl-ring: hosts in ring order; only the cells of the two ring neighbours set, all of
//     one length (the ring's smallest cable count, as mlx.distributed_config writes it).
//   - ring (TCP): hosts in ring order; ips = this host's addresses on the cables to its left
//     neighbour (rank - 1, wrapping); rdma = [].
//
// Why the checks: MLX turns a rank order that does not match the cabling into N groups of one
// without a word (docs/platform.md#weaknesses-of-the-mlx-tools); check_against catches it before a
// launch.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/cluster_state.h"
#include "discovery/fix_command.h"
#include "util/result.h"

namespace cc::provision {

/// One cell of the device matrix: the devices of the cables to one peer, in cable order (the
/// k-th entry is the same physical cable on both ends). Empty = null (no cable, or the
/// diagonal). One entry is written as a string, two or more as a list.
using MlxCell = std::vector<std::string>;

struct MlxHost {
  std::string ssh;               // the name `ssh` is given ("mac1", an ~/.ssh/config alias)
  std::vector<std::string> ips;  // jaccl: [management address]; ring: per-cable addresses
  std::vector<MlxCell> rdma;     // one cell per rank, or empty (ring backend, or no "rdma")
};

struct MlxHostfile {
  std::string backend;            // "jaccl", "jaccl-ring", "ring" or "" (not given)
  std::vector<std::string> envs;  // "K=V", set on every rank by mlx.launch
  std::vector<MlxHost> hosts;     // rank order
  std::string path;               // the file it came from, for messages ("" when built)
};

/// The longest NAME=VALUE a rank's environment can carry: Linux's MAX_ARG_STRLEN (32 pages,
/// 131072 bytes with the NUL that ends it); exec refuses a longer one (E2BIG) and the rank
/// never starts.
inline constexpr std::size_t kMaxEnvEntryBytes = 131071;
/// The most a job's environment may hold in all (its NAME=VALUE entries, a NUL after each):
/// 1 MiB, macOS's whole ARG_MAX (Linux's is a quarter of the stack limit, 2 MiB by default),
/// which the command's arguments and the rest of the rank's environment share: a larger one
/// can never be exec'd. README, "job.yaml".
inline constexpr std::size_t kMaxEnvBytes = std::size_t{1} << 20;

/// What is wrong with `entry` as "NAME=VALUE" (NAME a shell variable name,
/// [A-Za-z_][A-Za-z0-9_]*; VALUE may be empty), or nullopt: "expected NAME=VALUE, but there
/// is no '=' ...", "... no name before '='", "... 'MY-VAR' is not a valid environment variable
/// name: ...", "... is N bytes long, more than ... (kMaxEnvEntryBytes)".
/// Which names the launcher keeps for itself is launch's to say (launch::rank_env_entry_problem).
std::optional<std::string> env_entry_problem(std::string_view entry);

/// What is wrong with an environment whose entries (NAME=VALUE, each with its NUL) are `bytes`
/// long in all, `entries` of them, or nullopt: more than kMaxEnvBytes ("... holds N bytes in M
/// entries, more than the 1048576 bytes (1 MiB) ...").
std::optional<std::string> env_size_problem(std::size_t bytes, std::size_t entries);

/// True when env_entry_problem finds nothing.
bool valid_env_entry(std::string_view entry);

/// What MLX cannot do with `ip` (a valid address) as an `ips` entry, or nullopt. MLX cuts every
/// HOST:PORT it is given (MLX_JACCL_COORDINATOR, made from rank 0's ips[0], and MLX_HOSTFILE's
/// entries for the ring) at its first ':' (mlx/distributed/utils.cpp, parse_address), so an IPv6
/// address, bracketed or not, stops every rank with "Can't parse address": "'fe80::1%en0' is an
/// IPv6 address, and MLX ..." (docs/platform.md#mlx-environment-variables).
std::optional<std::string> mlx_address_problem(std::string_view ip);

/// The group a JACCL device matrix must form. JACCL (mlx/distributed/jaccl, Config::
/// is_valid_mesh / is_valid_ring, and init()) builds a ring when MLX_JACCL_RING is set and the
/// matrix is a valid ring, else a mesh when it is a valid mesh, else a ring when it is one, and
/// otherwise returns no group: MLX then runs every rank alone, without a word.
enum class JacclGroup {
  kMesh,        // backend jaccl
  kRing,        // backend jaccl-ring (MLX_JACCL_RING)
  kMeshOrRing,  // no backend given: either is accepted
};

/// "mesh", "ring", "mesh or ring".
const char* to_string(JacclGroup g);

/// JACCL's own validity rules on an N x N device matrix (rdma[i][j]: rank i's devices for its
/// cables to rank j), the one check of every matrix we write, read or hand to ranks:
///   mesh: every off-diagonal cell names a device, the diagonal is null;
///   ring: the cells of each rank's neighbours (rank - 1 and rank + 1, wrapping) name devices,
///         all as many as rdma[0][1] (JACCL's num_connections); every other cell is null
///         (stricter than JACCL, which ignores them: a set non-neighbour cell is a mesh written
///         under the ring backend).
/// A matrix of one rank passes (JACCL forms no group and none is needed). Errors (kUsage): every
/// row that is not N cells, else every rule broken (one line per rank or rank pair, both cells
/// of a pair on one line), one line each that starts with `where` when given, names the rank
/// pair, ranks labelled with `names` when given, and says which command writes a valid file. launch/ can call it on the MLX_IBV_DEVICES matrix it writes. The
/// `clusterctl hostfile` it suggests names the cluster as `fix` says, so it runs as printed.
util::Status check_jaccl_devices(const std::vector<std::vector<MlxCell>>& rdma, JacclGroup want,
                                 const discovery::FixCommand& fix, std::string_view where = {},
                                 const std::vector<std::string>& names = {});

/// The whole validation of a hostfile (what parse_mlx_hostfile applies after reading it and
/// make_mlx_hostfile after building one): the structural rules of parse_mlx_hostfile below,
/// then check_jaccl_devices on the matrix (jaccl: kMesh, jaccl-ring: kRing, no backend with a
/// matrix: kMeshOrRing; the TCP ring backend has no matrix to check). Errors: kUsage, the
/// message starting with hf.path when it is not empty; the command it suggests names the
/// cluster as `fix` says.
util::Status validate_mlx_hostfile(const MlxHostfile& hf, const discovery::FixCommand& fix);

/// "rank 1 (mac2)".
std::string rank_label(const MlxHostfile& hf, std::size_t rank);

/// The object form, pretty-printed (2 spaces) with a final newline; keys in the order
/// backend, envs, hosts and ssh, ips, rdma.
std::string render_mlx_hostfile(const MlxHostfile& hf);

/// A check of one "envs" entry beyond env_entry_problem (launch's: a name the launcher sets for
/// each rank): what is wrong with it, or nullopt.
using EnvCheck = std::function<std::optional<std::string>(std::string_view entry)>;

/// How the error about an MPI hostfile given where MLX's is read says to go on, so that what
/// it suggests runs as printed there.
struct MpiHostfileAdvice {
  /// The quoted global options that select the hosts ("--lab t3a"), for the suggested
  /// `clusterctl hostfile --hosts ...` that writes an MLX hostfile of the same hosts.
  std::string global;
  /// The file is a job's `cluster: hostfile:FILE`: launch takes no --hosts, so its hosts go
  /// in the job's `hosts:` list instead; otherwise (`--hostfile FILE` of discover, health,
  /// hostfile, ...) they are named with --hosts.
  bool job_file = false;
  /// The format the command was asked to write (`hostfile --format mlx-ring`): the suggested
  /// command writes that one. "" (discover, health, launch): mlx-jaccl, "--format mlx-ring for
  /// TCP" beside it (which of them the hosts can give is not known before they are probed: a
  /// lab gets RDMA devices from `rdma enable --soft-roce`).
  std::string format{};
  /// Why a host the file names cannot be used where it was given (not in the inventory
  /// --lab or --inventory selects: launch::inventory_host_check), or nullopt; none: any name
  /// may be an SSH name. Such a host, like an address or a name the ranks could not reach each
  /// other on (loopback, `localhost`, 169.254, fe80), is named with why and left out of the
  /// commands suggested, so that each runs as printed.
  std::function<std::optional<std::string>(std::string_view host)> host_check{};
  /// The job's MLX runtime ("mlx-ring"; launch): a file whose "backend" is another one is
  /// refused first, naming both and what to change (the file or the job's runtime), before the
  /// rules of a backend that is not to run. "": the file's backend is taken as it is.
  std::string runtime{};
};

/// Parses and validates a hostfile's text; `path` only names it in messages; `env_check`, when
/// given, is applied to every "envs" entry too. Every problem of the file is reported at once,
/// one line each (kUsage; each line starts with the path and names the rank and host); only the
/// matrix rules wait for every host to be read, and JACCL's rules for a sound matrix. The
/// problems: an MPI hostfile ("node1 slots=2" lines: "PATH looks like an MPI hostfile (line 1:
/// ...)", with the command that writes an MLX hostfile of its hosts and how to name them
/// instead, per `mpi`), invalid JSON (line and
/// column), neither an object with "hosts" nor a list, an unknown backend, a malformed env
/// (env_entry_problem), a host without "ssh", a host named twice (util::host_key: "Mac1" and
/// "mac1." too), an ips entry that is no IP address (util::address_problem), a cell that is not
/// null / a device name / a list of names, a matrix that is not n x n, a non-null diagonal, cells
/// (i,j) and (j,i) that disagree (null on one side only, or a different cable count), one device
/// named for two cells of a row, a jaccl or jaccl-ring backend without a matrix, and JACCL's rules
/// (check_jaccl_devices, through validate_mlx_hostfile). The `clusterctl hostfile` the messages
/// suggest names the file's hosts (--hosts, after `mpi.global`), so it runs as printed.
util::Result<MlxHostfile> parse_mlx_hostfile(std::string_view text, const std::string& path,
                                             const EnvCheck& env_check = {},
                                             const MpiHostfileAdvice& mpi = {});

/// Reads and validates a hostfile (parse_mlx_hostfile). Errors (kUsage): unreadable file, and
/// the errors above.
util::Result<MlxHostfile> read_mlx_hostfile(const std::string& path,
                                            const EnvCheck& env_check = {},
                                            const MpiHostfileAdvice& mpi = {});

/// The cables the hostfile's ranks use that are down now, judged on `state`'s facts (live, as
/// discovery found them) in topology::cable_down_line's words, one line each ("cable h1 tb1 -
/// h2 tb1 is down: h2 tb1: administratively down; fix: ..."). A cable is the pair of ports that
/// rdma[i][j][k] and rdma[j][i][k] name (jaccl, jaccl-ring), or for the ring backend the port
/// of host i holding ips[k] and the port facing it on the left neighbour (the one not cabled
/// now whose address is closest to ips[k]; the host alone when none is left). Only ports with
/// no cable seen now count: a port cabled to some host, or a pair that is up, says the file is
/// stale, which check_against says. Empty: every cable the file names is up (or not found).
std::vector<std::string> down_cables(const MlxHostfile& hf, const discovery::ClusterState& state);

/// Every "ips" entry of every host that is no address of that host in `state` (its ports',
/// its other interfaces' and its management address), whatever the backend, each "PATH:
/// hosts[i] (h3): ips[0] = 10.0.0.9 is not an address of h3 (its addresses: ...)": MLX would
/// bind or connect to it and fail with a raw socket error. Hosts not in the state are skipped.
std::vector<std::string> foreign_addresses(const MlxHostfile& hf,
                                           const discovery::ClusterState& state);

/// Checks the hostfile against the cabling in `state` (which is how a permuted rank order is
/// caught): first foreign_addresses, then down_cables (a cable that is down is named with its
/// fix, and no new hostfile is suggested: the file is right, the cabling is not); then every
/// rank's host is in the state; every device rdma[i][j][k] is a device of host i
/// whose port is cabled to the host of rank j, and the cable's other end is rdma[j][i][k]; for
/// the ring backend every ips[k] of rank i is an address of host i on a port cabled to its left
/// neighbour. Errors: kCheckFailed listing every mismatch, one line each, naming rank, host,
/// cell and cable; kUnreachable (or the problem's code) when a rank's host could not be probed.
/// The command that writes a matching file names the cluster as `fix` says, or is
/// `write_with` when given (launch's: from this file's hosts, to a new path).
util::Status check_against(const MlxHostfile& hf, const discovery::ClusterState& state,
                           const discovery::FixCommand& fix, const std::string& write_with = {});

}  // namespace cc::provision
