#include "cli/cluster_source.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (moved there in fmt 11)
#include <CLI/CLI.hpp>

#include "cli/hosts.h"
#include "cli/options.h"
#include "discovery/discover.h"
#include "launch/rank_env.h"
#include "remote/quote.h"

namespace cc::cli {

using util::ExitCode;

void add_cluster_source_options(CLI::App* cmd, ClusterSource& src, bool positional) {
  if (positional) {
    cmd->add_option("cluster", src.state_file,
                    "Cluster state file written by `clusterctl discover -o FILE` (default: "
                    "discover now)");
  }
  cmd->add_option("--hosts", src.hosts,
                  "Hosts to discover: h1,h2 or all (default: every host of --lab/--inventory); "
                  "a name the inventory does not have is refused before any host is probed "
                  "(exit 2, with a did-you-mean)");
  cmd->add_option("--hostfile", src.hostfile, "Discover the hosts of this MLX hostfile (JSON)")
      ->check(existing_path());
  cmd->add_option("--from", src.from_dir,
                  "Replay a support bundle written by `clusterctl collect -o DIR`")
      ->check(existing_path(util::PathKind::kDirectory));
  cmd->add_option("--timeout", src.timeout_s, "Seconds each host's probe may take")
      ->check(seconds_validator())
      ->default_val(60);
}

std::vector<std::filesystem::path> input_files(const GlobalOptions& g, const ClusterSource& src) {
  std::vector<std::filesystem::path> files;
  for (const std::string* f : {&src.state_file, &src.hostfile, &g.inventory, &g.ssh_config}) {
    if (!f->empty()) files.emplace_back(*f);
  }
  return files;
}

namespace {

// How an MPI hostfile given to --hostfile is advised: the suggested commands carry the global
// options and the format asked for, and leave out a host the selected inventory lacks (they
// would be refused as run).
provision::MpiHostfileAdvice mpi_advice(const GlobalOptions& g, const ClusterSource& src) {
  provision::MpiHostfileAdvice advice{global_words(g), false, src.format};
  if (auto inv = selected_inventory(g); inv && *inv) {
    advice.host_check = launch::inventory_host_check(**inv);
  }
  return advice;
}

}  // namespace

util::Result<discovery::ClusterState> obtain_cluster_state(const Context& ctx,
                                                           const ClusterSource& src) {
  // --hostfile names hosts and --from says where their answers come from: they combine.
  if (!src.state_file.empty() &&
      (!src.hostfile.empty() || !src.from_dir.empty() || !src.hosts.empty())) {
    return util::error(ExitCode::kUsage,
                       "give a cluster state file, or discover: --hostfile FILE or --hosts to "
                       "name the hosts, --from DIR to replay their answers");
  }
  if (!src.state_file.empty()) {
    auto loaded =
        discovery::load_cluster_state(src.state_file, global_words(ctx.global), src.replan);
    if (!loaded) return loaded.error();
    if (auto g = options_for_state(ctx.global, *loaded, src.state_file); !g) return g.error();
    return loaded;
  }

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
    auto hf = launch::read_hostfile(src.hostfile, mpi_advice(ctx.global, src));
    if (!hf) return hf.error();
    std::vector<std::string> names;
    for (const auto& h : hf->hosts) {
      names.push_back(h.ssh);
      fallback.push_back(h.ips.empty() ? std::string() : h.ips.front());  // ips[0]
    }
    spec = fmt::format("{}", fmt::join(names, ","));
  }
  auto executors = make_executors(g, spec);
  if (!executors) return executors.error();
  if (fallback.empty()) {
    auto inv = selected_inventory(g);
    // By name through a hash map (Inventory::find is a linear scan: quadratic here).
    remote::HostIndex by_name;
    if (inv && inv->has_value()) by_name = (*inv)->by_name();
    for (const auto& ex : *executors) {
      const remote::InventoryHost* h = by_name.find(ex->host());
      fallback.push_back(h != nullptr ? h->address : std::string());
    }
  }
  std::vector<discovery::DiscoverTarget> targets;
  for (size_t i = 0; i < executors->size(); ++i) {
    targets.push_back({(*executors)[i].get(), fallback[i]});
  }
  discovery::ClusterState state = discovery::discover(targets, opts, ctx.style);
  if (g.replay.empty()) state.lab = g.lab;  // `discover -o` remembers it for later commands
  // A name that resolves nowhere, with no lab selected while labs exist (a lab's host named
  // without --lab, `hostfile --hostfile F` of a lab) says so: make_executors' SSH options carry
  // lab_hint into the connection's message.
  // One machine under two names (an alias and its .local name, say) would be cabled to itself
  // in the plan and counted twice in every hostfile: refuse it, naming both.
  if (auto same = discovery::same_machines(state.hosts); !same.empty()) {
    std::vector<std::string> lines, advice;
    for (const auto& m : same) {
      lines.push_back(fmt::format("{} and {} are the same machine ({})",
                                  state.hosts[m.first].host, state.hosts[m.second].host, m.why));
      if (!m.advice.empty() && std::find(advice.begin(), advice.end(), m.advice) == advice.end()) {
        advice.push_back(m.advice);
      }
    }
    return util::error(
        ExitCode::kUsage,
        fmt::format("{}: list each machine once, under one name (--hosts, the "
                    "inventory, the hostfile or the bundle's host directories){}{}",
                    fmt::join(lines, "; "), advice.empty() ? "" : "; ", fmt::join(advice, "; ")));
  }
  return state;
}

