#include "cli/cluster_source.h"

#include <cmath>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (moved there in fmt 11)
#include <nlohmann/json.hpp>
#include <CLI/CLI.hpp>

#include "cli/hosts.h"
#include "cli/options.h"
#include "discovery/discover.h"
#include "util/atomic_file.h"

namespace cc::cli {
namespace {

using util::ExitCode;

// An MLX hostfile's hosts (facts.md, "MLX interoperability"): {"hosts": [{"ssh": NAME,
// "ips": [IP, ...]}, ...]} or a bare list of such objects. Rank order = list order.
struct HostfileHost {
  std::string ssh;
  std::string address;  // ips[0], "" when none
};

util::Result<std::vector<HostfileHost>> read_mlx_hostfile(const std::string& path) {
  auto text = util::read_file(path);
  if (!text) return text.error();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::parse_error& e) {
    return util::error(ExitCode::kUsage,
                       fmt::format("{}: not valid JSON (byte {}): write an MLX hostfile "
                                   "({{\"hosts\": [{{\"ssh\": \"host1\"}}, ...]}})",
                                   path, e.byte));
  }
  const nlohmann::json* hosts = &j;
  if (j.is_object()) {
    auto it = j.find("hosts");
    if (it == j.end()) {
      return util::error(ExitCode::kUsage,
                         fmt::format("{}: no \"hosts\" list: an MLX hostfile is "
                                     "{{\"hosts\": [{{\"ssh\": NAME, \"ips\": [...]}}, ...]}}",
                                     path));
    }
    hosts = &*it;
  }
  if (!hosts->is_array() || hosts->empty()) {
    return util::error(ExitCode::kUsage,
                       fmt::format("{}: \"hosts\" must be a non-empty list of host objects", path));
  }
  std::vector<HostfileHost> result;
  for (size_t i = 0; i < hosts->size(); ++i) {
    const auto& h = (*hosts)[i];
    auto ssh = h.is_object() ? h.find("ssh") : h.end();
    if (!h.is_object() || ssh == h.end() || !ssh->is_string() ||
        ssh->get<std::string>().empty()) {
      return util::error(ExitCode::kUsage,
                         fmt::format("{}: host {} (rank {}) has no \"ssh\" name", path, i, i));
    }
    HostfileHost host{ssh->get<std::string>(), ""};
    auto ips = h.find("ips");
    if (ips != h.end() && ips->is_array() && !ips->empty() && (*ips)[0].is_string()) {
      host.address = (*ips)[0].get<std::string>();
    }
    result.push_back(std::move(host));
  }
  return result;
}

}  // namespace

void add_cluster_source_options(CLI::App* cmd, ClusterSource& src, bool positional) {
  if (positional) {
    cmd->add_option("cluster", src.state_file,
                    "Cluster state file written by `clusterctl discover -o FILE` (default: "
                    "discover now)");
  }
  cmd->add_option("--hosts", src.hosts,
                  "Hosts to discover: h1,h2 or all (default: every host of --lab/--inventory)");
  cmd->add_option("--hostfile", src.hostfile, "Discover the hosts of this MLX hostfile (JSON)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--from", src.from_dir,
                  "Replay a support bundle written by `clusterctl collect -o DIR`")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--timeout", src.timeout_s, "Seconds each host's probe may take")
      ->check(seconds_validator())
      ->default_val(60);
}

util::Result<discovery::ClusterState> obtain_cluster_state(const Context& ctx,
                                                           const ClusterSource& src) {
  int sources = !src.state_file.empty() + !src.hostfile.empty() + !src.from_dir.empty();
  if (sources > 1 || (!src.state_file.empty() && !src.hosts.empty())) {
    return util::error(ExitCode::kUsage,
                       "give one of: a cluster state file, --hostfile FILE, --from DIR (with "
                       "--hosts to narrow a discovery)");
  }
  if (!src.state_file.empty()) return discovery::load_cluster_state(src.state_file);

  GlobalOptions g = ctx.global;
  discovery::DiscoverOptions opts;
  opts.timeout = std::chrono::milliseconds(std::llround(src.timeout_s * 1000.0));
  if (!src.collect_dir.empty()) opts.collect_dir = src.collect_dir;
  std::string spec = src.hosts.empty() ? "all" : src.hosts;
  std::vector<std::string> fallback;
  if (!src.from_dir.empty()) {
    if (!g.replay.empty()) {
      return util::error(ExitCode::kUsage, "--from DIR and --replay BUNDLE both replay a "
                                           "bundle: give one of them");
    }
    g.replay = src.from_dir;
    opts.mode = discovery::ProbeMode::kEach;
  } else if (!g.replay.empty()) {
    opts.mode = discovery::ProbeMode::kEach;
  }
  if (!src.hostfile.empty()) {
    if (!src.hosts.empty()) {
      return util::error(ExitCode::kUsage, "--hostfile names the hosts already: drop --hosts");
    }
    auto hosts = read_mlx_hostfile(src.hostfile);
    if (!hosts) return hosts.error();
    std::vector<std::string> names;
    for (const auto& h : *hosts) {
      names.push_back(h.ssh);
      fallback.push_back(h.address);
    }
    spec = fmt::format("{}", fmt::join(names, ","));
  }
  auto executors = make_executors(g, spec);
  if (!executors) return executors.error();
  if (fallback.empty()) {
    auto inv = selected_inventory(g);
    for (const auto& ex : *executors) {
      const remote::InventoryHost* h = (inv && inv->has_value()) ? (*inv)->find(ex->host())
                                                                 : nullptr;
      fallback.push_back(h != nullptr ? h->address : std::string());
    }
  }
  std::vector<discovery::DiscoverTarget> targets;
  for (size_t i = 0; i < executors->size(); ++i) {
    targets.push_back({(*executors)[i].get(), fallback[i]});
  }
  return discovery::discover(targets, opts, ctx.style);
}

}  // namespace cc::cli
