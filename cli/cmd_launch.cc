// `clusterctl launch JOB.yaml`: start a job on every host, stream its output, end it cleanly
// (launch/runner.h). The exit codes are README's "Launching a job" list: 0 only when every rank
// exited 0; 4 when the job failed once started (summary table on stderr), also when rank 0
// could not listen on a coordinator port the check found free; 130 after Ctrl-C; 2 for a bad
// job file, a missing local file it needs (cluster file, upload, secret) or a host it names
// that the inventory (or SSH config) does not know, all reported at once, and for what launch
// needs on this machine (mpirun, the log and jobs directories, --ranks); 3 when a known host
// cannot be set up; 1 when a check before the start fails: the hostfile against the cabling, a
// preflight (its own code: 1, or 3), a cable the ranks route over that is down
// (check_routed_cables), rank 0's coordinator port held (runner.h). With --detach, every check
// that needs no host set up runs before the job id is printed, with the same codes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "cli/cable_watch.h"
#include "cli/cluster_source.h"
#include "cli/cmd_health.h"
#include "cli/context.h"
#include "cli/hosts.h"
#include "cli/options.h"
#include "discovery/cluster_state.h"
#include "discovery/fix_command.h"
#include "discovery/probe.h"
#include "launch/detach.h"
#include "launch/job_spec.h"
#include "launch/job_state.h"
#include "launch/local_needs.h"
#include "launch/output.h"
#include "launch/placement.h"
#include "launch/rank_env.h"
#include "launch/restart.h"
#include "launch/runner.h"
#include "launch/wrapper.h"
#include "provision/hostfile.h"
#include "provision/mlx_hostfile.h"
#include "remote/fan_out.h"
#include "remote/inventory.h"
#include "remote/local_executor.h"
#include "remote/quote.h"
#include "topology/checks.h"
#include "topology/report.h"
#include "util/address.h"
#include "util/atomic_file.h"
#include "util/clock.h"
#include "util/interrupt.h"
#include "util/process.h"
#include "util/text.h"

#include <unistd.h>

