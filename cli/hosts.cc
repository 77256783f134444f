#include "cli/hosts.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (moved there in fmt 11)

#include "discovery/natural_sort.h"
#include "remote/fan_out.h"
#include "remote/inventory.h"
#include "remote/local_executor.h"
#include "remote/replay_executor.h"
#include "remote/ssh_config_scan.h"
#include "remote/ssh_executor.h"
#include "util/address.h"
#include "util/host_name.h"
#include "util/state_dir.h"
#include "util/suggest.h"
#include "util/text.h"

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
  if (inv == nullptr) o.unresolved_hint = lab_hint(g);
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

OtherLabs other_labs(const std::string& name) {
  OtherLabs o;
  o.names = existing_labs();
  o.listed = o.names.empty() ? "there are no labs"
                             : fmt::format("existing labs: {}", fmt::join(o.names, ", "));
  o.did_you_mean = util::did_you_mean(name, o.names);
  return o;
}

std::string use_lab_hint(const std::vector<std::string>& labs) {
  if (labs.empty()) return "";
  if (labs.size() == 1) return fmt::format("use lab '{}' (--lab {})", labs[0], labs[0]);
  return "use one of them (--lab NAME)";
}

std::string lab_hint(const GlobalOptions& g) {
  if (!g.lab.empty() || !g.inventory.empty() || !g.replay.empty()) return "";
  const std::vector<std::string> labs = existing_labs();
  if (labs.empty()) return "";
  return labs.size() == 1
             ? fmt::format("; if it is a host of a lab, add --lab {}", labs[0])
             : fmt::format("; if it is a host of a lab, add --lab NAME (labs: {})",
                           fmt::join(labs, ", "));
}

std::string lab_choice(const GlobalOptions& g) {
  if (g.lab.empty() || g.lab != g.lab_given) return "";
  const char* env = std::getenv("CLUSTERCTL_LAB");
  if (env != nullptr && g.lab == env) return fmt::format("--lab or CLUSTERCTL_LAB={}", g.lab);
  return fmt::format("--lab {}", g.lab);
}

util::Error no_lab_error(const std::string& name, const std::filesystem::path& inventory,
                         const std::string& chosen) {
  const OtherLabs labs = other_labs(name);
  const std::string other = use_lab_hint(labs.names);
  return util::Error{
      ExitCode::kUsage,
      fmt::format("no lab named '{}'{} ({}{}no {}); {}. Create it with "
                  "`clusterctl lab up --name {}`{}{}",
                  name, labs.did_you_mean, chosen, chosen.empty() ? "" : "; ", inventory.string(),
                  labs.listed, name, other.empty() ? "" : ", or ", other)};
}

util::Result<std::optional<remote::Inventory>> selected_inventory(const GlobalOptions& g) {
  if (!g.lab.empty() && !g.inventory.empty()) {
    const std::string chosen = lab_choice(g);
    return util::error(
        ExitCode::kUsage,
        fmt::format("both a lab ('{}', from {}) and an inventory ({}) were "
                    "given: use one of them",
                    g.lab, chosen.empty() ? "--lab or CLUSTERCTL_LAB" : chosen, g.inventory));
  }
  std::filesystem::path file = g.inventory;
  if (!g.lab.empty()) {
    std::filesystem::path dir = remote::lab_dir(g.lab);
    file = dir / "inventory.yaml";
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return missing_lab_error(g.lab, file, lab_choice(g));
  }
  if (file.empty()) return std::optional<remote::Inventory>();
  auto inv = remote::load_inventory(file);
  if (!inv) return inv.error();
  return std::optional<remote::Inventory>(std::move(*inv));
}

