#include "launch/rank_env.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "provision/hostfile.h"
#include "topology/graph.h"
#include "util/address.h"
#include "util/atomic_file.h"
#include "util/json_text.h"
#include "util/suggest.h"
#include "util/text.h"

namespace cc::launch {
namespace {

using util::ExitCode;

constexpr const char* kIbvDevicesFile = "mlx-ibv-devices.json";
constexpr const char* kRingHostfile = "mlx-hostfile.json";
// Every variable libclustercomm reads begins so (comm/config.cc).
constexpr std::string_view kClusterCommPrefix = "CLUSTERCOMM_";

// Every runtime, for launch_env_names.
constexpr Runtime kEveryRuntime[] = {Runtime::kClusterComm,  Runtime::kMlxJaccl,
                                     Runtime::kMlxJacclRing, Runtime::kMlxRing,
                                     Runtime::kMpi,          Runtime::kNone};

}  // namespace

util::Status check_world(const WorldPlan& plan) {
  if (plan.hosts.empty()) return util::error(ExitCode::kUsage, "the job has no hosts");
  if (!plan.routes.empty() && plan.routes.size() != plan.hosts.size()) {
    return util::error(ExitCode::kUsage,
                       fmt::format("the cable routes cover {}, the job has {}",
                                   util::plural(plan.routes.size(), "host", "hosts"),
                                   plan.hosts.size()));
  }
  if (!is_mlx(plan.runtime)) return {};
  if (!plan.mlx) {
    return util::error(ExitCode::kUsage,
                       fmt::format("runtime {} needs an MLX hostfile or a cluster state (cluster: "
                                   "hostfile:FILE or cluster.json): the ranks' addresses and "
                                   "devices come from it",
                                   to_string(plan.runtime)));
  }
  if (plan.ranks_per_host != 1) {
    return util::error(ExitCode::kUsage, fmt::format("runtime {} runs one rank per host, as "
                                                     "mlx.launch does: set ranks_per_host: 1",
                                                     to_string(plan.runtime)));
  }
  const auto& hf = *plan.mlx;
  if (hf.hosts.size() != plan.hosts.size()) {
    return util::error(ExitCode::kUsage, fmt::format("the MLX hostfile {} has {}, the job {}",
                                                     hf.path,
                                                     util::plural(hf.hosts.size(), "host", "hosts"),
                                                     plan.hosts.size()));
  }
  if (plan.runtime != Runtime::kMlxRing) {
    if (hf.hosts[0].ips.empty()) {
      return util::error(ExitCode::kUsage,
                         fmt::format("the MLX hostfile {}: rank 0 has no ips: the jaccl "
                                     "coordinator address is ips[0] of rank 0",
                                     hf.path));
    }
    for (size_t i = 0; i < hf.hosts.size(); ++i) {
      if (hf.hosts[i].rdma.size() != hf.hosts.size()) {
        return util::error(ExitCode::kUsage,
                           fmt::format("the MLX hostfile {}: rank {} has {}, expected {} (an "
                                       "N x N matrix)",
                                       hf.path, i,
                                       util::plural(hf.hosts[i].rdma.size(), "rdma cell",
                                                    "rdma cells"),
                                       hf.hosts.size()));
      }
    }
  } else {
    for (size_t i = 0; i < hf.hosts.size(); ++i) {
      if (hf.hosts[i].ips.empty()) {
        return util::error(ExitCode::kUsage,
                           fmt::format("the MLX hostfile {}: rank {} has no ips: the ring "
                                       "backend connects to them",
                                       hf.path, i));
      }
    }
  }
  return {};
}

std::string mlx_ibv_devices_json(const provision::MlxHostfile& hf, int ranks_per_host) {
  const size_t k = static_cast<size_t>(std::max(ranks_per_host, 1));
  nlohmann::json m = nlohmann::json::array();
  for (size_t r = 0; r < hf.hosts.size() * k; ++r) {
    const auto& cells = hf.hosts[r / k].rdma;
    nlohmann::json row = nlohmann::json::array();
    for (size_t p = 0; p < cells.size() * k; ++p) {
      const auto& cell = cells[p / k];
      if (cell.empty() || r / k == p / k) {  // no cable; or the same host (shared memory)
        row.push_back(nullptr);
      } else if (cell.size() == 1) {
        row.push_back(cell[0]);
      } else {
        row.push_back(cell);
      }
    }
    m.push_back(row);
  }
  return util::json_text(m) + "\n";
}

std::string mlx_ring_hostfile_json(const provision::MlxHostfile& hf, int first_port) {
  nlohmann::json list = nlohmann::json::array();
  int port = first_port;
  for (const auto& h : hf.hosts) {
    nlohmann::json node = nlohmann::json::array();
    for (const auto& ip : h.ips) node.push_back(util::host_port(ip, port++));
    list.push_back(node);
  }
  return util::json_text(list) + "\n";
}

std::vector<RuntimeFile> runtime_files(const WorldPlan& plan) {
  if (plan.runtime == Runtime::kClusterComm && plan.devices) {
    return {{kIbvDevicesFile, mlx_ibv_devices_json(*plan.devices, plan.ranks_per_host)}};
  }
  if (!plan.mlx) return {};
  switch (plan.runtime) {
    case Runtime::kMlxJaccl:
    case Runtime::kMlxJacclRing:
      return {{kIbvDevicesFile, mlx_ibv_devices_json(*plan.mlx)}};
    case Runtime::kMlxRing:
      return {{kRingHostfile, mlx_ring_hostfile_json(*plan.mlx, plan.coordinator_port)}};
    default:
      return {};
  }
}

std::vector<EnvVar> rank_env_defaults(const WorldPlan& plan) {
  std::vector<EnvVar> env;
  for (const RankEnvDefault& d : kRankEnvDefaults) {
    const std::string name(d.name);
    bool set = plan.env.count(name) > 0 || plan.secrets.count(name) > 0;
    if (plan.mlx && is_mlx(plan.runtime)) {
      for (const auto& kv : plan.mlx->envs) set = set || kv.starts_with(name + "=");
    }
    if (!set) env.emplace_back(name, std::string(d.value));
  }
  return env;
}

std::string coordinator_address(const WorldPlan& plan) {
  const LaunchHost& h0 = plan.hosts.at(0);
  return util::host_port(h0.address.empty() ? h0.name : h0.address, plan.coordinator_port);
}

std::vector<EnvVar> runtime_env(const WorldPlan& plan, int rank, const std::string& job_dir) {
  std::vector<EnvVar> env;
  const std::string r = std::to_string(rank);
  switch (plan.runtime) {
    case Runtime::kClusterComm: {
      env.emplace_back("CLUSTERCOMM_RANK", r);
      env.emplace_back("CLUSTERCOMM_SIZE", std::to_string(plan.world_size()));
      env.emplace_back("CLUSTERCOMM_COORDINATOR", coordinator_address(plan));
      env.emplace_back("CLUSTERCOMM_TOKEN", plan.token);
      if (!plan.coordinator_from.empty()) {
        env.emplace_back("CLUSTERCOMM_COORDINATOR_FROM", plan.coordinator_from);
      }
      if (!plan.routes.empty()) {
        const size_t me = plan.host_of(rank);
        std::string addrs;
        bool any = false;
        for (int p = 0; p < plan.world_size(); ++p) {
          const size_t peer = plan.host_of(p);
          const std::string& route = plan.routes.at(me).at(peer);
          if (p > 0) addrs += ',';
          if (peer != me) addrs += route;
          any = any || (peer != me && !route.empty());
        }
        if (any) env.emplace_back("CLUSTERCOMM_PEER_ADDRS", addrs);
      }
      if (plan.devices) {
        env.emplace_back("MLX_IBV_DEVICES", job_dir + "/" + kIbvDevicesFile);
      }
      break;
    }
    case Runtime::kMlxJaccl:
    case Runtime::kMlxJacclRing:
      env.emplace_back("MLX_RANK", r);
      env.emplace_back("MLX_IBV_DEVICES", job_dir + "/" + kIbvDevicesFile);
      env.emplace_back("MLX_JACCL_COORDINATOR",
                       util::host_port(plan.mlx->hosts.at(0).ips.at(0), plan.coordinator_port));
      if (plan.runtime == Runtime::kMlxJacclRing) env.emplace_back("MLX_JACCL_RING", "1");
      // MLX ignores it; a libclustercomm program reading MLX's variables needs it to form a
      // world across hosts (comm/README.md, "Token").
      env.emplace_back("CLUSTERCOMM_TOKEN", plan.token);
      if (!plan.coordinator_from.empty()) {
        env.emplace_back("CLUSTERCOMM_COORDINATOR_FROM", plan.coordinator_from);
      }
      break;
    case Runtime::kMlxRing:
      env.emplace_back("MLX_RANK", r);
      env.emplace_back("MLX_HOSTFILE", job_dir + "/" + kRingHostfile);
      // MLX's ring has no coordinator; libclustercomm would take rank 0's first ring address,
      // the end of a cable that only rank 0's ring neighbour reaches. Rank 0's host address
      // reaches it from every host, as under runtime clustercomm.
      env.emplace_back("CLUSTERCOMM_COORDINATOR", coordinator_address(plan));
      env.emplace_back("CLUSTERCOMM_TOKEN", plan.token);
      if (!plan.coordinator_from.empty()) {
        env.emplace_back("CLUSTERCOMM_COORDINATOR_FROM", plan.coordinator_from);
      }
      break;
    case Runtime::kMpi:
    case Runtime::kNone:
      break;
  }
  return env;
}

std::vector<EnvVar> rank_env(const WorldPlan& plan, int rank, const std::string& job_dir) {
  std::vector<EnvVar> env = rank_env_defaults(plan);
  for (EnvVar& v : runtime_env(plan, rank, job_dir)) env.push_back(std::move(v));
  if (plan.mlx && is_mlx(plan.runtime)) {
    for (const auto& kv : plan.mlx->envs) {
      size_t eq = kv.find('=');
      if (eq != std::string::npos) env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  for (const auto& kv : plan.env) env.emplace_back(kv);
  for (const auto& kv : plan.secrets) env.emplace_back(kv);
  return env;
}

const std::vector<std::string>& launch_env_names() {
  static const std::vector<std::string> names = [] {
    // A world of two hosts with every optional part (cable routes, a device matrix, the
    // coordinator's origin): what runtime_env sets under each runtime is exactly what launch
    // sets per rank.
    provision::MlxHostfile hf;
    hf.hosts = {{"a", {"10.0.0.1"}, {{}, {"d"}}}, {"b", {"10.0.0.2"}, {{"d"}, {}}}};
    WorldPlan p;
    p.hosts = {{"a", "10.0.0.1", ""}, {"b", "10.0.0.2", ""}};
    p.mlx = hf;
    p.devices = hf;
    p.token = "t";
    p.coordinator_from = "f";
    p.routes = {{"", "10.0.0.1>10.0.0.2"}, {"10.0.0.2>10.0.0.1", ""}};
    std::set<std::string> seen;
    for (Runtime r : kEveryRuntime) {
      p.runtime = r;
      for (const EnvVar& v : runtime_env(p, 0, "/job")) seen.insert(v.first);
    }
    return std::vector<std::string>(seen.begin(), seen.end());
  }();
  return names;
}

const std::vector<std::string>& clustercomm_tuning_names() {
  static const std::vector<std::string> names = {"CLUSTERCOMM_CHUNK_BYTES",
                                                 "CLUSTERCOMM_CONNS_PER_PEER",
                                                 "CLUSTERCOMM_HOST_ID",
                                                 "CLUSTERCOMM_IBV_FRAME_BYTES",
                                                 "CLUSTERCOMM_IBV_PAD_FRAMES",
                                                 "CLUSTERCOMM_IBV_PROFILE",
                                                 "CLUSTERCOMM_IBV_RECV_FRAMES",
                                                 "CLUSTERCOMM_IBV_ZERO_COPY",
                                                 "CLUSTERCOMM_LISTEN",
                                                 "CLUSTERCOMM_ONE_SHOT_MAX",
                                                 "CLUSTERCOMM_SHM_SINGLE_COPY_MIN",
                                                 "CLUSTERCOMM_SPIN_US",
                                                 "CLUSTERCOMM_TIMEOUT_MS",
                                                 "CLUSTERCOMM_TOPOLOGY",
                                                 "CLUSTERCOMM_TRANSPORT",
                                                 "CLUSTERCOMM_WINDOW"};
  return names;
}

std::optional<std::string> unread_clustercomm_name(std::string_view name) {
  if (!name.starts_with(kClusterCommPrefix)) return std::nullopt;
  const auto& tuning = clustercomm_tuning_names();
  if (std::binary_search(tuning.begin(), tuning.end(), name)) return std::nullopt;
  std::vector<std::string> read = tuning;
  for (const std::string& n : launch_env_names()) {
    if (n.starts_with(kClusterCommPrefix)) read.push_back(n);
  }
  if (std::find(read.begin(), read.end(), name) != read.end()) return std::nullopt;
  return fmt::format("libclustercomm reads no variable {}, so it changes nothing{}", name,
                     util::did_you_mean(name, read));
}

std::vector<std::string> unread_clustercomm_warnings(const std::vector<std::string>& entries,
                                                     std::string_view where) {
  std::vector<std::string> out;
  for (const std::string& entry : entries) {
    const std::string_view name = std::string_view(entry).substr(0, entry.find('='));
    if (auto why = unread_clustercomm_name(name)) {
      out.push_back(fmt::format("{}: {}: {}", where, name, *why));
    }
  }
  return out;
}

std::optional<EnvNameProblem> env_name_problem(std::string_view name) {
  if (!util::is_env_name(name)) return EnvNameProblem::kInvalid;
  const auto& owned = launch_env_names();
  if (std::binary_search(owned.begin(), owned.end(), name)) return EnvNameProblem::kSetByLaunch;
  if (name.starts_with(kWrapperVariablePrefix)) return EnvNameProblem::kWrapperOwn;
  return std::nullopt;
}

std::string describe(EnvNameProblem p, std::string_view name) {
  switch (p) {
    case EnvNameProblem::kInvalid:
      return fmt::format(
          "'{}' is not a valid environment variable name: use letters, digits "
          "and '_', not starting with a digit",
          name);
    case EnvNameProblem::kSetByLaunch:
      return fmt::format("'{}' is set by launch for each rank", name);
    case EnvNameProblem::kWrapperOwn:
      return fmt::format("'{}': names beginning with '{}' are the rank wrapper's own", name,
                         kWrapperVariablePrefix);
  }
  return std::string(name);
}

std::optional<std::string> rank_env_entry_problem(std::string_view entry, std::string_view remove) {
  if (auto why = provision::env_entry_problem(entry)) return why;
  const std::string_view name = entry.substr(0, entry.find('='));
  auto p = env_name_problem(name);
  if (!p) return std::nullopt;
  if (p == EnvNameProblem::kSetByLaunch) {
    return fmt::format(
        "{} (each rank gets its own value; one set here would be every rank's): "
        "remove it from {}",
        describe(*p, name), remove);
  }
  return fmt::format("{}: rename it, or remove it from {}", describe(*p, name), remove);
}

std::function<std::optional<std::string>(std::string_view host)> inventory_host_check(
    const remote::Inventory& inventory) {
  // The index points into the hosts of this copy, which the check keeps.
  auto inv = std::make_shared<const remote::Inventory>(inventory);
  auto index = std::make_shared<const remote::HostIndex>(inv->by_name());
  return [inv, index](std::string_view host) -> std::optional<std::string> {
    if (index->find(host) != nullptr) return std::nullopt;
    return fmt::format("is not a host of {}, the inventory the command reaches its hosts "
                       "through: add it there, or name it by a host of it",
                       inv->path.string());
  };
}

util::Result<provision::MlxHostfile> read_hostfile(const std::string& path,
                                                   const provision::MpiHostfileAdvice& mpi) {
  // Launch's check of each "envs" entry runs with the reader's, so every problem of the file
  // is reported in one run.
  return provision::read_mlx_hostfile(
      path,
      [](std::string_view entry) {
        return rank_env_entry_problem(entry, "the hostfile's \"envs\"");
      },
      mpi);
}

namespace {
// The cable that hosts a and b route over: their first with an address on both ends.
std::optional<size_t> route_cable(const topology::ClusterGraph& g, size_t a, size_t b) {
  for (size_t c : g.cables_between(a, b)) {
    if (provision::cable_end_address(g, c, a) && provision::cable_end_address(g, c, b)) return c;
  }
  return std::nullopt;
}
}  // namespace

std::vector<discovery::Cable> routed_cables(const discovery::ClusterState& state) {
  const topology::ClusterGraph g(state);
  std::vector<discovery::Cable> out;
  for (size_t a = 0; a < g.size(); ++a) {
    for (size_t b = a + 1; b < g.size(); ++b) {
      if (auto c = route_cable(g, a, b)) out.push_back(g.cable(*c));
    }
  }
  return out;
}

std::vector<discovery::Cable> hostfile_cables(const provision::MlxHostfile& hf,
                                              const discovery::ClusterState& state) {
  const topology::ClusterGraph g(state);
  std::vector<std::optional<size_t>> host_of(hf.hosts.size());
  for (size_t r = 0; r < hf.hosts.size(); ++r) host_of[r] = g.host_index(hf.hosts[r].ssh);
  auto in_file = [&](size_t cable, size_t host) {
    const auto addr = provision::cable_end_address(g, cable, host);
    if (!addr) return false;
    for (size_t r = 0; r < hf.hosts.size(); ++r) {
      if (host_of[r] != host) continue;
      const auto& ips = hf.hosts[r].ips;
      if (std::find(ips.begin(), ips.end(), *addr) != ips.end()) return true;
    }
    return false;
  };
  std::vector<discovery::Cable> out;
  for (size_t a = 0; a < g.size(); ++a) {
    for (size_t b = a + 1; b < g.size(); ++b) {
      for (size_t c : g.cables_between(a, b)) {
        if (in_file(c, a) || in_file(c, b)) out.push_back(g.cable(c));
      }
    }
  }
  return out;
}

void add_cable_links(WorldPlan& plan, const discovery::ClusterState& state) {
  const topology::ClusterGraph g(state);
  const size_t n = g.size();
  std::vector<std::vector<std::string>> routes(n, std::vector<std::string>(n));
  bool any = false;
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      if (auto c = route_cable(g, a, b)) {
        routes[a][b] =
            *provision::cable_end_address(g, *c, a) + ">" + *provision::cable_end_address(g, *c, b);
        any = true;
      }
    }
  }
  plan.routes = any ? std::move(routes) : std::vector<std::vector<std::string>>{};
  plan.devices.reset();
  if (n > 1) {
    auto hf = provision::make_mlx_hostfile(state, provision::HostfileFormat::kMlxJaccl);
    if (hf) plan.devices = std::move(*hf);
  }
}

util::Result<std::map<std::string, std::string>> resolve_secrets(const JobSpec& spec) {
  std::map<std::string, std::string> out;
  for (const auto& [name, src] : spec.secret_env) {
    if (src.kind == SecretSource::Kind::kEnv) {
      const char* v = std::getenv(src.value.c_str());
      if (v == nullptr) {
        return util::error(ExitCode::kUsage,
                           fmt::format("{}: secret_env {}: the variable {} is not set in your "
                                       "environment; export it before launching",
                                       spec.source.string(), name, src.value));
      }
      out[name] = v;
    } else {
      auto text = util::read_file(src.value);
      if (!text) {
        return util::error(ExitCode::kUsage, fmt::format("{}: secret_env {}: cannot read {}",
                                                         spec.source.string(), name, src.value));
      }
      std::string value = std::move(*text);
      while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.pop_back();
      out[name] = std::move(value);
    }
  }
  return out;
}

}  // namespace cc::launch