namespace cc::cli {
namespace {

using util::ExitCode;

struct LaunchCli {
  std::string job_file;
  bool no_prefix = false;
  std::string ranks;  // "0,2"
  bool detach = false;
  bool unchecked_hostfile = false;  // --unchecked-hostfile: no comparison with the cabling
};

// The job's placement (launch/placement.h) and the options make_executors gets for its hosts:
// a job's `cluster: lab:NAME` or `inventory:FILE` selects that inventory, as --lab / --inventory
// would (--lab on the command line wins over the job's lab); a `cluster: cluster.json` discovered
// on a lab selects that lab (options_for_state: another --lab is an error naming both).
struct Placement : launch::Placement {
  GlobalOptions global;
};

util::Result<Placement> place(const GlobalOptions& g, const launch::JobSpec& spec) {
  Placement p;
  p.global = g;
  using Kind = launch::ClusterRef::Kind;
  if (spec.hosts.empty() &&
      (spec.cluster->kind == Kind::kLab || spec.cluster->kind == Kind::kInventory)) {
    p.global.lab = spec.cluster->kind == Kind::kLab ? spec.cluster->value : "";
    if (spec.cluster->kind == Kind::kLab && !g.lab.empty() && g.lab != spec.cluster->value) {
      // The command line names the lab to use (templates say lab:default).
      fmt::print(stderr, "note: --lab {} replaces the job's cluster: {}\n", g.lab,
                 spec.cluster->as_written());
      p.global.lab = g.lab;
    }
    p.global.inventory = spec.cluster->kind == Kind::kInventory ? spec.cluster->value : "";
  }
  // A cluster state names its hosts itself, and may name the lab that reaches them: --lab
  // (CLUSTERCTL_LAB) is judged against that lab first (options_for_state, health's words),
  // and only then is an inventory that cannot be selected said.
  const bool from_state = spec.hosts.empty() && spec.cluster->kind == Kind::kClusterState;
  std::optional<util::Error> inventory_error;
  auto inventory = [&]() -> util::Result<std::optional<remote::Inventory>> {
    auto inv = selected_inventory(p.global);
    if (inv || !from_state) return inv;
    inventory_error = inv.error();
    return std::optional<remote::Inventory>();
  };
  auto placed = launch::place(spec, inventory, global_words(p.global));
  if (!placed) return placed.error();
  static_cast<launch::Placement&>(p) = std::move(*placed);
  if (p.state && spec.cluster && spec.cluster->kind == Kind::kClusterState) {
    // `cluster: cluster.json` discovered on a lab: its hosts are reached through that lab.
    auto resolved = options_for_state(g, *p.state, spec.cluster->value);
    if (!resolved) return resolved.error();
    p.global = std::move(*resolved);
  }
  if (inventory_error) return *inventory_error;
  // A host known by no address (`hosts:` by SSH name, a hostfile's `ssh`): the ranks are given
  // the host name this machine's ssh reaches (the SSH config's HostName), never an alias of
  // the operator's SSH config, which no host can look up (the coordinator of `hosts: [h1, h2]`
  // with `Host h1 / HostName 10.0.0.1` was `h1:32323`: "cannot resolve 'h1'" on every rank).
  for (launch::LaunchHost& h : p.hosts) {
    if (!h.address.empty()) continue;
    const std::string reached = reached_host_name(p.global, h.ssh.empty() ? h.name : h.ssh);
    if (reached != h.name) h.address = reached;
  }
  // Rank 0's host address is the coordinator's: not one the other hosts cannot reach
  // (launch::check_coordinator). The mlx jaccl runtimes take it from their hostfile, which
  // refuses such addresses; mlx-ring gives rank 0's host address to libclustercomm programs;
  // mpi and none have none.
  if (spec.runtime == launch::Runtime::kClusterComm || spec.runtime == launch::Runtime::kMlxRing) {
    if (auto st = launch::check_coordinator(p.hosts); !st) return st.error();
  }
  return p;
}

// The job's preflight checks, in order, before anything is uploaded or started. verify-mesh
// discovers the job's hosts live (as `clusterctl verify-mesh --hosts ...`) and needs the full
// mesh; health and health-quick run `clusterctl health [--quick]` against the job's cluster
// state file when it has one (its cables and network plan are then what is expected), else on
// its hosts discovered live, and need every check to pass (warnings allowed).
util::Status preflight(const Context& ctx, const launch::JobSpec& spec, const Placement& p) {
  for (launch::Preflight check : spec.preflight) {
    Context c = ctx;
    c.global = p.global;
    ClusterSource src;
    for (const auto& n : p.names) src.hosts += (src.hosts.empty() ? "" : ",") + n;
    if (check != launch::Preflight::kVerifyMesh) {
      const bool quick = check == launch::Preflight::kHealthQuick;
      if (spec.cluster && spec.cluster->kind == launch::ClusterRef::Kind::kClusterState) {
        src.hosts.clear();
        src.state_file = spec.cluster->value;
      }
      // The same check by hand, runnable as printed: the job's cluster with its lab.
      discovery::FixCommand again;
      again.global = global_words(c.global);
      again.state_file = src.state_file;
      again.hosts = src.hosts;
      const std::string health = again.command("health", quick ? "--quick" : "");
      fmt::print(stderr, "clusterctl launch: preflight {}: `{}`\n", launch::to_string(check),
                 health);
      std::fflush(stderr);
      const ExitCode code = run_health_check(c, src, quick, "launch");
      util::flush_output(stdout);
      if (code == ExitCode::kInterrupted || util::interrupted()) {
        // Not a failed check: the report above says what was cut short.
        return util::interrupted_error(
            fmt::format(" during preflight {}; nothing was started", launch::to_string(check)));
      }
      if (code != ExitCode::kOk) {
        return util::error(code, fmt::format("preflight {} failed (exit {}; report above): "
                                             "nothing was started; fix what it reports (run "
                                             "`{}` to check again) or remove "
                                             "{} from `preflight:` in {}",
                                             launch::to_string(check), util::to_int(code),
                                             health, launch::to_string(check),
                                             spec.source.string()));
      }
      fmt::print(stderr, "clusterctl launch: preflight {}: every check passed\n",
                 launch::to_string(check));
      continue;
    }
    auto state = obtain_cluster_state(c, src);
    if (util::interrupted()) {  // a partial discovery is no mesh to judge
      return util::interrupted_error(
          " while discovering the hosts (preflight verify-mesh); nothing was started");
    }
    if (!state) return state.error();
    const topology::VerifyReport report = topology::verify_mesh(*state, {});
    if (ExitCode code = topology::exit_code(report); code != ExitCode::kOk) {
      fmt::print(stderr, "{}", topology::render_text(report, ctx.style));
      return util::error(code, fmt::format("preflight verify-mesh failed (above): nothing was "
                                           "started; fix the cabling or remove verify-mesh from "
                                           "`preflight:` in {}",
                                           spec.source.string()));
    }
    fmt::print(stderr, "clusterctl launch: preflight verify-mesh: {}, full mesh\n",
               util::plural(state->hosts.size(), "host", "hosts"));
  }
  return {};
}

// `cluster: cluster.json` with a network plan: each pair's ranks talk over the pair's cable
// (launch::routed_cables, CLUSTERCOMM_PEER_ADDRS). A cable that is down (a port set down, a
// cable pulled) would leave a rank connecting to its peer's cable address until the connect
// timeout and then guessing at a firewall; so before any rank starts, each host at an end of
// such a cable is probed once, all at once (discovery's host probe: one round trip, as `health
// --quick`), and each cable judged in health's own words (topology::cable_link). A host that
// does not answer is left to the set-up that follows (exit 3, named there). Not with a
// `preflight:` health check, which has just checked every cable. Errors: kCheckFailed naming
// each cable that is down, its host and port, and the fix.
util::Status check_routed_cables(const Context& ctx, const launch::JobSpec& spec,
                                 const Placement& p) {
  if (!p.state || !spec.cluster || spec.cluster->kind != launch::ClusterRef::Kind::kClusterState ||
      spec.runtime != launch::Runtime::kClusterComm) {
    return {};
  }
  for (launch::Preflight check : spec.preflight) {
    if (check != launch::Preflight::kVerifyMesh) return {};
  }
  std::vector<std::string> job_hosts;
  for (const auto& h : p.hosts) job_hosts.push_back(h.name);
  const auto [cables, hosts, names] =
      job_cables(launch::routed_cables(*p.state), job_hosts, p.names);
  if (cables.empty()) return {};
  auto execs = make_executors(p.global, fmt::format("{}", fmt::join(names, ",")));
  if (!execs) return {};  // the set-up names what is wrong with reaching them
  std::vector<remote::Executor*> ptrs;
  for (auto& e : *execs) ptrs.push_back(e.get());
  const std::vector<std::string> down =
      down_cable_lines(ptrs, hosts, cables, p.global, std::chrono::seconds(30), ctx.style);
  if (util::interrupted()) {
    return util::interrupted_error(" while checking the job's cables; nothing was started");
  }
  if (down.empty()) return {};
  discovery::FixCommand again;
  again.global = global_words(p.global);
  again.state_file = spec.cluster->value;
  return util::error(
      ExitCode::kCheckFailed,
      fmt::format("{}\nthe job's ranks route over these cables (`cluster: {}` in {}: its network "
                  "plan), and ranks on their hosts could not reach each other: nothing was "
                  "started. After the fix, `{}` checks every cable",
                  fmt::join(down, "\n"), spec.cluster->as_written(), spec.source.string(),
                  again.command("health", "--quick")));
}

// `cluster: hostfile:FILE`: the hostfile's rank order and devices must match the cabling its
// hosts report (MLX would otherwise run N groups of one without a word), so its hosts are
// discovered first and compared (provision::check_against). Nothing is started on a mismatch.
util::Status check_hostfile_cabling(const Context& ctx, const launch::JobSpec& spec,
                                    const Placement& p,
                                    std::optional<discovery::ClusterState>* seen) {
  if (!spec.cluster || spec.cluster->kind != launch::ClusterRef::Kind::kMlxHostfile || !p.mlx) {
    return {};
  }
  Context c = ctx;
  c.global = p.global;
  ClusterSource src;
  src.hostfile = spec.cluster->value;
  auto state = obtain_cluster_state(c, src);
  if (util::interrupted()) {  // a partial discovery is no cabling to compare the hostfile with
    return util::interrupted_error(
        " while discovering the hostfile's hosts; nothing was started");
  }
  if (!state) return state.error();
  *seen = *state;  // its cables are watched while the job runs
  // A file without "backend" is run as the job's runtime says: checked as that one too (the
  // ring's addresses against its cables).
  provision::MlxHostfile hf = *p.mlx;
  if (const std::string_view rt = launch::to_string(spec.runtime);
      hf.backend.empty() && rt.starts_with("mlx-")) {
    hf.backend = std::string(rt.substr(4));
  }
  // First what no rewrite of the file mends: an address its host does not have, a cable down.
  if (auto foreign = provision::foreign_addresses(hf, *state); !foreign.empty()) {
    return util::error(ExitCode::kCheckFailed,
                       fmt::format("{}\n{}: `cluster: {}`: MLX would fail on these addresses "
                                   "(\"Couldn't bind socket\"): nothing was started; write the "
                                   "hosts' own addresses in {}",
                                   fmt::join(foreign, "\n"), spec.source.string(),
                                   spec.cluster->as_written(), spec.cluster->value));
  }
  if (auto down = provision::down_cables(hf, *state); !down.empty()) {
    return util::error(
        ExitCode::kCheckFailed,
        fmt::format("{}\nthe job's ranks use these cables (`cluster: {}` in {}), and ranks on "
                    "their hosts could not reach each other: nothing was started. The hostfile "
                    "needs no change: fix the cabling and launch again",
                    fmt::join(down, "\n"), spec.cluster->as_written(), spec.source.string()));
  }
  // The one fix, runnable as printed: the hosts' lab, this file's hosts, the job's runtime, and
  // a new path (-o the file it reads is refused, as for every input: README, "Files").
  const std::string global = global_words(p.global);
  const std::filesystem::path file(spec.cluster->value);
  const std::string fresh =
      (file.parent_path() / (file.stem().string() + ".new" + file.extension().string())).string();
  const std::string rewrite = fmt::format(
      "clusterctl{}{} hostfile --hostfile {} --format {} -o {}", global.empty() ? "" : " ", global,
      remote::shell_quote_arg(spec.cluster->value), launch::to_string(spec.runtime),
      remote::shell_quote_arg(fresh));
  if (auto st = provision::check_against(hf, *state, fix_command(p.global, src, *state), rewrite);
      !st) {
    return util::error(
        st.error().code,
        fmt::format("{}: the hostfile {} does not match the cabling its hosts report:\n{}, then "
                    "name {} in `cluster:`; nothing was started",
                    spec.source.string(), spec.cluster->value, st.error().message, fresh));
  }
  return {};
}

// The job's hosts that cannot be tried (host_problems, the pre-check every command that acts on
// hosts shares): an unknown name (with its "did you mean") or a bad destination is a mistake in
// the job file (or in --lab / --inventory / -F, or the inventory), each at the place of the job
// file that names it: its `hosts:` entry, else its `cluster:`. Empty: every host can be tried.
util::Result<std::vector<std::string>> unknown_hosts(const launch::JobSpec& spec,
                                                     const Placement& p) {
  auto each = host_problems_each(p.global, p.names);
  if (!each) return each.error();
  const bool listed = !spec.hosts.empty() || !spec.cluster;
  std::vector<std::string> out;
  for (size_t i = 0; i < each->size(); ++i) {
    if ((*each)[i].empty()) continue;
    int line = 0, column = 0;
    if (listed && i < spec.host_places.size()) {
      std::tie(line, column) = spec.host_places[i];
    } else if (!listed) {
      line = spec.cluster->line;
      column = spec.cluster->column;
    }
    const std::string where = launch::job_file_at(spec, line, column);
    const std::string what =
        listed ? std::string("`hosts:`") : fmt::format("`cluster: {}`", spec.cluster->as_written());
    out.push_back(
        fmt::format("{}: {} names a host clusterctl does not know: {}; fix the name "
                    "or choose the cluster that has it (--lab NAME, --inventory FILE, "
                    "-F SSH_CONFIG)",
                    where, what, (*each)[i]));
  }
  return out;
}

bool on_path(const std::string& program) {
  const char* env = std::getenv("PATH");
  std::string_view path = env != nullptr ? env : "";
  while (!path.empty()) {
    size_t colon = path.find(':');
    std::string dir(path.substr(0, colon));
    path = colon == std::string_view::npos ? std::string_view() : path.substr(colon + 1);
    if (dir.empty()) dir = ".";
    if (::access((std::filesystem::path(dir) / program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// runtime mpi: mpirun runs here and reaches the hosts over ssh with the options clusterctl's
// own connections use (launch/mpi.h).
util::Result<launch::MpiLaunch> mpi_settings(const launch::JobSpec& spec, const Placement& p) {
  if (!on_path("mpirun")) {
    return util::error(ExitCode::kUsage,
                       fmt::format("{}: runtime mpi runs mpirun on this machine, and there is no "
                                   "mpirun on PATH: install Open MPI here, the same version as on "
                                   "the hosts (Debian: apt-get install openmpi-bin; macOS: brew "
                                   "install open-mpi)",
                                   spec.source.string()));
  }
  // Open MPI refuses some names in its hostfile (an IPv6 address, a '_'): mpirun would stop
  // with its own parse error after every host was set up.
  std::vector<std::string> bad;
  for (const auto& h : p.hosts) {
    const std::string& dest = h.ssh.empty() ? h.name : h.ssh;
    if (auto why = provision::open_mpi_host_problem(dest)) {
      bad.push_back(fmt::format("host {}: {}: {}", h.name, *why,
                                provision::open_mpi_host_fix(h.name, dest)));
    }
  }
  if (!bad.empty()) {
    return util::error(
        ExitCode::kUsage,
        fmt::format("{}: runtime mpi: {} of {} {} a name or SSH destination that Open MPI's "
                    "mpirun does not take in its hostfile (letters, digits, '.' and '-', after "
                    "an optional USER@), so it would stop before any rank starts; or choose a "
                    "runtime that does not run mpirun (clustercomm):\n  {}",
                    spec.source.string(), bad.size(), p.hosts.size(),
                    bad.size() == 1 ? "hosts has" : "hosts have", fmt::join(bad, "\n  ")));
  }
  auto inv = selected_inventory(p.global);
  if (!inv) return inv.error();
  std::string config = p.global.ssh_config;
  std::string known_hosts;
  if (*inv) {
    if (config.empty() && (*inv)->ssh_config) config = (*inv)->ssh_config->string();
    if ((*inv)->known_hosts) known_hosts = (*inv)->known_hosts->string();
  }
  for (const std::string* path : {&config, &known_hosts}) {
    if (path->find_first_of(" \t\n'\"") != std::string::npos) {
      return util::error(ExitCode::kUsage,
                         fmt::format("runtime mpi: mpirun cannot be given the ssh file '{}' (Open "
                                     "MPI splits its ssh command at spaces): move it to a path "
                                     "without spaces or quotes",
                                     *path));
    }
  }
  launch::MpiLaunch m;
  m.rsh_agent = launch::mpi_rsh_agent(config, known_hosts);
  m.tcp_include = launch::local_network_of(p.hosts.at(0).address);
  m.run_as_root = ::geteuid() == 0;
  return m;
}

util::Result<std::set<int>> parse_ranks(const std::string& spec, int world) {
  std::set<int> out;
  for (const auto& item : remote::split_host_list(spec)) {
    int r = -1;
    try {
      size_t used = 0;
      r = std::stoi(item, &used);
      if (used != item.size()) r = -1;
    } catch (const std::exception&) {
      r = -1;
    }
    if (r < 0 || r >= world) {
      return util::error(
          ExitCode::kUsage,
          fmt::format("--ranks: '{}' is not a rank of this job (0..{})", item, world - 1));
    }
    out.insert(r);
  }
  return out;
}

std::string new_job_id(const std::string& name) {
  return fmt::format("{}-{}-{}", name, util::utc_compact(std::chrono::system_clock::now()),
                     util::random_hex(3));
}

// The job, checked before anything is recorded, detached, connected or started: the job
// file's own mistakes, then what it needs from this machine (launch/local_needs.h: its cluster
// file, uploads, secrets), then its hosts that cannot be tried (unknown_hosts: found without
// connecting to any), all in one report, each at its FILE:LINE:COLUMN; exit 2 (README "job.yaml").
struct CheckedJob {
  launch::JobSpec spec;
  Placement placement;
};

// The CLUSTERCOMM_* names libclustercomm does not read (launch::unread_clustercomm_name) that
// reach the ranks from elsewhere than the job's env: and secret_env: (parse_job_spec_draft
// warns of those): an MLX hostfile's "envs", set on every rank of an MLX runtime, and this
// shell's environment, which the ranks inherit when every host is `local` (a job of local and
// SSH hosts gives its local ranks only what an SSH session has: no CLUSTERCOMM_*).
std::vector<std::string> clustercomm_env_warnings(const GlobalOptions& g,
                                                  const launch::JobSpec& job,
                                                  const Placement& placement) {
  std::vector<std::string> out;
  if (placement.mlx && launch::is_mlx(job.runtime) && job.cluster &&
      job.cluster->kind == launch::ClusterRef::Kind::kMlxHostfile) {
    out = launch::unread_clustercomm_warnings(
        placement.mlx->envs, fmt::format("{}: warning: \"envs\"", job.cluster->value));
  }
  const bool inherits = !placement.names.empty() &&
                        std::all_of(placement.names.begin(), placement.names.end(),
                                    [&](const std::string& n) { return reached_locally(g, n); });
  if (inherits) {
    for (auto& w : launch::unread_clustercomm_warnings(
             remote::current_environment(),
             "warning: this shell's environment, which the ranks on local inherit")) {
      out.push_back(std::move(w));
    }
  }
  return out;
}

util::Result<CheckedJob> load_checked(const GlobalOptions& g, const std::string& job_file) {
  auto text = util::read_file(job_file);
  if (!text) return text.error();
  launch::JobSpecDraft draft = launch::parse_job_spec_draft(*text, job_file);
  // A file of millions of entries takes seconds to read: a signal then ends it, and what was
  // read so far is not judged.
  if (util::interrupted()) {
    return util::interrupted_error(fmt::format(" while reading {}; nothing was started", job_file));
  }
  // What runs but is most likely not meant (an env value written for a shell), before the job's
  // errors or its start, with --detach too.
  for (const auto& w : draft.warnings) fmt::print(stderr, "{}\n", w);
  const launch::JobSpec& job = draft.job;
  std::vector<util::Error> problems = std::move(draft.errors);
  const launch::LocalProblems local = launch::local_problems(job, global_words(g));
  problems.insert(problems.end(), local.errors.begin(), local.errors.end());
  // The hosts, when the job says where it runs and that place can be read (a missing
  // `cluster:` file is named above).
  std::optional<Placement> placement;
  if (!job.hosts.empty() || (job.cluster && !local.cluster_missing)) {
    auto placed = place(g, job);
    if (!placed) {
      util::Error e = placed.error();
      // (Not when --lab replaces the job's lab: then --lab named it.)
      const bool from_job = job.hosts.empty() && job.cluster->line > 0 &&
                            !(job.cluster->kind == launch::ClusterRef::Kind::kLab &&
                              !g.lab.empty() && g.lab != job.cluster->value);
      if (from_job) {
        // `cluster: FILE` or `lab:NAME` that does not load: the job file line that names it.
        e.message =
            fmt::format("{}:{}:{}: `cluster: {}`: {}", job.source.string(), job.cluster->line,
                        job.cluster->column, job.cluster->as_written(), e.message);
      }
      problems.push_back(std::move(e));
    } else if (auto unknown = unknown_hosts(job, *placed); !unknown) {
      problems.push_back(unknown.error());
    } else {
      for (auto& u : *unknown) problems.push_back({ExitCode::kUsage, std::move(u)});
      placement = std::move(*placed);
      for (const auto& w : clustercomm_env_warnings(g, job, *placement)) {
        fmt::print(stderr, "{}\n", w);
      }
    }
  } else if (local.cluster_missing && job.cluster->kind != launch::ClusterRef::Kind::kInventory) {
    // Which hosts the missing cluster state or hostfile names cannot be known, but they are
    // reached through the inventory the command line selects (--lab, --inventory,
    // CLUSTERCTL_LAB): its hosts' destinations are judged now, so this run names every
    // problem (a HOST:PORT destination, an invalid host name) and the next does not stop
    // again. The inventory's own error (unreadable) is the command line's: said as well.
    if (auto inv = selected_inventory(g); !inv) {
      problems.push_back(inv.error());
    } else if (*inv) {
      std::vector<std::string> names;
      for (const auto& h : (*inv)->hosts) names.push_back(h.name);
      auto each = host_problems(g, names);
      if (!each) {
        problems.push_back(each.error());
      } else {
        for (auto& u : *each) problems.push_back({ExitCode::kUsage, std::move(u)});
      }
    }
  }
  if (problems.empty() && placement) {
    return CheckedJob{std::move(draft.job), std::move(*placement)};
  }
  if (problems.empty()) {
    problems.push_back({ExitCode::kUsage, fmt::format("{}: no hosts", job.source.string())});
  }
  std::string msg;
  ExitCode code = ExitCode::kOk;
  for (const auto& e : problems) {
    msg += (msg.empty() ? "" : "\n") + e.message;
    code = util::worst(code, e.code);
  }
  return util::error(code, msg);
}

ExitCode run_launch(const Context& ctx, const LaunchCli& o) {
  auto checked = load_checked(ctx.global, o.job_file);
  if (!checked && checked.error().code == ExitCode::kInterrupted) {
    fmt::print(stderr, "clusterctl launch: {}\n", checked.error().message);
    return checked.error().code;
  }
  if (!checked) {
    fmt::print(stderr, "{}\nclusterctl launch: nothing was started\n", checked.error().message);
    return checked.error().code;
  }
  auto fail = [](const util::Error& e) {
    fmt::print(stderr, "clusterctl launch: {}\n", e.message);
    return e.code;
  };
  const launch::JobSpec* spec = &checked->spec;
  const Placement* placement = &checked->placement;
  launch::MpiLaunch mpi;
  if (spec->runtime == launch::Runtime::kMpi) {
    auto m = mpi_settings(*spec, *placement);
    if (!m) return fail(m.error());
    mpi = std::move(*m);
  }
  std::optional<discovery::ClusterState> hostfile_state;  // the hostfile's hosts, discovered
  if (!o.unchecked_hostfile) {
    if (auto st = check_hostfile_cabling(ctx, *spec, *placement, &hostfile_state); !st) {
      return fail(st.error());
    }
  }
  if (auto st = preflight(ctx, *spec, *placement); !st) return fail(st.error());
  if (auto st = check_routed_cables(ctx, *spec, *placement); !st) return fail(st.error());
  auto secrets = launch::resolve_secrets(*spec);
  if (!secrets) return fail(secrets.error());

  launch::WorldPlan plan;
  plan.runtime = spec->runtime;
  plan.coordinator_port = spec->coordinator_port;
  plan.ranks_per_host = spec->ranks_per_host;
  plan.hosts = placement->hosts;
  plan.mlx = placement->mlx;
  plan.token = util::random_hex(32);
  plan.coordinator_from = fmt::format("`coordinator_port:` in {} (now {})", spec->source.string(),
                                      spec->coordinator_port);
  plan.env = spec->env;
  plan.secrets = std::move(*secrets);
  if (placement->state && plan.runtime == launch::Runtime::kClusterComm) {
    launch::add_cable_links(plan, *placement->state);  // each pair over its direct cable
  }
  if (auto st = launch::check_world(plan); !st) return fail(st.error());

  launch::OutputOptions out_opts;
  out_opts.prefix = !o.no_prefix;
  out_opts.status_line = ctx.style.progress && !o.detach;
  if (o.detach) {
    out_opts.out = nullptr;
    out_opts.err = nullptr;
  }
  if (!o.ranks.empty()) {
    auto shown = parse_ranks(o.ranks, plan.world_size());
    if (!shown) return fail(shown.error());
    out_opts.shown = std::move(*shown);
  }
  std::vector<std::string> labels;
  for (int r = 0; r < plan.world_size(); ++r) labels.push_back(plan.hosts[plan.host_of(r)].name);
  // Every run has a log directory of its own (LOGS/JOBID, LOGS/latest naming the newest), so
  // two runs of one job, at once or one after the other, never share a file.
  launch::JobRecord rec;
  rec.id = new_job_id(spec->name);
  const std::filesystem::path run_logs = std::filesystem::path(spec->logs) / rec.id;
  auto mux = launch::OutputMux::open(run_logs, labels, out_opts);
  if (!mux) return fail(mux.error());

  rec.name = spec->name;
  rec.job_file = std::filesystem::absolute(o.job_file).lexically_normal().string();
  rec.pid = ::getpid();
  rec.pid_start = util::process_start_time(rec.pid).value_or("");
  const auto started = std::chrono::system_clock::now();
  rec.started_at = util::utc_iso(started);
  rec.started_us =
      std::chrono::duration_cast<std::chrono::microseconds>(started.time_since_epoch()).count();
  rec.logs = std::filesystem::absolute(run_logs).lexically_normal().string();
  rec.world_size = plan.world_size();
  rec.hosts = labels;
  rec.lab = placement->global.lab;  // `jobs --gc` reaches the hosts through it
  // ... and through the inventory and SSH config that reached them (`cluster: inv.yaml`,
  // --inventory, -F), by their absolute paths.
  const auto absolute = [](const std::string& path) {
    return path.empty() ? path : std::filesystem::absolute(path).lexically_normal().string();
  };
  rec.inventory = absolute(placement->global.inventory);
  rec.ssh_config = absolute(placement->global.ssh_config);
  if (o.detach) {
    // Before any thread exists: the child runs the job in its own session, the parent reports.
    // The child starts nothing until the parent has saved the record naming it: a record that
    // cannot be saved ends the child (and removes the run's log directory), so no job runs
    // that `logs` and `stop` cannot find. A fork that fails removes the log directory too.
    auto record_child = [&rec](pid_t child) {
      rec.pid = child;
      rec.pid_start = util::process_start_time(child).value_or("");
      return launch::save_job(rec);
    };
    auto started_child =
        launch::start_in_background([] { return ::fork(); }, record_child, mux->get());
    if (!started_child) return fail(started_child.error());
    if (const pid_t child = *started_child; child > 0) {
      // `LOGS/latest` names a run only once it goes ahead, before this command returns.
      if (auto st = launch::link_latest(run_logs); !st) (*mux)->note(st.error().message);
      fmt::print("{}\n", rec.id);
      fmt::print(stderr,
                 "clusterctl: job {} runs in the background (pid {}); follow it with "
                 "`clusterctl logs {} -f`, end it with `clusterctl stop {}`\n",
                 rec.id, child, rec.id, rec.id);
      return ExitCode::kOk;
    }
    rec.pid = ::getpid();
    rec.pid_start = util::process_start_time(rec.pid).value_or("");
  } else if (auto st = launch::save_job(rec); !st) {
    (*mux)->discard();  // not recorded, never run: no log directory of it either
    return fail(st.error());
  } else if (auto linked = launch::link_latest(run_logs); !linked) {
    // `LOGS/latest` names a run only once it goes ahead (never one removed above).
    (*mux)->note(linked.error().message);
  }

  launch::RunnerOptions ro;
  ro.job_id = rec.id;
  ro.mpi = mpi;
  ro.connect_local = []() -> util::Result<std::unique_ptr<remote::Executor>> {
    return std::unique_ptr<remote::Executor>(std::make_unique<remote::LocalExecutor>("local"));
  };
  ro.output = out_opts;
  launch::OutputMux& out = **mux;
  if (out_opts.status_line) ro.status = [&out](const std::string& line) { out.status(line); };
  launch::ExecutorFactory connect = one_host_connector(placement->global, placement->names);
  out.note(fmt::format("job {}: {} on {}, logs in {}", rec.id,
                       util::plural(static_cast<size_t>(plan.world_size()), "rank", "ranks"),
                       util::plural(plan.hosts.size(), "host", "hosts"), run_logs.string()));
  // A job of `local` and hosts reached by SSH: the ranks here would inherit this shell's whole
  // environment, and the others only what their SSH session has, so a variable set for the
  // launch (OMP_NUM_THREADS=8 clusterctl launch ...) would reach the local ranks alone.
  std::vector<bool> local(placement->names.size(), false);
  for (size_t h = 0; h < local.size(); ++h) {
    local[h] = reached_locally(placement->global, placement->names[h]);
  }
  const auto n_local = static_cast<size_t>(std::count(local.begin(), local.end(), true));
  if (n_local > 0 && n_local < local.size()) {
    std::vector<std::string> dropped;
    auto env = std::make_shared<const std::vector<std::string>>(
        remote::session_environment(remote::current_environment(), &dropped));
    connect = [base = connect, env, local](size_t h)
        -> util::Result<std::unique_ptr<remote::Executor>> {
      if (h < local.size() && local[h]) {
        return std::unique_ptr<remote::Executor>(
            std::make_unique<remote::LocalExecutor>("local", *env));
      }
      return base(h);
    };
    if (!dropped.empty()) {
      out.note(fmt::format(
          "note: the ranks on local get the environment an SSH session has (PATH, HOME, USER, "
          "LOGNAME, SHELL, MAIL, TZ, TMPDIR, LANG, LC_*), as the job's other hosts' ranks do, "
          "not the other {} of this shell; set what every rank needs in the job's `env:`",
          util::plural(dropped.size(), "variable", "variables")));
    }
  }
  // The cables the ranks use, watched while the job runs (cli/cable_watch.h, timeouts.cable):
  // clustercomm's routes of a cluster state, an MLX ring hostfile's addresses. Started here,
  // after --detach's fork (a thread does not cross it).
  std::vector<discovery::Cable> used;
  if (placement->state && !plan.routes.empty()) used = launch::routed_cables(*placement->state);
  if (plan.mlx && plan.runtime == launch::Runtime::kMlxRing) {
    // `cluster: hostfile:F`: the hosts as discovered; `cluster: cluster.json`: its own state.
    const discovery::ClusterState* st = hostfile_state ? &*hostfile_state
                                        : placement->state ? &*placement->state
                                                           : nullptr;
    if (st != nullptr) used = launch::hostfile_cables(*plan.mlx, *st);
  }
  std::vector<std::string> job_hosts;
  for (const auto& h : placement->hosts) job_hosts.push_back(h.name);
  const std::unique_ptr<CableWatch> cable_watch = watch_cables(
      placement->global, job_cables(std::move(used), job_hosts, placement->names));
  if (cable_watch) ro.cables_down = [w = cable_watch.get()] { return w->down(); };
  // restart: on-failure (launch/restart.h): each attempt has its own job id and job
  // directories, and the logs keep every attempt's lines, each attempt's after its marker.
  auto outcome = launch::run_with_restarts(
      spec->restart, rec.id,
      [&](const launch::Attempt& a) {
        if (a.of > 1) out.mark_logs(launch::attempt_marker(a, util::utc_now_iso()));
        ro.job_id = a.job_id;
        return launch::run_job(*spec, plan, out, connect, ro);
      },
      [&out](const std::string& text) {
        out.status("");
        out.note(text);
      });
  out.status("");
  std::string summary;
  ExitCode code = ExitCode::kOk;
  if (!outcome) {
    // Why it never started, naming no command: the command that shows it names itself
    // (`clusterctl launch: ...` below, `clusterctl logs: ...` from summary.txt).
    summary = outcome.error().message;
    code = outcome.error().code;
    // One line for `jobs`: "the job did not start: a host could not be set up: h2: ...".
    for (std::string_view line : util::split_lines(outcome.error().message)) {
      rec.reason += (rec.reason.empty() ? "" : " ") + std::string(util::trim(line));
    }
  } else {
    outcome->global_words = global_words(placement->global);
    summary = launch::render_summary(*outcome);
    code = outcome->code;
    rec.reason = launch::job_reason(*outcome);
    for (const auto& r : outcome->ranks) rec.rank_status.push_back(launch::describe_status(r));
  }
  if (!summary.ends_with('\n')) summary += '\n';  // a text file: `cat summary.txt`, `tail`
  rec.exit_code = util::to_int(code);
  rec.state = code == ExitCode::kOk            ? launch::JobState::kSucceeded
              : code == ExitCode::kInterrupted ? launch::JobState::kInterrupted
                                               : launch::JobState::kFailed;
  // The job itself is over: a record or summary that cannot be written is a warning, never a
  // change of the job's exit code. (With --detach, stderr is /dev/null by now.) The summary
  // comes first: `logs -f` shows it as soon as the final record says the job has ended.
  if (auto st = util::write_file_atomic(run_logs / "summary.txt", summary); !st) {
    fmt::print(stderr, "clusterctl launch: warning: the summary was not saved to {}: {}\n",
               (run_logs / "summary.txt").string(), st.error().message);
  }
  if (auto st = launch::save_job(rec); !st) {
    fmt::print(stderr,
               "clusterctl launch: warning: job {}'s final record was not saved to {}: {}; "
               "`clusterctl jobs` may show it as lost\n",
               rec.id, (launch::jobs_dir() / (rec.id + ".json")).string(), st.error().message);
  }
  util::flush_output(stdout);
  if (!o.detach) fmt::print(stderr, "{}{}", outcome ? "" : "clusterctl launch: ", summary);
  return code;
}

}  // namespace

void add_launch_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<LaunchCli>();
  CLI::App* cmd = app.add_subcommand(
      "launch",
      "Run a job (job.yaml) on every host: ranks started in parallel, output streamed with a "
      "[rank host] prefix and kept per rank, the job ended cleanly on failure or Ctrl-C");
  cmd->add_option("job", o->job_file, "The job file (see templates/ and README, \"job.yaml\")")
      ->required()
      ->check(existing_path());
  cmd->add_flag("--no-prefix", o->no_prefix, "Show ranks' lines without the [rank host] prefix");
  cmd->add_option("--ranks", o->ranks, "Show only these ranks' output (e.g. 0,2); logs keep all");
  cmd->add_flag("--unchecked-hostfile", o->unchecked_hostfile,
                "With `cluster: hostfile:FILE`: launch without first comparing the hostfile's "
                "rank order and devices with the cabling its hosts report");
  cmd->add_flag("--detach", o->detach,
                "Run in the background: check the job file, uploads and hosts as launch does "
                "(same errors and exit codes), then print the job id and return; see "
                "`clusterctl jobs`, `logs JOB -f` (exits as the job did), `stop JOB`");
  cmd->callback([&ctx, o] {
    // A job's output is in its logs too: a stdout that cannot be written does not change its
    // exit code (README, "Exit codes"). A detached launch's one output is the job id.
    ctx.output_kept_elsewhere = !o->detach;
    ctx.action = [&ctx, o] { return run_launch(ctx, *o); };
  });
}

}  // namespace cc::cli