namespace {

// The hosts `hosts_spec` chooses: (operator's name, SSH destination) per host, in order, and
// the inventory they come from (none: nullopt).
struct Chosen {
  std::optional<remote::Inventory> inventory;
  std::vector<std::pair<std::string, std::string>> hosts;
};

// Every host directory of a replay bundle names a host (util::host_name_problem, the rule an
// inventory's names follow): a name ssh or a hostfile cannot take is refused here, where it
// enters, not written into a cluster state or a hostfile that fails later.
util::Status check_bundle_names(const std::filesystem::path& bundle,
                                const std::vector<std::pair<std::string, std::string>>& hosts) {
  std::vector<std::string> bad;
  for (const auto& h : hosts) {
    if (auto why = util::host_name_problem(h.first)) bad.push_back(*why);
  }
  if (bad.empty()) return {};
  return util::error(ExitCode::kUsage,
                     fmt::format("replay bundle {}: {}: rename the host's directory", bundle.string(),
                                 fmt::join(bad, "; ")));
}

util::Result<Chosen> choose_hosts(const GlobalOptions& g, std::string_view hosts_spec) {
  const std::filesystem::path replay_bundle = g.replay;
  auto inv = selected_inventory(g);
  if (!inv) return inv.error();
  Chosen chosen{std::move(*inv), {}};
  const bool all = remote::split_host_list(hosts_spec) == std::vector<std::string>{"all"};
  if (chosen.inventory) {
    auto hosts = remote::select_hosts(*chosen.inventory, hosts_spec);
    if (!hosts) return hosts.error();
    for (const auto& h : *hosts) chosen.hosts.emplace_back(h.name, h.ssh);
  } else if (all && !replay_bundle.empty()) {
    for (const auto& name : subdirectories(replay_bundle)) chosen.hosts.emplace_back(name, name);
    if (auto st = check_bundle_names(replay_bundle, chosen.hosts); !st) return st.error();
    if (chosen.hosts.empty()) {
      return util::error(ExitCode::kUsage, fmt::format("replay bundle {} has no host directories",
                                                       replay_bundle.string()));
    }
  } else if (all) {
    return util::error(ExitCode::kUsage,
                       "no lab or inventory says which hosts the cluster has: pass --lab NAME "
                       "(or set CLUSTERCTL_LAB) or --inventory FILE, or name the hosts: --hosts "
                       "h1,h2");
  } else {
    const std::vector<std::string> names = remote::split_host_list(hosts_spec);
    if (names.empty()) {
      return util::error(ExitCode::kUsage, "--hosts is empty: give host names (h1,h2) or 'all'");
    }
    if (auto st = remote::check_distinct_hosts(names, "--hosts"); !st) return st.error();
    // A bundle's host is found as an inventory's is (util::same_host_name: "MAC1" is its
    // mac1), and answers under the bundle's name.
    const std::vector<std::string> recorded =
        replay_bundle.empty() ? std::vector<std::string>() : subdirectories(replay_bundle);
    for (const auto& name : names) {
      auto it = std::find_if(recorded.begin(), recorded.end(), [&name](const std::string& r) {
        return util::same_host_name(r, name);
      });
      const std::string& as = it != recorded.end() ? *it : name;
      chosen.hosts.emplace_back(as, as);
    }
    if (!replay_bundle.empty()) {
      if (auto st = check_bundle_names(replay_bundle, chosen.hosts); !st) return st.error();
    } else {
      for (const auto& name : names) {
        if (auto why = util::ssh_destination_problem(name)) {
          return util::error(ExitCode::kUsage, fmt::format("--hosts: {}", *why));
        }
      }
    }
  }
  return chosen;
}

// Where the SSH config that reaches the hosts has lines libssh reads otherwise than ssh, and
// without a word (`Match`, a negated Host pattern after another, an Include of several paths;
// and per host, Host lines after its HostName), said on stderr once per run (per config, and
// per host): clusterctl could reach another address, user or port than `ssh HOST`
// (remote/ssh_config_scan.h). A note, not an error: the config may well mean the same to both.
void note_ssh_config_once(const remote::SshOptions& options, const std::string& destination) {
  static std::mutex mu;
  static std::set<std::string> said;  // config_file ("" for the default files), then + host
  const std::string config = options.config_file ? options.config_file->string() : "";
  bool config_said = false, host_said = false;
  {
    const std::lock_guard<std::mutex> lock(mu);
    config_said = !said.insert(config).second;
    host_said = !said.insert(config + '\n' + destination).second;
  }
  std::string note;
  if (!config_said) note = remote::scan_notes(remote::scan_ssh_config(options));
  if (!host_said) {
    const std::string host = remote::host_after_hostname_note(
        destination, remote::host_lines_after_hostname(options, destination));
    if (!host.empty()) note += (note.empty() ? "" : "\n") + host;
  }
  if (!note.empty()) {
    for (std::string_view line : util::split_lines(note)) {
      fmt::print(stderr, "{}{}\n", line.starts_with("note:") ? "clusterctl: " : "", line);
    }
    std::fflush(stderr);
  }
}

std::unique_ptr<remote::Executor> executor_for(const GlobalOptions& g, bool inventory,
                                               const std::string& name,
                                               const std::string& destination,
                                               const remote::SshOptions& options) {
  if (!g.replay.empty()) return std::make_unique<remote::ReplayExecutor>(g.replay, name);
  if (!inventory && name == "local") return std::make_unique<remote::LocalExecutor>(name);
  note_ssh_config_once(options, destination);
  return std::make_unique<remote::SshExecutor>(name, destination, options);
}

}  // namespace

util::Result<std::vector<std::unique_ptr<remote::Executor>>> make_executors(
    const GlobalOptions& g, std::string_view hosts_spec) {
  auto chosen = choose_hosts(g, hosts_spec);
  if (!chosen) return chosen.error();
  const remote::Inventory* inventory = chosen->inventory ? &*chosen->inventory : nullptr;
  const remote::SshOptions options = ssh_options(g, inventory);
  std::vector<std::unique_ptr<remote::Executor>> executors;
  for (const auto& [name, destination] : chosen->hosts) {
    executors.push_back(executor_for(g, inventory != nullptr, name, destination, options));
  }
  return executors;
}

