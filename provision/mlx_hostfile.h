// MLX hostfiles (facts.md, "MLX interoperability"): the JSON that `mlx.launch` and
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
//   - jaccl-ring: hosts in ring order; the cells of the two ring neighbours set.
//   - ring (TCP): hosts in ring order; ips = this host's addresses on the cables to its left
//     neighbour (rank - 1, wrapping); rdma = [].
//
// Why the checks: MLX turns a rank order that does not match the cabling into N groups of one
// without a word (facts.md, "Known weaknesses"); check_against catches it before a launch.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "discovery/cluster_state.h"
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

/// "NAME=VALUE" with NAME a shell variable name ([A-Za-z_][A-Za-z0-9_]*); VALUE may be empty.
bool valid_env_entry(std::string_view entry);

/// "rank 1 (mac2)".
std::string rank_label(const MlxHostfile& hf, std::size_t rank);

/// The object form, pretty-printed (2 spaces) with a final newline; keys in the order
/// backend, envs, hosts and ssh, ips, rdma.
std::string render_mlx_hostfile(const MlxHostfile& hf);

/// Parses and validates a hostfile's text; `path` only names it in messages. Errors (kUsage;
/// the message starts with the path and names the rank and host): invalid JSON (line and
/// column), neither an object with "hosts" nor a list, an unknown backend, an env without
/// '=', a host without "ssh", a host named twice, a cell that is not null / a device name / a
/// list of names, a matrix that is not n x n, a non-null diagonal, cells (i,j) and (j,i) that
/// disagree (null on one side only, or a different cable count), one device named for two
/// cells of a row, and per backend: jaccl with a null off-diagonal cell (a missing pair) or no
/// matrix; jaccl-ring with a ring neighbour's cell null.
util::Result<MlxHostfile> parse_mlx_hostfile(std::string_view text, const std::string& path);

/// Reads and validates a hostfile (parse_mlx_hostfile). Errors (kUsage): unreadable file, and
/// the errors above.
util::Result<MlxHostfile> read_mlx_hostfile(const std::string& path);

/// Checks the hostfile against the cabling in `state` (which is how a permuted rank order is
/// caught): every rank's host is in the state; every device rdma[i][j][k] is a device of host i
/// whose port is cabled to the host of rank j, and the cable's other end is rdma[j][i][k]; for
/// the ring backend every ips[k] of rank i is an address of host i on a port cabled to its left
/// neighbour. Errors: kCheckFailed listing every mismatch, one line each, naming rank, host,
/// cell and cable; kUnreachable (or the problem's code) when a rank's host could not be probed.
util::Status check_against(const MlxHostfile& hf, const discovery::ClusterState& state);

}  // namespace cc::provision
