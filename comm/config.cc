#include "comm/config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "comm/error.h"

namespace cc::comm {
namespace {

Error bad(const std::string& var, const std::string& why) {
  return Error(ErrorKind::kInvalidArgument, "environment variable " + var + " " + why);
}

long long to_int(const std::string& var, const char* v, long long lo, long long hi) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi) {
    throw bad(var, "is '" + std::string(v) + "', expected an integer in [" + std::to_string(lo) +
                       ", " + std::to_string(hi) + "]");
  }
  return x;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

// The largest start-up file read (MLX_HOSTFILE, MLX_IBV_DEVICES): a hostfile or device matrix
// of thousands of ranks is far smaller.
constexpr int64_t kMaxStartupFileBytes = int64_t{16} << 20;

// What a file of mode `mode` that is not a regular file is, for messages.
std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The bytes of the regular file `path`, which environment variable `var` names: at most
// kMaxStartupFileBytes. Opened with O_NONBLOCK, so a FIFO there returns at once instead of
// waiting for a writer (start-up would hang before any timeout runs), then checked with
// fstat on what was opened: a directory, device, FIFO, socket or oversized file is named
// with the variable and the path at once. Reads no more than the bound even if the file grows.
std::string read_regular_file(const std::string& var, const char* path) {
  const std::string named = "names '" + std::string(path) + "', which ";
  const int fd = ::open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const std::string why = std::strerror(errno);
    throw bad(var, named + "cannot be read (" + why + "): it must be the path of a JSON file");
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::string why = std::strerror(errno);
    throw bad(var, named + "cannot be examined (" + why + "): it must be the path of a JSON file");
  }
  if (!S_ISREG(st.st_mode)) {
    throw bad(var, named + "is " + file_kind(st.st_mode) +
                       ": it must be the path of a regular JSON file");
  }
  const std::string too_large = named + "is larger than " +
                                std::to_string(kMaxStartupFileBytes >> 20) +
                                " MiB: it must be the path of a JSON file of the job's ranks";
  if (st.st_size > kMaxStartupFileBytes) throw bad(var, too_large);
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      throw bad(var, named + "cannot be read (" + why + "): it must be the path of a JSON file");
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > static_cast<size_t>(kMaxStartupFileBytes)) throw bad(var, too_large);
  }
  return out;
}

nlohmann::json read_json(const std::string& var, const char* path) {
  const std::string text = read_regular_file(var, path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw bad(var, "names '" + std::string(path) + "', which is not valid JSON: " + e.what());
  }
}

// True for the hostfile mlx.launch reads (--hostfile, mlx.distributed_config's output): an
// object with "hosts", or a list of objects with "ssh". People who start their ranks without
// mlx.launch point MLX_HOSTFILE or MLX_IBV_DEVICES at it, but those variables hold what
// mlx.launch derives from it for each job.
bool is_launch_hostfile(const nlohmann::json& j) {
  if (j.is_object()) return j.contains("hosts");
  return j.is_array() && !j.empty() && j[0].is_object() && j[0].contains("ssh");
}

std::string launch_hostfile(const char* path) {
  return "names '" + std::string(path) +
         "', which is an mlx.launch hostfile (hosts with \"ssh\" and \"ips\"), ";
}

