// `clusterctl hostfile`: the hostfiles a job launcher reads, written from a cluster state
// (pure: no I/O). Ranks are the state's hosts in its order (the operator's order), except for
// the ring formats, whose ranks follow the ring search (topology/ring.h).
//
// Formats:
//   clusterctl      our own JSON, schema "clusterctl.hostfile/1" (below): every rank with its
//                   host, SSH name, management address, and per peer each cable's interfaces,
//                   RDMA devices and IPv4 addresses on both ends.
//   mlx-jaccl       MLX, backend "jaccl" (docs/platform.md#mlx-hostfiles; mlx_hostfile.h):
//                   rdma[i][j] = the device on host i of every cable to host j that has an RDMA
//                   device on both ends, in ClusterState::cables order, so the k-th entry of
//                   rdma[i][j] and of rdma[j][i] is the same physical cable; null on the
//                   diagonal. ips = [management address] (the address SSH reached the host
//                   on, SSH_CONNECTION; when none was recorded, a Mac's en0 address, as MLX
//                   takes, with a note); ips[0] of rank 0 is the coordinator.
//   mlx-jaccl-ring  MLX, backend "jaccl-ring": hosts in ring order over the pairs with an RDMA
//                   cable; only the two ring neighbours' cells set; ips as mlx-jaccl.
//   mlx-ring        MLX, backend "ring" (TCP): hosts in ring order over the cabled pairs; ips =
//                   this host's IPv4 addresses on its cables to its left neighbour (rank - 1,
//                   wrapping), the same count on every rank (the ring's smallest cable count,
//                   as MLX opens one connection per address); rdma = [].
//   mpi             Open MPI: one "HOST slots=N" line per host.
//   mpich           MPICH / Hydra: one "HOST:N" line per host.
//
// A cable end's IPv4 address is its port interface's current address (what `clusterctl
// network apply` set): the planned one (ClusterState::network) when the interface holds it,
// else its first address outside 169.254.0.0/16, else none. A self-assigned 169.254 address is
// never used (not for a cable end, nor a Mac's en0 as the coordinator): a host keeps one route
// for all of 169.254/16, so traffic to it leaves by whichever port holds that route, not the
// cable meant (docs/platform.md#self-assigned-addresses); mlx-ring refuses such an end, naming
// its host, receptacle and address and saying to run `clusterctl network apply`.
//
// clusterctl.hostfile/1 (field names are stable; absent values are null):
//   {"schema": "clusterctl.hostfile/1",
//    "world_size": 3,
//    "coordinator": "10.0.0.11",                  // rank 0's management address
//    "ring": [0, 2, 1],                           // ranks in ring order over the cabled pairs
//    "envs": ["K=V", ...],                        // --env, in order
//    "ranks": [
//      {"rank": 0, "host": "mac1", "ssh": "mac1", "management_address": "10.0.0.11",
//       "peers": [                                // ranks cabled to this one, in rank order
//         {"rank": 1, "host": "mac2",
//          "cables": [                            // ClusterState::cables order: the k-th
//            {"interface": "en1", "receptacle": 1,   // cable is the same on both ends
//             "rdma_device": "rdma_en1", "address": "169.254.12.1",
//             "peer_interface": "en6", "peer_receptacle": 2,
//             "peer_rdma_device": "rdma_en6", "peer_address": "169.254.12.2",
//             "link_speed_gbps": 80}]}]}]}       // per direction; 0 = unknown
//
// Errors (util::Error): kUsage for a state without hosts or a bad --env; kCheckFailed for a
// coordinator (rank 0's management address) the other hosts cannot reach there: loopback,
// 169.254/16 or fe80::/10 (util::rank_address_problem; the jaccl formats fall back to a Mac's
// en0 first); the code of the worst
// HostProblem (kUnreachable for a host that could not be reached) when the state has any, since
// a hostfile for part of the cluster would start a job without some ranks; kCheckFailed when the
// cluster cannot give the format: a missing pair or a pair without an RDMA cable (jaccl; the
// message names the pairs), no ring (ring formats), a cable end without IPv4 (mlx-ring: "h2 tb1
// has no IPv4 address: run `clusterctl network apply`"), no management address (nor en0 on a
// Mac) on rank 0 (jaccl formats: no coordinator), a cable through a hub or dock (clusterctl
// and MLX formats: check_direct).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/cluster_state.h"
#include "discovery/fix_command.h"
#include "provision/mlx_hostfile.h"
#include "topology/graph.h"
#include "util/atomic_file.h"
#include "util/result.h"

