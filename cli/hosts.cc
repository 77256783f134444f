#include "cli/hosts.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (moved there in fmt 11)

#include "discovery/natural_sort.h"
#include "remote/inventory.h"
#include "remote/local_executor.h"
#include "remote/replay_executor.h"
#include "remote/ssh_executor.h"
#include "util/state_dir.h"
#include "util/suggest.h"

namespace cc::cli {
namespace {

using util::ExitCode;

std::vector<std::string> subdirectories(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_directory(ec)) names.push_back(e.path().filename().string());
  }
  discovery::natural_sort(names);
  return names;
}

remote::SshOptions ssh_options(const GlobalOptions& g, const remote::Inventory* inv) {
  remote::SshOptions o;
  if (!g.ssh_config.empty()) {
    o.config_file = g.ssh_config;
  } else if (inv != nullptr && inv->ssh_config) {
    o.config_file = inv->ssh_config;
  }
  if (inv != nullptr) o.known_hosts = inv->known_hosts;
  o.accept_new_host_keys = g.accept_new_host_keys;
  o.connect_timeout =
      std::chrono::milliseconds(static_cast<long long>(std::llround(g.connect_timeout_s * 1000.0)));
  return o;
}

}  // namespace

std::vector<std::string> existing_labs() {
  return subdirectories(util::state_dir() / "labs");
}

std::string use_lab_hint(const std::vector<std::string>& labs) {
  if (labs.empty()) return "";
  if (labs.size() == 1) return fmt::format("use lab '{}' (--lab {})", labs[0], labs[0]);
  return "use one of them (--lab NAME)";
}

std::string lab_hint(const GlobalOptions& g, const std::string& host) {
  if (!g.lab.empty() || !g.inventory.empty() || !g.replay.empty() || host == "local") return "";
  const std::vector<std::string> labs = existing_labs();
  if (labs.empty()) return "";
  if (remote::check_destination(host, ssh_options(g, nullptr)).ok()) return "";
  return labs.size() == 1
             ? fmt::format("; if it is a host of a lab, add --lab {}", labs[0])
             : fmt::format("; if it is a host of a lab, add --lab NAME (labs: {})",
                           fmt::join(labs, ", "));
}

util::Result<std::optional<remote::Inventory>> selected_inventory(const GlobalOptions& g) {
  if (!g.lab.empty() && !g.inventory.empty()) {
    return util::error(ExitCode::kUsage,
                       fmt::format("both a lab ('{}', from --lab or CLUSTERCTL_LAB) and an "
                                   "inventory ({}) were given: use one of them",
                                   g.lab, g.inventory));
  }
  std::filesystem::path file = g.inventory;
  if (!g.lab.empty()) {
    std::filesystem::path dir = remote::lab_dir(g.lab);
    file = dir / "inventory.yaml";
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
      std::vector<std::string> labs = subdirectories(dir.parent_path());
      std::string known = labs.empty() ? "there are no labs"
                                       : fmt::format("existing labs: {}", fmt::join(labs, ", "));
      const std::string other = use_lab_hint(labs);
      return util::error(
          ExitCode::kUsage,
          fmt::format("no lab named '{}'{} (no {}); {}. Create it with "
                      "`clusterctl lab up --name {}`{}{}",
                      g.lab, util::did_you_mean(g.lab, labs), file.string(), known, g.lab,
                      other.empty() ? "" : ", or ", other));
    }
  }
  if (file.empty()) return std::optional<remote::Inventory>();
  auto inv = remote::load_inventory(file);
  if (!inv) return inv.error();
  return std::optional<remote::Inventory>(std::move(*inv));
}

util::Result<std::vector<std::unique_ptr<remote::Executor>>> make_executors(
    const GlobalOptions& g, std::string_view hosts_spec) {
  const std::filesystem::path replay_bundle = g.replay;
  auto inv = selected_inventory(g);
  if (!inv) return inv.error();
  const remote::Inventory* inventory = inv->has_value() ? &**inv : nullptr;
  const bool all = remote::split_host_list(hosts_spec) == std::vector<std::string>{"all"};

  // (operator's name, SSH destination) per chosen host.
  std::vector<std::pair<std::string, std::string>> chosen;
  if (inventory != nullptr) {
    auto hosts = remote::select_hosts(*inventory, hosts_spec);
    if (!hosts) return hosts.error();
    for (const auto& h : *hosts) chosen.emplace_back(h.name, h.ssh);
  } else if (all && !replay_bundle.empty()) {
    for (const auto& name : subdirectories(replay_bundle)) chosen.emplace_back(name, name);
    if (chosen.empty()) {
      return util::error(ExitCode::kUsage, fmt::format("replay bundle {} has no host directories",
                                                       replay_bundle.string()));
    }
  } else if (all) {
    return util::error(ExitCode::kUsage,
                       "--hosts all needs to know the cluster's hosts: pass --lab NAME (or set "
                       "CLUSTERCTL_LAB) or --inventory FILE, or name the hosts: --hosts h1,h2");
  } else {
    const std::vector<std::string> names = remote::split_host_list(hosts_spec);
    if (names.empty()) {
      return util::error(ExitCode::kUsage, "--hosts is empty: give host names (h1,h2) or 'all'");
    }
    if (auto st = remote::check_distinct_hosts(names, "--hosts"); !st) return st.error();
    for (const auto& name : names) chosen.emplace_back(name, name);
  }

  std::vector<std::unique_ptr<remote::Executor>> executors;
  remote::SshOptions options = ssh_options(g, inventory);
  for (const auto& [name, destination] : chosen) {
    if (!replay_bundle.empty()) {
      executors.push_back(std::make_unique<remote::ReplayExecutor>(replay_bundle, name));
    } else if (inventory == nullptr && name == "local") {
      executors.push_back(std::make_unique<remote::LocalExecutor>(name));
    } else {
      executors.push_back(std::make_unique<remote::SshExecutor>(name, destination, options));
    }
  }
  return executors;
}

std::function<util::Result<std::unique_ptr<remote::Executor>>(size_t)> one_host_connector(
    const GlobalOptions& g, const std::vector<std::string>& names) {
  return [&g, &names](size_t h) -> util::Result<std::unique_ptr<remote::Executor>> {
    auto ex = make_executors(g, names.at(h));
    if (!ex) return ex.error();
    if (ex->size() != 1) {
      return util::error(util::ExitCode::kUsage, fmt::format("host {}: not one host", names.at(h)));
    }
    return std::move(ex->front());
  };
}

util::Result<std::vector<std::string>> unknown_hosts(const GlobalOptions& g,
                                                     const std::vector<std::string>& names) {
  auto inv = selected_inventory(g);
  if (!inv) return inv.error();
  std::vector<std::string> unknown;
  if (!g.replay.empty()) return unknown;  // a recording answers for whatever it holds
  const remote::Inventory* inventory = inv->has_value() ? &**inv : nullptr;
  const remote::SshOptions options = ssh_options(g, inventory);
  for (const auto& name : names) {
    if (inventory != nullptr) {
      if (auto h = remote::select_hosts(*inventory, name); !h) unknown.push_back(h.error().message);
    } else if (name != "local") {
      if (auto st = remote::check_destination(name, options); !st) {
        unknown.push_back(st.error().message + lab_hint(g, name));
      }
    }
  }
  return unknown;
}

}  // namespace cc::cli