// MLX ring hostfile: a JSON list, per rank, of "ip:port" strings (rank i listens on them).
void from_mlx_hostfile(Config& c, const char* path) {
  const nlohmann::json j = read_json("MLX_HOSTFILE", path);
  if (is_launch_hostfile(j)) {
    throw bad("MLX_HOSTFILE",
              launch_hostfile(path) +
                  "not the list of each rank's \"ip:port\" addresses that mlx.launch writes "
                  "from it for the ring backend: start the ranks with `mlx.launch --hostfile " +
                  path +
                  "` (or clusterctl launch, runtime mlx-ring), or write one entry per rank, "
                  "[[\"10.0.0.1:5000\"], [\"10.0.0.2:5000\"], ...]");
  }
  if (!j.is_array() || j.empty()) throw bad("MLX_HOSTFILE", "must hold a non-empty JSON list");
  c.size = static_cast<int>(j.size());
  std::vector<std::vector<std::string>> hosts;
  for (const auto& row : j) {
    std::vector<std::string> addrs;
    if (row.is_string()) {
      addrs.push_back(row.get<std::string>());
    } else if (row.is_array()) {
      for (const auto& a : row) {
        if (!a.is_string()) throw bad("MLX_HOSTFILE", "entries must be \"ip:port\" strings");
        addrs.push_back(a.get<std::string>());
      }
    }
    if (addrs.empty()) throw bad("MLX_HOSTFILE", "has a rank without any \"ip:port\"");
    hosts.push_back(std::move(addrs));
  }
  if (c.rank >= c.size) {
    throw bad("MLX_RANK", "is " + std::to_string(c.rank) + ", not below the " +
                              std::to_string(c.size) + " ranks of MLX_HOSTFILE ('" + path + "')");
  }
  c.topology = Topology::kRing;
  c.listen = hosts[static_cast<size_t>(c.rank)];
  c.listen_ring_neighbours_only = true;  // MLX's ring connects the neighbours alone
  c.coordinator = hosts[0][0];
  c.coordinator_from = "MLX_HOSTFILE";
  c.connections_per_peer = static_cast<int>(hosts[0].size());
}

// A cell of the device matrix: null, "dev" or ["dev", ...] (one per cable).
std::vector<std::string> device_cell(const nlohmann::json& cell) {
  std::vector<std::string> out;
  if (cell.is_string()) {
    out.push_back(cell.get<std::string>());
  } else if (cell.is_array()) {
    for (const auto& d : cell) {
      if (!d.is_string()) throw bad("MLX_IBV_DEVICES", "cells must be null, a name or a list of names");
      out.push_back(d.get<std::string>());
    }
  } else if (!cell.is_null()) {
    throw bad("MLX_IBV_DEVICES", "cells must be null, a name or a list of names");
  }
  return out;
}

// MLX jaccl: an N x N matrix of RDMA device names (null on the diagonal).
void from_mlx_jaccl(Config& c, const char* path, const GetEnv& env, bool set_size) {
  const nlohmann::json j = read_json("MLX_IBV_DEVICES", path);
  if (is_launch_hostfile(j)) {
    throw bad("MLX_IBV_DEVICES",
              launch_hostfile(path) +
                  "not the N x N device matrix that mlx.launch writes from it for jaccl (row i: "
                  "rank i's \"rdma\" list): start the ranks with `mlx.launch --hostfile " +
                  path + "` (or clusterctl launch, runtime mlx-jaccl), or write the matrix");
  }
  if (!j.is_array() || j.empty()) throw bad("MLX_IBV_DEVICES", "must hold an N x N JSON matrix");
  if (!set_size) {
    if (j.size() != static_cast<size_t>(c.size)) {
      throw bad("MLX_IBV_DEVICES", "has " + std::to_string(j.size()) + " rows but the world size is " +
                                       std::to_string(c.size));
    }
  }
  c.size = static_cast<int>(j.size());
  bool ring_only = true;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_array() || j[i].size() != j.size()) {
      throw bad("MLX_IBV_DEVICES", "must hold an N x N JSON matrix");
    }
    for (size_t k = 0; k < j.size(); ++k) {
      const size_t n = j.size();
      const bool neighbour = k == (i + 1) % n || i == (k + 1) % n;
      if (i != k && !j[i][k].is_null() && !neighbour) ring_only = false;
    }
  }
  if (c.rank < c.size) {
    c.devices.clear();
    for (size_t k = 0; k < j.size(); ++k) {
      c.devices.push_back(static_cast<int>(k) == c.rank
                              ? std::vector<std::string>{}
                              : device_cell(j[static_cast<size_t>(c.rank)][k]));
    }
  }
  if (!set_size) return;
  const char* coord = env("MLX_JACCL_COORDINATOR");
  if (coord == nullptr || *coord == '\0') {
    throw bad("MLX_JACCL_COORDINATOR", "must be set (ip:port of rank 0) with MLX_IBV_DEVICES");
  }
  c.coordinator = coord;
  c.coordinator_from = "MLX_JACCL_COORDINATOR";
  c.topology = (env("MLX_JACCL_RING") != nullptr || (ring_only && c.size > 3)) ? Topology::kRing
                                                                               : Topology::kMesh;
}