std::string reached_host_name(const GlobalOptions& g, const std::string& destination) {
  if (!g.replay.empty()) return destination;
  auto inv = selected_inventory(g);
  const remote::Inventory* inventory = inv && inv->has_value() ? &**inv : nullptr;
  const remote::SshOptions options = ssh_options(g, inventory);
  note_ssh_config_once(options, destination);
  return remote::configured_host_name(destination, options).value_or(destination);
}

bool reached_locally(const GlobalOptions& g, const std::string& name) {
  if (name != "local" || !g.replay.empty()) return false;
  auto inv = selected_inventory(g);
  return inv.ok() && !inv->has_value();
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

util::Result<std::vector<std::string>> host_problems_each(const GlobalOptions& g,
                                                          const std::vector<std::string>& names,
                                                          const util::OutputStyle& style) {
  auto inv = selected_inventory(g);
  if (!inv) return inv.error();
  std::vector<std::string> problems(names.size());  // per name: "" when it can be tried
  if (!g.replay.empty()) return problems;           // a recording answers for itself
  const remote::Inventory* inventory = inv->has_value() ? &**inv : nullptr;
  const remote::SshOptions options = ssh_options(g, inventory);
  std::vector<std::string> unknown(names.size());  // per name: "" when known
  std::vector<std::unique_ptr<remote::Executor>> executors(names.size());
  std::vector<const remote::InventoryHost*> entries(names.size(), nullptr);
  const remote::HostIndex by_name =
      inventory != nullptr ? inventory->by_name() : remote::HostIndex();
  for (size_t i = 0; i < names.size(); ++i) {
    if (inventory != nullptr) {
      const remote::InventoryHost* found = by_name.find(names[i]);  // "H1" finds h1
      if (found == nullptr) {
        // Its "did you mean" message, also for a name that differs only in blanks ("h1 " in a
        // hostfile: --hosts trims them, this exact lookup does not).
        unknown[i] = remote::unknown_host_error(names[i], inventory->names(),
                                                inventory->path.string())
                         .message;
        continue;
      }
      entries[i] = found;
      executors[i] = executor_for(g, true, found->name, found->ssh, options);
    } else {
      executors[i] = executor_for(g, false, names[i], names[i], options);
    }
  }
  std::vector<remote::Executor*> raw;
  for (const auto& e : executors) raw.push_back(e.get());
  const auto checked = remote::check_each(raw, style);
  for (size_t i = 0; i < names.size(); ++i) {
    if (!unknown[i].empty()) {
      problems[i] = unknown[i];
    } else if (checked[i] && entries[i] != nullptr) {
      // "inventory.yaml: host h2: 'fe80::1%nosuch0' is not a valid SSH destination: ..."
      const remote::InventoryHost& h = *entries[i];
      problems[i] = fmt::format("{}: host {}{}", inventory->path.string(), checked[i]->message,
                                h.ssh != h.name ? fmt::format("; fix host {}'s `ssh:` in {}",
                                                              h.name, inventory->path.string())
                                                : std::string());
    } else if (checked[i]) {
      // The name is the destination: said once ("'fe80::1%nosuch0' is not a valid ...").
      // A name that resolves nowhere ends with lab_hint (ssh_options).
      std::string_view message = checked[i]->message;
      if (message.starts_with(names[i] + ": ")) message.remove_prefix(names[i].size() + 2);
      problems[i] = std::string(message);
    }
  }
  return problems;
}

util::Result<std::vector<std::string>> host_problems(const GlobalOptions& g,
                                                     const std::vector<std::string>& names,
                                                     const util::OutputStyle& style) {
  auto each = host_problems_each(g, names, style);
  if (!each) return each.error();
  std::vector<std::string> problems;
  for (auto& p : *each) {
    if (!p.empty()) problems.push_back(std::move(p));
  }
  return problems;
}

util::Status check_hosts(const GlobalOptions& g, const std::vector<std::string>& names,
                         const util::OutputStyle& style) {
  auto problems = host_problems(g, names, style);
  if (!problems) return problems.error();
  if (problems->empty()) return {};
  return remote::hosts_refused(*problems, names.size());
}

util::Result<std::vector<std::unique_ptr<remote::Executor>>> make_checked_executors(
    const GlobalOptions& g, std::string_view hosts_spec, const util::OutputStyle& style) {
  std::vector<std::string> names = remote::split_host_list(hosts_spec);
  if (names == std::vector<std::string>{"all"}) {
    auto chosen = choose_hosts(g, hosts_spec);
    if (!chosen) return chosen.error();
    names.clear();
    for (const auto& h : chosen->hosts) names.push_back(h.first);
  } else if (auto st = remote::check_distinct_hosts(names, "--hosts"); !st) {
    return st.error();
  }
  if (!names.empty()) {
    if (auto st = check_hosts(g, names, style); !st) return st.error();
  }
  return make_executors(g, hosts_spec);
}

}  // namespace cc::cli
