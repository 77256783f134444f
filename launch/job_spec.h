// The job specification: job.yaml, what `clusterctl launch` runs. Parsing is pure:
// nothing is read but the job file itself (secret values, the cluster file and uploads are
// only described here), and every problem is reported at its place in the file.
//
// A complete job.yaml (templates/ holds working ones; README.md, "job.yaml"):
//
//   name: allreduce-smoke          # required; [A-Za-z0-9_.-], 1..64 characters
//   cluster: cluster.json          # where the hosts come from (or `hosts:`, not both):
//                                  #   cluster.json  a cluster state (.json, `discover -o`)
//                                  #   inv.yaml      an inventory (.yaml / .yml)
//                                  #   lab:NAME      the inventory of lab NAME
//                                  #   hostfile:mlx-hosts.json   an MLX hostfile
//                                  #   state:FILE, inventory:FILE  the kind given explicitly
//                                  # relative paths: from this file's directory
//   # hosts: [studio1, studio2]    # or the hosts by SSH name, in rank order
//   ranks_per_host: 1              # ranks on each host (1..1024)
//   command: [./train, --steps, "100"]   # argv, run without a shell; or: {shell: "cd x && ./y"}
//   cwd: /srv/job                  # rank working directory on every host (default: the job's
//                                  # own directory on the host, where uploads land)
//   env:                           # extra environment of every rank, values kept exactly
//     OMP_NUM_THREADS: "8"
//   secret_env:                    # values never printed, logged or put on a command line
//     HF_TOKEN: {from_env: HF_TOKEN}        # from the operator's environment
//     DB_PASSWORD: {from_file: secrets/db}  # from a local file (relative: to this file)
//   runtime: clustercomm           # clustercomm | mlx-jaccl | mlx-jaccl-ring | mlx-ring |
//                                  # mpi | none: which variables each rank gets
//   coordinator_port: 32323        # rank 0's rendezvous TCP port (1..65535)
//   timeouts:                      # seconds
//     startup: 60                  # until every rank runs
//     total: 0                     # whole job; 0 = no limit
//     grace: 30                    # SIGTERM -> SIGKILL
//     stall: 120                   # silent at ~100% CPU this long: warn; 0 = never
//   restart: {policy: on-failure, max_attempts: 3}   # or `restart: never` / `restart: on-failure`
//   logs: logs/allreduce-smoke     # local log directory (default logs/NAME), kept as written
//   upload:                        # local files copied to every host before the start
//     - {src: build/train, dest: train, mode: "0755"}
//   preflight: [verify-mesh, health-quick]   # checks that must pass first
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace cc::launch {

/// What each rank is given to find the others (docs/platform.md#mlx-environment-variables).
enum class Runtime {
  kClusterComm,   // "clustercomm": CLUSTERCOMM_RANK, _SIZE, _COORDINATOR, _TOKEN (libclustercomm)
  kMlxJaccl,      // "mlx-jaccl": MLX_RANK, MLX_IBV_DEVICES, MLX_JACCL_COORDINATOR (RDMA mesh)
  kMlxJacclRing,  // "mlx-jaccl-ring": the same plus MLX_JACCL_RING (RDMA ring)
  kMlxRing,       // "mlx-ring": MLX_RANK, MLX_HOSTFILE (TCP ring)
  kMpi,           // "mpi": a hostfile and mpirun; the command is what mpirun starts
  kNone,          // "none": only the job's env; ranks find each other themselves
};

/// Where the hosts come from (`cluster:`).
struct ClusterRef {
  enum class Kind {
    kClusterState,  // a cluster state file written by `discover -o` (.json, or "state:PATH")
    kInventory,     // an inventory (.yaml / .yml, or "inventory:PATH")
    kLab,           // "lab:NAME": the inventory `lab up` wrote for lab NAME
    kMlxHostfile,   // "hostfile:PATH": an MLX hostfile (JSON; rank = position)
  };
  Kind kind = Kind::kClusterState;
  std::string value;  // an absolute, lexically normal path; the lab's name for kLab
  int line = 0, column = 0;  // where the value is in the job file (1-based; 0: not from one)
  std::string written{};     // the value as the job file writes it ("lab:default", "c.json")
  /// What a message quotes as the job's `cluster:`: `written`; for a ClusterRef not read from a
  /// file, the value with its kind's prefix where it needs one ("lab:default").
  std::string as_written() const;
  /// The same cluster (wherever it was written).
  friend bool operator==(const ClusterRef& a, const ClusterRef& b) {
    return a.kind == b.kind && a.value == b.value;
  }
};

/// What every rank runs: exactly one of the two is set.
struct Command {
  std::vector<std::string> argv;  // run without a shell; argv[0] is not empty
  std::string shell;              // a script for /bin/sh -c, when the job gives {shell: ...}
  bool is_shell() const { return argv.empty(); }
};

/// Where a secret_env value comes from. The value itself is read only by launch, at start.
struct SecretSource {
  enum class Kind {
    kEnv,   // {from_env: VAR}: the operator's environment variable VAR
    kFile,  // {from_file: PATH}: a local file's content (absolute, lexically normal path)
  };
  Kind kind = Kind::kEnv;
  std::string value;
  int line = 0, column = 0;  // where the value is in the job file (1-based), for errors
  /// The same source (wherever it was written).
  friend bool operator==(const SecretSource& a, const SecretSource& b) {
    return a.kind == b.kind && a.value == b.value;
  }
};

/// Time limits, whole seconds.
struct Timeouts {
  std::chrono::seconds startup{60};  // from launch until every rank is running (1..86400)
  std::chrono::seconds total{0};     // the whole job; 0 = no limit (0..31536000)
  /// SIGTERM to SIGKILL when the job ends early (1..3600). Generous on purpose: SIGKILL of a
  /// process holding RDMA resources on macOS can leave state that only a reboot clears
  /// (docs/platform.md#failure-modes-of-the-apple-provider), so a rank gets time to release its
  /// queue pairs itself.
  std::chrono::seconds grace{30};
  /// A rank silent on stdout and stderr while using ~100% CPU this long (a hung collective)
  /// draws a warning (0..86400; 0 = never).
  std::chrono::seconds stall{120};
  /// A cable the job's ranks use (runtimes clustercomm with a cluster state and mlx-ring with
  /// a hostfile, and `clusterctl push` over the cables) down this long ends the job, with the
  /// cable as its cause (1..3600). A cable seen down is named at once.
  std::chrono::seconds cable{20};
};

struct Restart {
  enum class Policy { kNever, kOnFailure };
  Policy policy = Policy::kNever;
  int max_attempts = 1;  // starts in all, the first included; default 3 with on-failure (1..100)
};

/// A local file copied to every host before the ranks start.
struct Upload {
  std::filesystem::path src;  // local file: absolute, lexically normal (relative: to the job file)
  /// Path on each host as written: relative paths are inside the job's directory on the host
  /// (removed at the end of the job); default: src's file name.
  std::string dest;
  std::optional<unsigned> mode;  // permission bits (0..07777) from "0755"; none: the local file's
  int line = 0, column = 0;      // where the entry is in the job file (1-based), for errors
};

enum class Preflight {
  kVerifyMesh,   // "verify-mesh": every pair of hosts cabled as the cluster state says
  kHealth,       // "health": the full health check
  kHealthQuick,  // "health-quick": the quick health check
};

struct JobSpec {
  std::filesystem::path source;       // the job file, as given to the parser
  std::string name;                   // [A-Za-z0-9_.-]{1,64}, not "." or ".."
  std::optional<ClusterRef> cluster;  // exactly one of cluster and hosts is given
  std::vector<std::string> hosts;     // SSH names in rank order, unique
  /// Per entry of `hosts`: where it is in the job file (1-based line, column), for errors.
  std::vector<std::pair<int, int>> host_places;
  int ranks_per_host = 1;             // 1..1024
  Command command;
  std::string cwd;                         // on every host, as written; empty: the job's dir
  int cwd_line = 0, cwd_column = 0;        // where `cwd:` is in the job file (1-based), for errors
  std::map<std::string, std::string> env;  // NAME -> value, exactly as written
  std::map<std::string, SecretSource> secret_env;  // names disjoint from env's
  Runtime runtime = Runtime::kClusterComm;
  // TCP; 32323 is MLX jaccl's default, ours too (docs/platform.md#mlx-environment-variables).
  int coordinator_port = 32323;
  Timeouts timeouts;
  Restart restart;
  std::string logs;  // local log directory as written (relative: to the operator's cwd)
  std::vector<Upload> upload;
  std::vector<Preflight> preflight;  // in the order given, no repeats
};

/// The prefix of the rank wrapper's own shell variables (wrapper.h): the job's env is set in
/// the wrapper's shell before the rank starts, so no job variable may begin with it.
inline constexpr std::string_view kWrapperVariablePrefix = "_ccw_";

/// Parses job.yaml text. `source_path` names the file in errors and is the base of relative
/// local paths (cluster, secret_env from_file, upload src; resolved with
/// std::filesystem::absolute). Errors: kUsage, "FILE:LINE:COLUMN: problem" (1-based), one line
/// per mistake (every top-level entry checked, in file order, then what is missing), for YAML
/// syntax, an unknown key at any level (with "did you mean"), a repeated key, a value of the
/// wrong type or out of range, a missing name or command, neither or both of cluster and
/// hosts, a cluster file of no known kind (with "did you mean" a file of a close name beside
/// it: the only check here that reads the disk), an empty command, an env name that is not [A-Za-z_][A-Za-z0-9_]* or that launch
/// sets itself (CLUSTERCOMM_RANK, MLX_RANK, ...) or that begins with kWrapperVariablePrefix,
/// a secret_env name also in env.
/// More than kMaxJobFileBytes is refused before it is parsed, and a SIGINT or SIGTERM while it
/// is ends it (ExitCode::kInterrupted, util::YamlReader).
util::Result<JobSpec> parse_job_spec(std::string_view yaml_text, const std::string& source_path);

/// The largest job file read: 8 MiB. What a job holds must reach its ranks through exec (an env
/// of at most provision::kMaxEnvBytes, a command within ARG_MAX), so a larger file cannot be a
/// job that runs; parsing a 60 MiB one took yaml-cpp over a GB. README, "job.yaml".
inline constexpr std::size_t kMaxJobFileBytes = std::size_t{8} << 20;

/// What parse_job_spec found, kept when there are mistakes, so that the checks that need only
/// part of the job (launch::local_problems: uploads, secrets) can run in the same pass and
/// every problem is reported at once.
struct JobSpecDraft {
  JobSpec job;  // every entry that parsed; the others left at their defaults
  std::vector<util::Error> errors;  // as parse_job_spec reports them (empty: `job` is valid)
  /// What is valid but most likely not meant, in file order, each "FILE:LINE:COLUMN: warning:
  /// what; what to write instead": an env value holding `$NAME` or `${NAME}` (values are
  /// literal: no shell expands them), never with the value of a name util::looks_secret.
  std::vector<std::string> warnings;
};
JobSpecDraft parse_job_spec_draft(std::string_view yaml_text, const std::string& source_path);

/// Reads and parses the job file at `path`. Errors: as parse_job_spec, and an unreadable file.
util::Result<JobSpec> load_job_spec(const std::filesystem::path& path);

/// "FILE:LINE:COLUMN" of a place in the job file (spec.source), as every job file error begins;
/// the file alone when `line` is 0 (a JobSpec made in code, not parsed).
std::string job_file_at(const JobSpec& spec, int line, int column);

std::string_view to_string(Runtime r);
/// mlx-jaccl, mlx-jaccl-ring or mlx-ring: ranks find each other through an MLX hostfile.
bool is_mlx(Runtime r);
std::string_view to_string(ClusterRef::Kind k);
std::string_view to_string(Restart::Policy p);
std::string_view to_string(Preflight p);

}  // namespace cc::launch