// The IPv4 address of interface `name` on this host, "" when it has none.
std::string interface_ipv4(const std::string& name) {
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) return "";
  std::string out;
  for (const ifaddrs* a = all; a != nullptr && out.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET || name != a->ifa_name) {
      continue;
    }
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) != nullptr) out = text;
  }
  ::freeifaddrs(all);
  return out;
}

// An address entry of `var` written as the interface setting other libraries take is refused
// here, naming the variable (aws-do-eks#51: NCCL_SOCKET_IFNAME's "^lo,docker" given where
// GLOO_SOCKET_IFNAME wanted one name; an interface name such as eth0 or en0). It would otherwise
// be looked up as a host name, and each rank would fail later with only "cannot resolve 'en0'".
void check_address_entry(const std::string& var, const std::string& entry) {
  const std::string takes =
      ": it takes addresses (ip[:port], comma-separated), not interface names";
  if (!entry.empty() && (entry[0] == '^' || entry[0] == '=')) {
    throw bad(var,
              "has '" + entry + "', an interface list as NCCL_SOCKET_IFNAME writes it" + takes);
  }
  if (entry.empty() || ::if_nametoindex(entry.c_str()) == 0) return;
  const std::string ip = interface_ipv4(entry);
  throw bad(var, "has '" + entry + "', the name of a network interface of this host" + takes +
                     (ip.empty() ? std::string(": give one of that interface's addresses")
                                 : ": " + entry + "'s is " + ip + " (" + ip + ":0 for any port)"));
}

}  // namespace

size_t tuning_chunk_bytes(TransportKind kind) {
  return kind == TransportKind::kTcp ? size_t{512} << 10 : size_t{256} << 10;
}

Tuning resolved_tuning(Tuning tuning, TransportKind kind) {
  if (tuning.chunk_bytes == 0) tuning.chunk_bytes = tuning_chunk_bytes(kind);
  return tuning;
}

PeerRoute parse_peer_route(const std::string& entry) {
  PeerRoute r;
  const size_t gt = entry.find('>');
  if (gt == std::string::npos) {
    r.remote = entry;
  } else {
    r.local = entry.substr(0, gt);
    r.remote = entry.substr(gt + 1);
  }
  return r;
}