std::string global_words(const GlobalOptions& g) {
  std::vector<std::string> global;
  if (!g.lab.empty()) global.insert(global.end(), {"--lab", g.lab});
  if (!g.inventory.empty()) global.insert(global.end(), {"--inventory", g.inventory});
  if (!g.ssh_config.empty()) global.insert(global.end(), {"-F", g.ssh_config});
  return remote::shell_quote(global);
}

util::Status check_source_hosts(const Context& ctx, const ClusterSource& src) {
  if (!src.from_dir.empty() || !ctx.global.replay.empty()) return {};
  if (!src.state_file.empty()) {
    auto state = discovery::load_cluster_state(src.state_file, global_words(ctx.global));
    if (!state) return state.error();
    auto g = options_for_state(ctx.global, *state, src.state_file);
    if (!g) return g.error();
    std::vector<std::string> names;
    for (const auto& h : state->hosts) names.push_back(h.host);
    for (const auto& p : state->problems) names.push_back(p.host);
    return check_hosts(*g, names, ctx.style);
  }
  if (!src.hostfile.empty()) {
    auto hf = launch::read_hostfile(src.hostfile, mpi_advice(ctx.global, src));
    if (!hf) return hf.error();
    std::vector<std::string> names;
    for (const auto& h : hf->hosts) names.push_back(h.ssh);
    return check_hosts(ctx.global, names, ctx.style);
  }
  auto checked = make_checked_executors(ctx.global, src.hosts.empty() ? "all" : src.hosts,
                                        ctx.style);
  if (!checked) return checked.error();
  return {};
}

std::string state_file_note(const ClusterSource& src, const discovery::ClusterState& state,
                            const discovery::FixCommand& fix) {
  if (src.state_file.empty()) return "";
  // created_at is ISO 8601 UTC to the second ("2026-12-06T21:03:09Z"): shown to the minute.
  std::string when = state.created_at;
  if (when.size() >= 16 && when[10] == 'T') {
    when = fmt::format("{} {} UTC", when.substr(0, 10), when.substr(11, 5));
  } else if (when.empty()) {
    when = "at a time it does not record";
  }
  discovery::FixCommand live = fix;
  live.state_file.clear();  // a look, not a rewrite of the file
  return fmt::format("from {}, discovered {}; `{}` for a live view", src.state_file, when,
                     live.rediscover());
}

discovery::FixCommand fix_command(const GlobalOptions& g, const ClusterSource& src,
                                  const discovery::ClusterState& state) {
  discovery::FixCommand fix;
  fix.global = global_words(g);
  fix.state_file = src.state_file;
  // How ssh(1) reaches the hosts as clusterctl does: the config (-F, else the inventory's: a
  // lab's names each host's address, user, key and known_hosts) and the inventory's
  // known_hosts, which clusterctl uses over any config's; each host at its `ssh:` destination.
  auto inv = g.replay.empty() ? selected_inventory(g)
                              : util::Result<std::optional<remote::Inventory>>(std::nullopt);
  const remote::Inventory* inventory = inv && inv->has_value() ? &**inv : nullptr;
  std::vector<std::string> ssh;
  if (!g.ssh_config.empty()) {
    fix.ssh_config = g.ssh_config;
  } else if (inventory != nullptr && inventory->ssh_config) {
    fix.ssh_config = inventory->ssh_config->string();
  }
  if (!fix.ssh_config.empty()) ssh = {"-F", fix.ssh_config};
  const bool lab_config = !g.lab.empty() && g.ssh_config.empty();  // names known_hosts itself
  if (inventory != nullptr && inventory->known_hosts && !lab_config) {
    ssh.insert(ssh.end(), {"-o", "UserKnownHostsFile=" + inventory->known_hosts->string()});
  }
  fix.ssh_options = remote::shell_quote(ssh);
  if (inventory != nullptr) {
    for (const auto& h : inventory->hosts) {
      if (h.ssh != h.name) fix.ssh_destinations[h.name] = h.ssh;
    }
  }
  fix.hosts = src.hosts;
  if (fix.hosts.empty() && g.replay.empty()) {
    std::vector<std::string> names;
    for (const auto& h : state.hosts) names.push_back(h.host);
    for (const auto& p : state.problems) names.push_back(p.host);
    fix.hosts = fmt::format("{}", fmt::join(names, ","));
  }
  return fix;
}

util::Result<GlobalOptions> options_for_state(const GlobalOptions& g,
                                              const discovery::ClusterState& state,
                                              const std::string& file) {
  GlobalOptions out = g;
  if (state.lab.empty()) return out;
  if (!g.lab.empty() && g.lab != state.lab) {
    const std::string chosen = lab_choice(g);
    const bool from_env = chosen.find("CLUSTERCTL_LAB") != std::string::npos;
    return util::error(
        ExitCode::kUsage,
        fmt::format("{} was discovered on lab '{}', but lab '{}' was chosen ({}): {} to use lab "
                    "'{}', or discover lab '{}' into another file (`clusterctl --lab {} "
                    "discover -o FILE`)",
                    file, state.lab, g.lab, chosen.empty() ? "--lab" : chosen,
                    from_env ? "unset CLUSTERCTL_LAB (and drop --lab)" : "drop --lab", state.lab,
                    g.lab, g.lab));
  }
  if (!g.inventory.empty()) {
    return util::error(ExitCode::kUsage,
                       fmt::format("{} was discovered on lab '{}', but --inventory {} was "
                                   "given: drop --inventory (the state's lab names its hosts)",
                                   file, state.lab, g.inventory));
  }
  if (g.replay.empty()) out.lab = state.lab;
  return out;
}

}  // namespace cc::cli
