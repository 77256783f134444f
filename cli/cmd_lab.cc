// `clusterctl lab up|down|status|list`: the emulated cluster on this Linux machine (lab/).
#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/hosts.h"
#include "cli/options.h"
#include "lab/data.h"
#include "lab/files.h"
#include "lab/lab.h"
#include "lab/owner.h"
#include "lab/system.h"
#include "launch/job_state.h"
#include "launch/runner.h"
#include "remote/inventory.h"
#include "remote/local_executor.h"
#include "util/interrupt.h"
#include "util/json_text.h"
#include "util/state_dir.h"
#include "util/suggest.h"
#include "util/term.h"
#include "util/text.h"

namespace cc::cli {

util::Error missing_lab_error(const std::string& name, const std::filesystem::path& inventory,
                              const std::string& chosen) {
  if (!remote::validate_lab_name(name)) return no_lab_error(name, inventory, chosen);
  // Whose the name is, as `lab status` tells it (lab/owner.h).
  const lab::OwnerFacts facts = lab::gather_owner_facts(name, remote::lab_dir(name));
  const lab::Owner owner = lab::classify(facts);
  if (owner == lab::Owner::kNone) return no_lab_error(name, inventory, chosen);
  if (owner == lab::Owner::kHere) {  // its lab.json is here, its inventory is not
    return util::Error{util::ExitCode::kUsage,
                       fmt::format("lab '{}' has no inventory ({} is missing): its files were "
                                   "changed by hand; `clusterctl lab status --name {}` tells "
                                   "more",
                                   name, inventory.string(), name)};
  }
  util::Error e = lab::status_error(facts, owner, lab::sys::is_root());
  e.code = util::ExitCode::kUsage;  // --lab named a lab this command cannot use: an input error
  return e;
}

namespace {

using util::ExitCode;

struct LabOptions {
  std::string name;
  std::string dir;
  int hosts = 4;
  CLI::Option* hosts_option = nullptr;
  std::string topology = "mesh";
  std::vector<std::string> omit;
  std::vector<std::string> extra;
  int receptacles = 0;
  std::string data_size = "8G";  // parsed by lab::parse_data_size
  bool json = false;
  bool other_state = false;  // lab down: also a lab recorded for another lab directory
};

// --name, else the global --lab / $CLUSTERCTL_LAB, else "default".
std::string lab_name(const LabOptions& o, const Context& ctx) {
  if (!o.name.empty()) return o.name;
  if (!ctx.global.lab.empty()) return ctx.global.lab;
  return "default";
}

ExitCode fail(std::string_view command, const util::Error& e) {
  fmt::print(stderr, "clusterctl {}: {}\n", command, e.message);
  return e.code;
}

void add_name_and_dir(CLI::App* cmd, LabOptions& o) {
  cmd->add_option("--name", o.name,
                  "Lab name: 1-32 of [A-Za-z0-9_-] (default: --lab, $CLUSTERCTL_LAB or "
                  "\"default\")");
  cmd->add_option("--dir", o.dir,
                  "Lab directory (default: $XDG_STATE_HOME/clusterctl/labs/NAME, or "
                  "~/.local/state/clusterctl/labs/NAME)");
}

// One cable port of a host and what it is cabled to.
struct PortPeer {
  std::string port;       // "tb1"
  std::string peer;       // "h2"
  std::string peer_port;  // "tb1"
};

// Per host, its ports in receptacle order ("tb2" before "tb10").
std::map<std::string, std::vector<PortPeer>> ports_by_host(const lab::LabRecord& lab) {
  std::map<std::string, std::vector<PortPeer>> out;
  for (const auto& c : lab.cables) {
    out[c.a.host].push_back({c.a.port, c.b.host, c.b.port});
    out[c.b.host].push_back({c.b.port, c.a.host, c.a.port});
  }
  for (auto& [host, list] : out) {
    std::sort(list.begin(), list.end(), [](const PortPeer& x, const PortPeer& y) {
      return std::make_pair(x.port.size(), x.port) < std::make_pair(y.port.size(), y.port);
    });
  }
  return out;
}

ExitCode run_up(const LabOptions& o, Context& ctx) {
  const std::string name = lab_name(o, ctx);
  lab::UpOptions up;
  up.name = name;
  up.topology = {o.hosts, o.hosts_option->count() > 0, o.topology, o.omit, o.extra,
                 o.receptacles};
  up.dir = o.dir;
  auto data_size = lab::parse_data_size(o.data_size);
  if (!data_size) return fail("lab up", data_size.error());
  up.data_size = *data_size;
  util::ProgressLine line(ctx.style);
  // Another clusterctl creating or removing this lab (lab/lock.h): said on stderr, terminal or
  // not, since the wait may last seconds.
  up.waiting = [&line](std::string_view text) {
    line.clear();
    fmt::print(stderr, "clusterctl lab up: {}\n", text);
  };
  auto start = std::chrono::steady_clock::now();
  remote::LocalExecutor local("local");
  auto lab = lab::lab_up(local, up, [&line](std::string_view text) { line.update(text); });
  line.clear();
  if (!lab) return fail("lab up", lab.error());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (ctx.style.json) {
    fmt::print("{}", lab::lab_json_text(*lab));
    return ExitCode::kOk;
  }
  const auto& s = ctx.style;
  fmt::print("lab '{}' is {} in {:.1f} s: {}, {} ({}), management subnet {}\n", name,
             util::green(s, "up"), seconds, util::plural(lab->hosts.size(), "host", "hosts"),
             util::plural(lab->cables.size(), "cable", "cables"), lab->topology, lab->subnet);
  fmt::print("  directory  {}\n", lab->dir);
  fmt::print("  data       {}: each host's own {} tmpfs\n", lab->data_dir,
             lab::format_data_size(lab->data_size));
  fmt::print("             here at {}\n", lab::host_data_dir(name, "hN").string());
  fmt::print("  try        clusterctl --lab {} exec --hosts all -- uname -n\n", name);
  fmt::print("             ssh -F {}/ssh_config h1\n", lab->dir);
  fmt::print("  remove     clusterctl lab down --name {}\n", name);
  return ExitCode::kOk;
}

// The jobs that clusterctl launched on lab `name` (their records, as `jobs` reads them: the
// lab's name, or its inventory or SSH config). Those that still run: `lab down` ends them with
// their hosts, so it names them first. A warning, never a question: a CI cleanup trap must go on.
std::vector<launch::JobRecord> lab_jobs(const std::string& name, const LabOptions& o) {
  if (!lab::sys::is_root()) return {};  // lab_down refuses, nothing is removed
  auto dir = lab::resolve_lab_dir(name, o.dir);
  if (!dir) return {};
  const lab::OwnerFacts facts = lab::gather_owner_facts(name, *dir);
  if (!facts.machine_has_lab ||
      !lab::check_down_allowed(facts, lab::classify(facts), o.other_state)) {
    return {};  // nothing to tear down, or lab_down refuses it
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(launch::jobs_dir(), ec)) return {};  // no job ever ran
  auto jobs = launch::list_jobs();
  if (!jobs) return {};
  const lab::LabFiles files{*dir};
  std::vector<launch::JobRecord> out;
  for (const auto& j : *jobs) {
    const bool on_lab = j.lab == name ||
                        (!j.inventory.empty() && j.inventory == files.inventory().string()) ||
                        (!j.ssh_config.empty() && j.ssh_config == files.ssh_config().string());
    if (!on_lab) continue;
    out.push_back(j);
    if (j.live_state() != launch::JobState::kRunning) continue;
    fmt::print(stderr,
               "clusterctl lab down: warning: job {} ({} rank{}, launcher pid {}) is running on "
               "lab '{}': taking the lab down ends it with its hosts (`clusterctl stop {}` "
               "first ends it cleanly)\n",
               j.id, j.world_size, j.world_size == 1 ? "" : "s", j.pid, name, j.id);
  }
  return out;
}

// What the lab's jobs left on its hosts, which share this machine's /tmp: once the lab is
// gone, each job's launcher loses its hosts and ends (waited for, briefly) without reaching
// them to clean up; their job directories are then removed here by the janitor that `jobs
// --gc` runs (launch::sweep_leftovers: only directories that are this user's real directories,
// whose launcher record names a launcher that is gone, and here only of these jobs' ids).
// What is left, and the records kept, are said with the command that deals with them.
void clean_lab_jobs(const std::string& name, const std::vector<launch::JobRecord>& jobs) {
  if (jobs.empty()) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  auto running = [&] {
    std::vector<const launch::JobRecord*> out;
    for (const auto& j : jobs) {
      if (j.live_state() == launch::JobState::kRunning) out.push_back(&j);
    }
    return out;
  };
  while (!running().empty() && std::chrono::steady_clock::now() < deadline &&
         !util::interrupted()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::set<std::string, std::less<>> ids;
  for (const auto& j : jobs) ids.insert(j.id);
  remote::LocalExecutor local("local");
  const auto removed = launch::sweep_leftovers(
      local, std::chrono::seconds(15), nullptr,
      [&](std::string_view id) { return ids.find(id) != ids.end(); });
  if (!removed.empty()) {
    std::vector<std::string> dirs;
    for (const auto& r : removed) dirs.push_back(r.substr(r.find(':') + 1));
    fmt::print("removed {} of the jobs of lab '{}': {}\n",
               util::plural(removed.size(), "job directory", "job directories"), name,
               fmt::join(dirs, ", "));
  }
  for (const auto* j : running()) {
    fmt::print(stderr,
               "clusterctl lab down: job {}'s launcher (pid {}) still runs: once it ends, "
               "`clusterctl jobs --gc` removes the job directories it leaves in /tmp\n",
               j->id, j->pid);
  }
  // The records of the jobs that ran until now stay (their logs and course): said, since the
  // lab they name is gone.
  const auto ended_now = std::count_if(jobs.begin(), jobs.end(), [](const launch::JobRecord& j) {
    return j.state == launch::JobState::kRunning;  // as recorded when lab down began
  });
  if (ended_now == 0) return;
  fmt::print(stderr,
             "clusterctl lab down: kept {} of lab '{}' (`clusterctl jobs` lists them; "
             "`clusterctl jobs --forget-ended` drops those that ended)\n",
             util::plural(static_cast<std::size_t>(ended_now), "job record", "job records"),
             name);
}

ExitCode run_down(const LabOptions& o, Context& ctx) {
  const std::string name = lab_name(o, ctx);
  const std::vector<launch::JobRecord> jobs = lab_jobs(name, o);
  remote::LocalExecutor local("local");
  auto report = lab::lab_down(local, name, o.dir, o.other_state, [](std::string_view text) {
    fmt::print(stderr, "clusterctl lab down: {}\n", text);
  });
  if (!report) return fail("lab down", report.error());
  if (!report->anything()) {
    // Nothing of that name is on this machine: a lab taken down before, or a name that never
    // was one (a typo, `--name nu77` for nu7). Said plainly, with the labs there are, and
    // still exit 0: a script's `lab down` may run when nothing is up.
    const OtherLabs labs = other_labs(name);
    fmt::print("lab '{}': nothing to remove: this machine has no lab of that name{}; {}\n", name,
               labs.did_you_mean, labs.listed);
  } else {
    fmt::print(
        "lab '{}' is down: stopped {} processes; removed {} namespaces, {} interfaces, "
        "{} mounts, {} files\n",
        name, report->processes, report->namespaces, report->links, report->mounts, report->files);
    clean_lab_jobs(name, jobs);
  }
  for (const auto& k : report->kept) {
    fmt::print(stderr, "clusterctl lab down: kept {}\n", k);
  }
  return ExitCode::kOk;
}

// The data directories of `lab status`: the common path, then each host's own in this
// namespace. Nothing for a lab made before they existed.
void print_data_dirs(const lab::LabStatus& status, const util::OutputStyle& s) {
  if (status.lab.data_dir.empty()) return;
  fmt::print("data {} on each host, its own {} tmpfs; here:\n", status.lab.data_dir,
             lab::format_data_size(status.lab.data_size));
  for (const auto& h : status.hosts) {
    fmt::print("  {:<5} {}{}\n", h.host.name, h.host.data_dir,
               h.data_mounted ? "" : "  " + util::red(s, "not mounted"));
  }
}

ExitCode run_status(const LabOptions& o, Context& ctx) {
  const std::string name = lab_name(o, ctx);
  const bool json = o.json || ctx.global.json;
  const util::OutputStyle s = json ? util::detect_output_style(true) : ctx.style;
  auto status = lab::lab_status(name, o.dir);
  if (!status && status.error().code == ExitCode::kCheckFailed && json) {
    // No such lab (1, not a usage error): --json still answers, with the reason on stderr.
    nlohmann::ordered_json out = {{"name", name},
                                  {"state", "none"},
                                  {"holder_pid", nullptr},
                                  {"ok", false},
                                  {"hosts", nlohmann::ordered_json::array()}};
    fmt::print("{}\n", util::json_text(out, 2));
  }
  if (!status && status.error().code == ExitCode::kCheckFailed) {
    // No lab of that name (lab::status_error): name the labs there are, as for `--lab NAME`
    // (no_lab_error), so that `lab status` without --name, or with a typo, is no all-clear.
    util::Error e = status.error();
    const OtherLabs labs = other_labs(name);
    e.message += fmt::format("; {}{}", labs.listed, labs.did_you_mean);
    if (!labs.names.empty()) {
      std::string look = util::closest_match(name, labs.names);
      if (look.empty()) look = labs.names.size() == 1 ? labs.names.front() : "NAME";
      e.message += fmt::format(": `clusterctl lab status --name {}`", look);
    }
    return fail("lab status", e);
  }
  if (!status) return fail("lab status", status.error());
  using Json = nlohmann::ordered_json;
  // Who creates or removes it now (lock.h), by the kernel's pid; null when no one does.
  const Json holder_pid = status->busy && status->busy->pid ? Json(*status->busy->pid) : Json();
  if (!status->recorded) {
    // Another clusterctl holds the lab's lock and its lab.json is not there (yet): the lab is
    // being created (or removed), not "none".
    if (json) {
      const Json out = {{"name", name},
                        {"state", status->lab.state},
                        {"holder_pid", holder_pid},
                        {"ok", false},
                        {"hosts", Json::array()}};
      fmt::print("{}\n", util::json_text(out, 2));
    }
    return fail("lab status",
                {ExitCode::kCheckFailed,
                 fmt::format("{}: run `clusterctl lab status --name {}` again once it is done",
                             status->busy->message, name)});
  }
  const ExitCode rc = status->all_up() ? ExitCode::kOk : ExitCode::kCheckFailed;
  // The state of lab.json, or, while another clusterctl works on the lab, what it does.
  const std::string state = status->busy ? status->busy->state : status->lab.state;
  auto ports = ports_by_host(status->lab);
  if (json) {
    Json hosts = Json::array();
    for (const auto& h : status->hosts) {
      Json p = Json::array();
      for (const auto& pp : ports[h.host.name]) {
        p.push_back({{"port", pp.port}, {"peer", pp.peer}, {"peer_port", pp.peer_port}});
      }
      hosts.push_back({{"name", h.host.name},
                       {"namespace", h.host.netns},
                       {"address", h.host.address},
                       {"namespace_present", h.netns_present},
                       {"sshd", h.sshd_running ? "running" : "down"},
                       {"sshd_pid", h.sshd_pid},
                       {"ports", p},
                       {"free_ports", h.host.free_ports},
                       {"data_dir", h.host.data_dir},
                       {"data_mounted", h.data_mounted}});
    }
    Json out = {{"name", status->lab.name},
                {"state", state},
                {"holder_pid", holder_pid},
                {"dir", status->dir.string()},
                {"topology", status->lab.topology},
                {"subnet", status->lab.subnet},
                {"bridge", status->lab.bridge},
                {"data_dir", status->lab.data_dir},
                {"data_size", status->lab.data_size},
                {"ok", rc == ExitCode::kOk},
                {"hosts", hosts}};
    fmt::print("{}\n", util::json_text(out, 2));
    return rc;
  }
  fmt::print("lab '{}' ({}, {}, subnet {}, {})\n", name, state, status->lab.topology,
             status->lab.subnet, status->dir.string());
  fmt::print("{:<5} {:<22} {:<15} {:<16} {}\n", "HOST", "NAMESPACE", "ADDRESS", "SSHD", "PORTS");
  for (const auto& h : status->hosts) {
    std::string sshd = h.sshd_running    ? fmt::format("running {}", h.sshd_pid)
                       : h.netns_present ? std::string("down")
                                         : std::string("down (no netns)");
    std::vector<std::string> p;
    for (const auto& pp : ports[h.host.name]) {
      p.push_back(fmt::format("{}>{}:{}", pp.port, pp.peer, pp.peer_port));
    }
    for (const auto& free : h.host.free_ports) p.push_back(fmt::format("{}>free", free));
    // Pad before colouring: escape codes have no width.
    std::string padded = fmt::format("{:<16}", sshd);
    fmt::print("{:<5} {:<22} {:<15} {} {}\n", h.host.name, h.host.netns, h.host.address,
               h.sshd_running ? util::green(s, padded) : util::red(s, padded), fmt::join(p, " "));
  }
  print_data_dirs(*status, s);
  if (rc != ExitCode::kOk && status->busy) {
    fmt::print(stderr, "clusterctl lab status: {}: run it again once that is done\n",
               status->busy->message);
  } else if (rc != ExitCode::kOk) {
    fmt::print(stderr,
               "clusterctl lab status: some hosts are down; `clusterctl lab down --name {0}` "
               "then `clusterctl lab up --name {0}` rebuilds the lab\n",
               name);
  }
  return rc;
}

}  // namespace

// `lab list`: the labs of this state directory, one line each (name, state, hosts, how many
// sshd run), as `lab status` reads them; exit 0 whatever their state (`lab status --name`
// checks one), also with none.
ExitCode run_list(const LabOptions& o, Context& ctx) {
  const bool json = o.json || ctx.global.json;
  const std::vector<std::string> names = existing_labs();
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  std::vector<std::array<std::string, 4>> rows;
  for (const auto& name : names) {
    auto st = lab::lab_status(name, {});
    if (!st) {
      // A directory that is no (whole) lab of this state directory: said, not skipped.
      out.push_back({{"name", name},
                     {"state", "unknown"},
                     {"hosts", nullptr},
                     {"sshd_running", nullptr},
                     {"error", st.error().message}});
      rows.push_back({name, "unknown", "-", st.error().message});
      continue;
    }
    const std::string state = st->busy ? st->busy->state : st->lab.state;
    const auto running = std::count_if(st->hosts.begin(), st->hosts.end(),
                                       [](const lab::HostStatus& h) { return h.sshd_running; });
    out.push_back(
        {{"name", name}, {"state", state}, {"hosts", st->hosts.size()}, {"sshd_running", running}});
    rows.push_back({name, state, std::to_string(st->hosts.size()),
                    fmt::format("{} of {} sshd running", running, st->hosts.size())});
  }
  if (json) {
    fmt::print("{}\n", util::json_text(out, 2));
    return ExitCode::kOk;
  }
  if (names.empty()) {
    fmt::print("no labs (in {}): `clusterctl lab up --name NAME` creates one\n",
               (util::state_dir() / "labs").string());
    return ExitCode::kOk;
  }
  std::size_t w = 4;
  for (const auto& r : rows) w = std::max(w, r[0].size());
  fmt::print("{:<{}}  {:<10}  {:>5}  {}\n", "NAME", w, "STATE", "HOSTS", "SSHD");
  for (const auto& r : rows) fmt::print("{:<{}}  {:<10}  {:>5}  {}\n", r[0], w, r[1], r[2], r[3]);
  return ExitCode::kOk;
}

void add_lab_command(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<LabOptions>();
  CLI::App* lab = app.add_subcommand(
      "lab",
      "An emulated cluster on this machine: hosts are network namespaces with sshd, "
      "cables are veth pairs (needs root)");
  lab->require_subcommand(0, 1);  // none: main() names the missing subcommand

  CLI::App* up = lab->add_subcommand(
      "up",
      "Create a lab: hosts h1..hN (network namespaces with hostname hN, en0 on a bridge, sshd), "
      "one veth per cable named tb1, tb2, ... per host in receptacle order (ascending peer "
      "host; parallel cables in listing order)");
  add_name_and_dir(up, *opts);
  opts->hosts_option = up->add_option("--hosts", opts->hosts, "Number of hosts, 1..16 (default 4)")
                           ->check(whole_number(lab::kMinHosts, lab::kMaxHosts));
  up->add_option("--topology", opts->topology,
                 "mesh (every pair cabled), ring (h1-h2-...-hN-h1), or a YAML file: "
                 "\"cables: [[h1, h2], [h2, h3]]\" with optional \"hosts: N\" (default mesh)")
      ->check(one_of(lab::topology_names(), OrFile::kYes));
  up->add_option("--omit", opts->omit, "Leave out one cable hA-hB of the topology (repeatable)")
      ->type_name("hA-hB");
  up->add_option("--extra", opts->extra,
                 "Add one cable hA-hB, a second parallel one if it exists (repeatable)")
      ->type_name("hA-hB");
  up->add_option("--data-size", opts->data_size,
                 "Size of each host's data directory, a tmpfs seen on every host at "
                 "/run/clusterctl/labs/NAME/data (RAM is used only for what is written): bytes, "
                 "or with K, M, G, T (default 8G)")
      ->type_name("SIZE");
  up->add_option("--receptacles", opts->receptacles,
                 "Ports per host (default: hosts - 1, enough for a full mesh); ports without a "
                 "cable are free: up, no carrier")
      ->check(whole_number(1, 64));
  up->callback([&ctx, opts] { ctx.action = [&ctx, opts] { return run_up(*opts, ctx); }; });

  CLI::App* down = lab->add_subcommand(
      "down",
      "Remove a lab: its processes, namespaces, interfaces and files (safe to repeat; also "
      "cleans up after an interrupted `lab up`)");
  add_name_and_dir(down, *opts);
  down->add_flag("--other-state", opts->other_state,
                 "Also tear down a lab that `lab up` made for another lab directory (another "
                 "XDG_STATE_HOME, --dir or user), which is refused without it: its processes, "
                 "namespaces, interfaces, mounts and /run files; that directory's files are "
                 "kept");
  down->callback([&ctx, opts] { ctx.action = [&ctx, opts] { return run_down(*opts, ctx); }; });

  CLI::App* status = lab->add_subcommand(
      "status",
      "Show a lab's hosts: namespace, address, sshd, ports. Exit 0 when every sshd runs, 1 when "
      "some is down or no such lab runs (it names the `lab up` that starts one)");
  add_name_and_dir(status, *opts);
  status->add_flag("--json", opts->json, "Machine-readable output");
  status->callback([&ctx, opts] { ctx.action = [&ctx, opts] { return run_status(*opts, ctx); }; });

  CLI::App* list = lab->add_subcommand(
      "list",
      "List the labs of this state directory: name, state, hosts and how many of their sshd "
      "run (exit 0, also with none; `lab status --name NAME` checks one)");
  list->add_flag("--json", opts->json, "Machine-readable output");
  list->callback([&ctx, opts] { ctx.action = [&ctx, opts] { return run_list(*opts, ctx); }; });
}

}  // namespace cc::cli