namespace cc::provision {

inline constexpr const char* kHostfileSchema = "clusterctl.hostfile/1";

enum class HostfileFormat { kClusterctl, kMlxJaccl, kMlxJacclRing, kMlxRing, kMpi, kMpich };

/// "clusterctl", "mlx-jaccl", "mlx-jaccl-ring", "mlx-ring", "mpi", "mpich".
const char* to_string(HostfileFormat f);
/// The format named `name` (the strings above), or nullopt.
std::optional<HostfileFormat> hostfile_format(std::string_view name);
/// Every format name, in the order above.
std::vector<std::string> hostfile_format_names();

struct HostfileOptions {
  HostfileFormat format = HostfileFormat::kClusterctl;
  std::vector<std::string> envs;  // "NAME=VALUE": MLX "envs", clusterctl "envs"; not mpi/mpich
  int slots = 1;                  // mpi, mpich: processes per host (>= 1)
  /// How the messages' commands name the cluster (fix_command.h); by default a placeholder.
  discovery::FixCommand fix{"", "CLUSTER.json", ""};
};

/// The hostfile's text, ending in a newline (JSON pretty-printed with 2 spaces). `notes`, when
/// given, receives what the operator should know about a written hostfile (a rank whose ips
/// came from en0, not from SSH_CONNECTION).
util::Result<std::string> render_hostfile(const discovery::ClusterState& state,
                                          const HostfileOptions& opts,
                                          std::vector<std::string>* notes = nullptr);

/// What Open MPI's mpirun refuses in `host` as a host of its hostfile, or nullopt. Open MPI
/// (4.1) takes a name of letters, digits, '.' and '-', after an optional USER@, and nothing
/// else: an IPv6 address ("fe80::1%en0": "Open RTE detected a parse error in the hostfile") or a
/// '_' ("the regex parser has detected the presence of an illegal character in the following
/// node name") ends mpirun before any rank starts (open-mpi/ompi#6656). The problem says which
/// ("'fe80::1%en0' is an IPv6 address", "'mac_studio' has a '_'").
std::optional<std::string> open_mpi_host_problem(std::string_view host);

/// What to do about an open_mpi_host_problem for host `name`: give it an SSH config alias
/// Open MPI takes (Host + HostName).
std::string open_mpi_host_fix(std::string_view name, std::string_view destination);

/// The option that makes Open MPI 4 keep its hostfile's names whole. Without it mpirun cuts a
/// name that is no IP address at its first '.' and sshes to what is left (`studio1.local`: ssh
/// to `studio1`, a name only mDNS's `.local` resolves), and names that share their first part
/// (`node.1.example`, `node.2.example`) are one node, for which a `slots=` on each line stops it
/// with "multiple definitions of the slot count" (docs/platform.md#open-mpi-and-gloo).
inline constexpr const char* kOpenMpiKeepFqdn = "orte_keep_fqdn_hostnames";

/// For an Open MPI hostfile of `hosts` (names or USER@NAME): a note saying to run mpirun with
/// `--mca orte_keep_fqdn_hostnames 1` when any name has a '.' and is no IPv4 address, naming
/// those hosts (and the ones Open MPI would take for one node); "" when none has.
std::string open_mpi_fqdn_note(const std::vector<std::string>& hosts);

/// The MLX hostfile for format kMlxJaccl, kMlxJacclRing or kMlxRing (throws
/// std::invalid_argument for another format). Errors as render_hostfile; their commands name
/// the cluster as `fix` says (by default the placeholder CLUSTER.json).
util::Result<MlxHostfile> make_mlx_hostfile(
    const discovery::ClusterState& state, HostfileFormat format,
    const std::vector<std::string>& envs = {}, std::vector<std::string>* notes = nullptr,
    const discovery::FixCommand& fix = {"", "CLUSTER.json", ""});

/// The clusterctl.hostfile/1 document. Errors as render_hostfile.
util::Result<std::string> render_clusterctl_hostfile(const discovery::ClusterState& state,
                                                     const std::vector<std::string>& envs,
                                                     const discovery::FixCommand& fix = {
                                                         "", "CLUSTER.json", ""});

/// The IPv4 address of cable `cable`'s end on host `host` (rule above), or nullopt when its
/// port interface has none but self-assigned ones (or none at all, or the end names no port).
std::optional<std::string> cable_end_address(const topology::ClusterGraph& g, std::size_t cable,
                                             std::size_t host);

/// The RDMA device of cable `cable`'s end on host `host` (the cable's record, else its port's).
std::optional<std::string> cable_end_device(const topology::ClusterGraph& g, std::size_t cable,
                                            std::size_t host);

/// The cables between hosts a and b (cable order) with an RDMA device on both ends.
std::vector<std::size_t> rdma_cables(const topology::ClusterGraph& g, std::size_t a, std::size_t b);

/// Ok when every entry is "NAME=VALUE" (valid_env_entry); else kUsage naming every bad entry,
/// one line each.
util::Status check_envs(const std::vector<std::string>& envs);

/// Ok when no cable of the state runs through a hub or dock (topology::through_hub); else
/// kCheckFailed naming each such cable and saying to plug it directly: the formats built from
/// the cables (clusterctl, mlx-*) refuse them, since such a cable is no direct link; `fix`
/// names the discovery to run again after replugging.
util::Status check_direct(const discovery::ClusterState& state, HostfileFormat format,
                          const discovery::FixCommand& fix = {"", "CLUSTER.json", ""});

/// Ok when a hostfile can cover the whole state: it has hosts (else kUsage) and no host
/// problems (else the worst problem's code, every problem's message); `fix` names the discovery
/// that finds hosts.
util::Status check_complete(const discovery::ClusterState& state,
                            const discovery::FixCommand& fix = {"", "CLUSTER.json", ""});

/// How the format's own tool reaches the hostfile's hosts, when their names resolve only
/// through an SSH config that ssh(1) reads only when told (`fix.ssh_config`: a lab's, an
/// inventory's, -F FILE), as one line for stderr: for mpi, the `mpirun --hostfile FILE --mca
/// plm_rsh_agent "ssh -F CONFIG"` that runs as printed (with --allow-run-as-root when `root`,
/// as Open MPI requires; it splits the agent at blanks and takes no quotes, so options that need
/// quoting get the next form instead); for the MLX formats (mlx.launch runs `ssh HOST` from
/// PATH) and mpich, the `Include CONFIG` to put at the top of ~/.ssh/config. `file` names the
/// hostfile as written ("" for stdout: "FILE"). "" for the clusterctl format (launch reads the
/// config itself) and when fix.ssh_config is "" (ssh's own names).
std::string hostfile_ssh_hint(HostfileFormat format, const discovery::FixCommand& fix,
                              std::string_view file, bool root);

/// What `clusterctl hostfile -o FILE` replaces without --force (util::check_output_path): a
/// hostfile of any of its formats, known by its look: our JSON (its "schema"), MLX's JSON (an
/// object of "hosts" with only "backend" and "envs" beside it, or a bare list, each host an
/// object with "ssh"; valid or not, it is one to rewrite), or an Open MPI / MPICH text whose
/// every line is a comment or a valid host name or address with nothing but a count after it
/// ("HOST slots=N max_slots=M", "HOST:N"), and at least one line with a count: a list of words
/// ("TODO\nbackup\n") is not one.
util::OwnOutput hostfile_output();

}  // namespace cc::provision