Config config_from_env(const GetEnv& getenv_in) {
  const GetEnv env = getenv_in ? getenv_in : [](const char* k) { return std::getenv(k); };
  Config c;
  const auto get = [&](const char* k) -> const char* {
    const char* v = env(k);
    return (v != nullptr && *v != '\0') ? v : nullptr;
  };
  if (const char* v = get("CLUSTERCOMM_TOKEN")) c.token = v;
  if (const char* v = get("CLUSTERCOMM_TIMEOUT_MS")) {
    c.timeout = std::chrono::milliseconds(to_int("CLUSTERCOMM_TIMEOUT_MS", v, 1, 86400000));
  }
  if (const char* v = get("CLUSTERCOMM_RANK")) {
    c.rank = static_cast<int>(to_int("CLUSTERCOMM_RANK", v, 0, 1 << 20));
    const char* s = get("CLUSTERCOMM_SIZE");
    if (s == nullptr) throw bad("CLUSTERCOMM_SIZE", "must be set with CLUSTERCOMM_RANK");
    c.size = static_cast<int>(to_int("CLUSTERCOMM_SIZE", s, 1, 1 << 20));
    if (c.rank >= c.size) throw bad("CLUSTERCOMM_RANK", "must be below CLUSTERCOMM_SIZE");
    if (const char* co = get("CLUSTERCOMM_COORDINATOR")) {
      c.coordinator = co;
      c.coordinator_from = "CLUSTERCOMM_COORDINATOR";
    }
    if (const char* dev = get("MLX_IBV_DEVICES")) from_mlx_jaccl(c, dev, env, false);
  } else if (const char* m = get("MLX_RANK")) {
    c.rank = static_cast<int>(to_int("MLX_RANK", m, 0, 1 << 20));
    if (const char* hf = get("MLX_HOSTFILE")) {
      from_mlx_hostfile(c, hf);
    } else if (const char* dev = get("MLX_IBV_DEVICES")) {
      from_mlx_jaccl(c, dev, env, true);
    } else {
      throw bad("MLX_RANK", "is set but neither MLX_HOSTFILE nor MLX_IBV_DEVICES is");
    }
    if (c.rank >= c.size) throw bad("MLX_RANK", "must be below the world size");
    if (const char* co = get("CLUSTERCOMM_COORDINATOR")) {
      c.coordinator = co;
      c.coordinator_from = "CLUSTERCOMM_COORDINATOR";
    }
  }
  // A launcher that set the coordinator from its own settings names them, so that messages
  // point there rather than at a variable the operator never set.
  if (const char* v = get("CLUSTERCOMM_COORDINATOR_FROM"); v != nullptr && !c.coordinator.empty()) {
    c.coordinator_from = v;
  }
  if (c.size > 1 && c.coordinator.empty()) {
    throw bad("CLUSTERCOMM_COORDINATOR", "must be set (ip:port of rank 0) when the size is > 1");
  }
  if (const char* v = get("CLUSTERCOMM_LISTEN")) {
    c.listen = split(v, ',');
    for (const std::string& l : c.listen) check_address_entry("CLUSTERCOMM_LISTEN", l);
    c.listen_ring_neighbours_only = false;  // what the operator listens on is theirs to say
  }
  if (const char* v = get("CLUSTERCOMM_PEER_ADDRS")) {
    const auto entries = split(v, ',');
    for (const std::string& e : entries) {
      const PeerRoute r = parse_peer_route(e);
      check_address_entry("CLUSTERCOMM_PEER_ADDRS", r.local);
      if (!r.remote.empty() && (r.remote[0] == '^' || r.remote[0] == '=')) {
        check_address_entry("CLUSTERCOMM_PEER_ADDRS", r.remote);
      }
    }
    if (entries.size() != static_cast<size_t>(c.size)) {
      throw bad("CLUSTERCOMM_PEER_ADDRS", "must have one entry per rank (" +
                                              std::to_string(c.size) + "), separated by commas");
    }
    for (const std::string& e : entries) c.routes.push_back(parse_peer_route(e));
  }
  if (const char* v = get("CLUSTERCOMM_CONNS_PER_PEER")) {
    c.connections_per_peer = static_cast<int>(to_int("CLUSTERCOMM_CONNS_PER_PEER", v, 1, 16));
  }
  if (const char* v = get("CLUSTERCOMM_TOPOLOGY")) {
    const std::string t = v;
    if (t == "mesh") {
      c.topology = Topology::kMesh;
    } else if (t == "ring") {
      c.topology = Topology::kRing;
    } else {
      throw bad("CLUSTERCOMM_TOPOLOGY", "must be 'mesh' or 'ring'");
    }
  }
  if (const char* v = get("CLUSTERCOMM_ONE_SHOT_MAX")) {
    c.tuning.one_shot_max_bytes =
        static_cast<size_t>(to_int("CLUSTERCOMM_ONE_SHOT_MAX", v, 0, 1LL << 40));
  }
  if (const char* v = get("CLUSTERCOMM_CHUNK_BYTES")) {
    c.tuning.chunk_bytes =
        static_cast<size_t>(to_int("CLUSTERCOMM_CHUNK_BYTES", v, 4096, 1LL << 32));
  }
  if (const char* v = get("CLUSTERCOMM_WINDOW")) {
    c.tuning.window_chunks = static_cast<size_t>(to_int("CLUSTERCOMM_WINDOW", v, 1, 1024));
  }
  if (const char* v = get("CLUSTERCOMM_SPIN_US")) {
    c.tuning.spin = std::chrono::microseconds(to_int("CLUSTERCOMM_SPIN_US", v, 0, 10000000));
  }
  if (const char* v = get("CLUSTERCOMM_SHM_SINGLE_COPY_MIN")) {
    c.tuning.shm_single_copy_min =
        static_cast<size_t>(to_int("CLUSTERCOMM_SHM_SINGLE_COPY_MIN", v, 0, 1LL << 40));
  }
  if (const char* v = get("CLUSTERCOMM_HOST_ID")) {
    c.host_id = v;
    if (c.host_id.empty() || c.host_id.size() > 1024) {
      throw bad("CLUSTERCOMM_HOST_ID", "must be 1 to 1024 characters");
    }
  }
  if (const char* v = get("CLUSTERCOMM_TRANSPORT")) {
    const std::string t = v;
    if (t == "auto") {
      c.transport = TransportKind::kAuto;
    } else if (t == "tcp") {
      c.transport = TransportKind::kTcp;
    } else if (t == "verbs") {
      c.transport = TransportKind::kVerbs;
    } else if (t == "shm") {
      c.transport = TransportKind::kShm;
    } else {
      throw bad("CLUSTERCOMM_TRANSPORT", "is '" + t + "', expected auto, shm, tcp or verbs");
    }
  }
  if (const char* v = get("CLUSTERCOMM_IBV_FRAME_BYTES")) {
    const auto f = static_cast<size_t>(to_int("CLUSTERCOMM_IBV_FRAME_BYTES", v, 4096, 8 << 20));
    if ((f & (f - 1)) != 0) {
      throw bad("CLUSTERCOMM_IBV_FRAME_BYTES", "must be a power of two (4096 .. 8388608)");
    }
    c.ibv_frame_bytes = f;
  }
  if (const char* v = get("CLUSTERCOMM_IBV_RECV_FRAMES")) {
    c.ibv_recv_frames = static_cast<uint32_t>(to_int("CLUSTERCOMM_IBV_RECV_FRAMES", v, 4, 63));
  }
  if (const char* v = get("CLUSTERCOMM_IBV_PAD_FRAMES")) {
    const std::string p = v;
    if (p == "1" || p == "on") {
      c.ibv_pad_frames = true;
    } else if (p == "0" || p == "off") {
      c.ibv_pad_frames = false;
    } else {
      throw bad("CLUSTERCOMM_IBV_PAD_FRAMES", "is '" + p + "', expected 1 (on) or 0 (off)");
    }
  }
  if (const char* v = get("CLUSTERCOMM_IBV_ZERO_COPY")) {
    const std::string z = v;
    if (z == "message") {
      c.ibv_zero_copy = ZeroCopy::kPerMessage;
    } else if (z == "1" || z == "on" || z == "cached") {
      c.ibv_zero_copy = ZeroCopy::kCached;
    } else if (z == "0" || z == "off") {
      c.ibv_zero_copy = ZeroCopy::kOff;
    } else {
      throw bad("CLUSTERCOMM_IBV_ZERO_COPY",
                "is '" + z + "', expected message (per message), 1 or cached (cached: call "
                "release_buffer before freeing) or 0 (off)");
    }
  }
  if (const char* v = get("CLUSTERCOMM_IBV_PROFILE")) {
    const std::string p = v;
    if (p == "apple" || p == "uc") {
      c.ibv_profile = VerbsProfile::kApple;
    } else if (p == "rc") {
      c.ibv_profile = VerbsProfile::kRc;
    } else {
      throw bad("CLUSTERCOMM_IBV_PROFILE", "is '" + p + "', expected apple (UC) or rc");
    }
  }
  return c;
}

}  // namespace cc::comm
