#include "launch/runner.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "launch/backend.h"
#include "launch/watcher.h"
#include "launch/wrapper.h"
#include "util/address.h"
#include "util/interrupt.h"
#include "util/text.h"

namespace cc::launch {
namespace {

using util::ExitCode;

// Runs one setup step (argv, with `stdin_data`, if any, on its stdin); a failure or no answer is an
// error of `code` saying "WHERE: cannot WHAT: why".
util::Status setup_step(remote::Executor& ex, std::vector<std::string> argv,
                        std::optional<std::string> stdin_data, std::chrono::milliseconds timeout,
                        ExitCode code, const std::string& where, const std::string& what) {
  remote::RunOptions ro;
  ro.timeout = timeout;
  ro.cancelled = [] { return false; };
  ro.stdin_data = std::move(stdin_data);
  ro.what = describe_step(argv);
  auto r = ex.run(remote::Command{std::move(argv)}, ro);
  if (!r) return r.error();
  if (r->exit_status != 0 || r->timed_out) {
    return util::error(
        code, fmt::format("{}: cannot {}: {}", where, what, r->timed_out ? "no answer" : r->err));
  }
  return {};
}

// Whether something listens on or holds a port a rank will listen on, asked on its host before
// any rank starts (launch would otherwise start every rank, and the rank name the port about a
// second later, or another job's coordinator refuse the others). Rank 0's coordinator port for
// every runtime whose rank 0 listens on `coordinator_port`: clustercomm
// (CLUSTERCOMM_COORDINATOR), mlx-jaccl and mlx-jaccl-ring (MLX_JACCL_COORDINATOR: ips[0] of rank
// 0); and for mlx-ring every rank's ports, since MLX's ring backend has each rank listen on each
// of its ips, the ports counting up from coordinator_port across the ranks (MLX_HOSTFILE): a port
// held on rank 2's host failed the job (exit 4) after every rank had started. A job's env and a
// hostfile's envs may not name the coordinator (rank_env.h, env_name_problem), so the plan's
// address is the one rank 0 is given. The host binds what the rank will (wrapper.h,
// port_held_argv: a name resolved there, IPv4 or IPv6). A host without perl or python3 cannot
// tell: said once per host, on stderr (`output`); one that does not answer within the control
// timeout is not judged here. Errors: kCheckFailed naming every HOST:PORT held, its host and
// rank, and what to do.
util::Status check_coordinator_port(const WorldPlan& plan, ControlHosts& control, OutputMux& output,
                                    std::chrono::milliseconds timeout) {
  if (plan.hosts.empty() || plan.coordinator_port <= 0 || control.size() == 0) return {};
  struct Listen {
    size_t host;  // index in plan.hosts (and control); the MLX runtimes run one rank per host
    std::string address;
    int port;
  };
  std::vector<Listen> listens;  // in rank order
  const LaunchHost& h0 = plan.hosts.front();
  switch (plan.runtime) {
    case Runtime::kClusterComm:
      listens.push_back({0, h0.address.empty() ? h0.name : h0.address, plan.coordinator_port});
      break;
    case Runtime::kMlxJaccl:
    case Runtime::kMlxJacclRing:
      if (!plan.mlx || plan.mlx->hosts.empty() || plan.mlx->hosts.front().ips.empty()) return {};
      listens.push_back({0, plan.mlx->hosts.front().ips.front(), plan.coordinator_port});
      break;
    case Runtime::kMlxRing: {
      if (!plan.mlx) return {};
      int port = plan.coordinator_port;  // as mlx_ring_hostfile_json numbers them
      for (size_t h = 0; h < plan.mlx->hosts.size() && h < control.size(); ++h) {
        for (const std::string& ip : plan.mlx->hosts[h].ips) listens.push_back({h, ip, port++});
      }
      break;
    }
    case Runtime::kMpi:
    case Runtime::kNone:
      return {};
  }
  auto host_name = [&plan](size_t h) {
    return h < plan.hosts.size() ? plan.hosts[h].name : std::to_string(h);
  };
  // "the coordinator port A on h1 (rank 0's host)", "the port A on h3 (rank 2's host)".
  auto where = [&](const Listen& l) {
    return fmt::format("the {} {} on {} (rank {}'s host)",
                       l.host == 0 && l.port == plan.coordinator_port ? "coordinator port" : "port",
                       util::host_port(l.address, l.port), host_name(l.host), l.host);
  };
  std::vector<const Listen*> held;
  std::vector<bool> unchecked(control.size(), false);
  std::string loopback;  // what rank 0's host resolves a coordinator name to, if a loopback one
  for (const Listen& l : listens) {
    if (unchecked[l.host]) continue;  // its other ports cannot be checked either
    auto r = control.ask(l.host, port_held_argv(l.address, l.port), timeout);
    if (!r || r->timed_out) continue;
    if (const size_t at = r->out.find("loopback "); at != std::string::npos && l.host == 0) {
      const size_t from = at + std::string_view("loopback ").size();
      loopback = std::string(util::trim(r->out.substr(from, r->out.find('\n', from) - from)));
    }
    if (r->out.find("unchecked") != std::string::npos) {
      unchecked[l.host] = true;
      output.note(fmt::format(
          "warning: {} was not checked before the ranks start: that host has neither perl nor "
          "python3; if another program holds it, rank {} will say so once it starts",
          where(l), l.host));
      continue;
    }
    if (r->out.find("in use") != std::string::npos) held.push_back(&l);
  }
  // A name (an address the operator wrote is taken as meant: one machine's ranks may well use
  // 127.0.0.1) that rank 0's host resolves to itself: rank 0 would listen on loopback, and the
  // ranks on the other hosts would wait for it until their timeout (Gloo's connectFullMesh
  // "timed out connecting ... remote=[127.0.0.1]" with a host name in /etc/hosts as 127.0.0.1,
  // aws-samples/aws-do-eks#69).
  if (!loopback.empty() && plan.runtime == Runtime::kClusterComm && plan.hosts.size() > 1 &&
      util::address_problem(listens.front().address)) {
    const std::string& name = listens.front().address;
    return util::error(
        ExitCode::kCheckFailed,
        fmt::format("rank 0's coordinator address '{}' resolves on {} (rank 0's host) to {}, a "
                    "loopback address (as a line `127.0.1.1 {}` in its /etc/hosts makes it): "
                    "rank 0 would listen there, where the ranks on the other {} cannot reach it, "
                    "and they would wait for it until their timeout. Give {} an `address:` in "
                    "the inventory that every host reaches, or have {} resolve to such an "
                    "address on {}; no rank was started",
                    name, host_name(0), loopback, name,
                    util::plural(plan.hosts.size() - 1, "host", "hosts"), host_name(0), name,
                    host_name(0)));
  }
  if (held.empty()) return {};
  std::vector<std::string> places;
  std::vector<std::string> ranks;
  for (const Listen* l : held) {
    places.push_back(where(*l));
    std::string r = std::to_string(l->host);
    if (std::find(ranks.begin(), ranks.end(), r) == ranks.end()) ranks.push_back(r);
  }
  std::string advice =
      plan.coordinator_from.empty()
          ? fmt::format("`coordinator_port:` in the job file (now {})", plan.coordinator_port)
          : plan.coordinator_from;
  if (plan.runtime == Runtime::kMlxRing && listens.size() > 1) {
    advice += fmt::format(
        "; under mlx-ring every rank listens on ports of its own, {} to {} here, counting up "
        "from it",
        plan.coordinator_port, listens.back().port);
  }
  return util::error(
      ExitCode::kCheckFailed,
      fmt::format("{} {} held by another program: rank{} {} could not listen there, so no rank "
                  "was started. It may be a stale job, another job's coordinator or a server: "
                  "on that host `ss -ltnp` on Linux or `lsof -nP -iTCP -sTCP:LISTEN` on macOS "
                  "names it; end it or choose another port: {}",
                  fmt::join(places, ", "), held.size() == 1 ? "is" : "are",
                  ranks.size() == 1 ? "" : "s", fmt::join(ranks, ", "), advice));
}

// Sets up host i: job directory, uploads, runtime files.
util::Status setup_host(remote::Executor& ex, const JobSpec& spec, const WorldPlan& plan,
                        const std::string& dir, const std::string& launcher,
                        std::chrono::milliseconds timeout) {
  if (auto st = setup_step(ex, setup_argv(dir, launcher), std::nullopt, timeout, ExitCode::kUnreachable,
                           ex.host(), "create the job directory " + dir);
      !st) {
    return st;
  }
  for (const auto& up : spec.upload) {
    std::string dest = up.dest.starts_with('/') ? up.dest : dir + "/" + up.dest;
    unsigned mode = 0644;
    if (up.mode) {
      mode = *up.mode;
    } else {
      std::error_code ec;
      auto st = std::filesystem::status(up.src, ec);
      if (!ec) mode = static_cast<unsigned>(st.permissions()) & 07777;
    }
    if (auto st = ex.upload(up.src, dest, mode, timeout); !st) {
      // Ctrl-C is no fault of the job file's: no hint about `upload:` then.
      if (st.error().code == ExitCode::kInterrupted) return st;
      return util::error(st.error().code,
                         fmt::format("{} (upload {} of {}; check the `upload:` entry at {})",
                                     st.error().message, up.src.string(), ex.host(),
                                     job_file_at(spec, up.line, up.column)));
    }
  }
  for (const auto& f : runtime_files(plan)) {
    const std::string path = dir + "/" + f.name;
    if (auto st = setup_step(ex, write_file_argv(path), f.content, timeout, ExitCode::kUnreachable,
                             ex.host(), "write " + path);
        !st) {
      return st;
    }
  }
  // The working directory, now that the uploads are there: a missing one would fail every
  // rank of the host after the job started (exit 126 each, the job exit 4).
  if (!spec.cwd.empty()) {
    remote::RunOptions ro;
    ro.timeout = timeout;
    ro.cancelled = [] { return false; };
    ro.what = describe_step(cwd_check_argv(dir, spec.cwd));
    auto r = ex.run(remote::Command{cwd_check_argv(dir, spec.cwd)}, ro);
    if (!r) return r.error();
    if (r->timed_out) {
      return util::error(ExitCode::kUnreachable,
                         fmt::format("{}: no answer to the check of the working directory",
                                     ex.host()));
    }
    if (r->exit_status != 0) {
      // At the job file's `cwd:`, as every other mistake of the job file is named.
      return util::error(ExitCode::kCheckFailed,
                         fmt::format("{}: `cwd: {}`: {}: {}",
                                     job_file_at(spec, spec.cwd_line, spec.cwd_column), spec.cwd,
                                     ex.host(), util::trim(r->err)));
    }
  }
  return {};
}

// runtime mpi: this machine's job directory with the Open MPI hostfile in it.
util::Status setup_local(remote::Executor& ex, const std::string& dir, const std::string& hostfile,
                         const std::string& launcher, std::chrono::milliseconds timeout) {
  if (auto st = setup_step(ex, setup_argv(dir, launcher), std::nullopt, timeout, ExitCode::kUsage,
                           "this machine", "create mpirun's job directory " + dir);
      !st) {
    return st;
  }
  const std::string path = dir + "/" + kMpiHostfile;
  return setup_step(ex, write_file_argv(path), hostfile, timeout, ExitCode::kUsage, "this machine",
                    "write " + path);
}

// One control connection per host (and, runtime mpi, this machine), then every host set up at
// once: the janitor first, then the job directory, uploads and runtime files. The connections
// come back whatever happened (cleanup needs them); `problems` names each host that failed.
struct SetUp {
  std::vector<std::unique_ptr<remote::Executor>> control;
  std::vector<std::string> problems;
  std::vector<size_t> never_reached;  // hosts the janitor could not reach: nothing to clean up
  ExitCode code = ExitCode::kOk;
  bool interrupted = false;  // a step gave up on Ctrl-C (kInterrupted)
};

SetUp set_up_hosts(const JobSpec& spec, const WorldPlan& plan, OutputMux& output,
                   const ExecutorFactory& connect, const RunnerOptions& opts,
                   const std::string& run_id, const std::string& hostfile, size_t ncontrol) {
  const size_t nhosts = plan.hosts.size();
  const std::string launcher = launcher_record(opts.job_id);
  SetUp out;
  out.control.resize(ncontrol);
  out.problems.resize(ncontrol);
  std::vector<std::string> swept;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (size_t h = 0; h < ncontrol; ++h) {
    threads.emplace_back([&, h] {
      auto ex = h < nhosts ? connect(h) : opts.connect_local();
      util::Status st;
      bool never_reached = false;
      if (!ex) {
        st = ex.error();
      } else {
        out.control[h] = std::move(*ex);
        // A host the janitor could not reach is not tried again for the set-up: an unreachable
        // host cost two connect timeouts (23 s with the default 10 s) before it was named.
        util::Status reached;
        auto removed = sweep_leftovers(*out.control[h], opts.control_timeout, &reached);
        if (!removed.empty()) {
          std::lock_guard<std::mutex> lock(mu);
          swept.insert(swept.end(), removed.begin(), removed.end());
        }
        never_reached = !reached;
        st = !reached  ? reached
             : h < nhosts ? setup_host(*out.control[h], spec, plan, job_dir(run_id, h), launcher,
                                       opts.control_timeout)
                          : setup_local(*out.control[h], local_job_dir(run_id), hostfile,
                                        launcher, opts.control_timeout);
      }
      if (!st) {
        std::lock_guard<std::mutex> lock(mu);
        out.problems[h] = st.error().message;
        if (never_reached) out.never_reached.push_back(h);
        if (st.error().code == ExitCode::kInterrupted) out.interrupted = true;
        if (out.code == ExitCode::kOk || st.error().code == ExitCode::kUnreachable) {
          out.code = st.error().code;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  std::erase(out.problems, std::string());
  if (!swept.empty()) {
    std::sort(swept.begin(), swept.end());
    std::string list;
    for (const auto& d : swept) list += "\n  " + d;
    output.note(
        fmt::format("removed {} left by launchers that are gone (killed?):{}",
                    util::plural(swept.size(), "job directory", "job directories"), list));
  }
  return out;
}

// Removes every host's job directory: the cleanup that Ctrl-C or SIGTERM asks for, so it runs
// with the signal set aside (util::InterruptSetAside: a connect would give up on it, and a host
// it cut short would be passed by). `ran(h)`: whether a rank's wrapper ran on host h, whose
// watchdog then removes the directory of a host that no longer answers; `never_reached(h)`: the
// host was not reached at all, so nothing was made there. Returns what may remain, each with
// the command that removes it.
std::vector<std::string> remove_job_dirs(ControlHosts& control,
                                         const std::function<std::string(size_t)>& dir_of,
                                         const std::function<bool(size_t)>& ran,
                                         const std::vector<size_t>& never_reached) {
  const util::InterruptSetAside aside;
  return control.on_every_host(
      [&](size_t h) { return cleanup_argv(dir_of(h)); },
      [&](size_t h, const std::string& host) -> std::string {
        if (std::find(never_reached.begin(), never_reached.end(), h) != never_reached.end()) {
          return "";
        }
        if (ran(h)) {
          return fmt::format(
              "{}: lost, not waited for (its ranks' watchdog ends them and removes its job "
              "directory)",
              host);
        }
        return fmt::format("{}: lost before any rank ran there, so no watchdog removes {}; {}",
                           host, dir_of(h), gc_advice(host));
      });
}

}  // namespace

std::vector<std::string> sweep_leftovers(remote::Executor& ex, std::chrono::milliseconds timeout,
                                         util::Status* unreachable,
                                         const std::function<bool(std::string_view)>& only) {
  remote::RunOptions ro;
  ro.timeout = timeout;
  ro.cancelled = [] { return false; };
  ro.what = describe_step(leftovers_argv());
  auto listed = ex.run(remote::Command{leftovers_argv()}, ro);
  if (!listed && unreachable != nullptr &&
      (listed.error().code == ExitCode::kUnreachable ||
       listed.error().code == ExitCode::kInterrupted)) {
    *unreachable = listed.error();
  }
  std::vector<std::string> removed;
  if (!listed || listed->timed_out || listed->exit_status != 0) return removed;
  std::string_view rest = listed->out;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos || !launcher_gone(line.substr(sp + 1))) continue;
    if (only) {
      // RECORD is "HOST PID START JOBID" (launcher_record).
      const std::string_view record = line.substr(sp + 1);
      const size_t last = record.rfind(' ');
      if (last == std::string_view::npos || !only(record.substr(last + 1))) continue;
    }
    const std::string dir(line.substr(0, sp));
    ro.what = describe_step(sweep_argv(dir));
    auto r = ex.run(remote::Command{sweep_argv(dir)}, ro);
    if (r && !r->timed_out && r->out.starts_with("removed")) removed.push_back(ex.host() + ":" + dir);
  }
  return removed;
}

std::string job_dir(const std::string& job_id, size_t host) {
  return fmt::format("/tmp/clusterctl-job-{}-h{}", job_id, host);
}

std::string local_job_dir(const std::string& job_id) {
  return fmt::format("/tmp/clusterctl-job-{}-mpirun", job_id);
}

util::Result<JobOutcome> run_job(const JobSpec& spec, const WorldPlan& plan, OutputMux& output,
                                 const ExecutorFactory& connect, const RunnerOptions& opts) {
  if (auto st = check_world(plan); !st) return st.error();
  util::SteadyClock steady;
  util::Clock& clock = opts.clock != nullptr ? *opts.clock : steady;
  const auto t0 = clock.now();
  const size_t nhosts = plan.hosts.size();
  // runtime mpi: one more control connection, to this machine, where mpirun runs.
  const bool mpi = plan.runtime == Runtime::kMpi;
  std::string hostfile;
  if (mpi) {
    if (!opts.connect_local) return util::error(ExitCode::kUsage, "runtime mpi: no local runner");
    auto hf = mpi_hostfile(plan);
    if (!hf) return hf.error();
    hostfile = std::move(*hf);
  }
  // This run's job directories: the job id and a part no one can predict, new for every run
  // and every restart attempt (wrapper.h, "Trust").
  const std::string run_id = fmt::format("{}-{}", opts.job_id, util::random_hex(8));
  auto dir_of = [&](size_t h) {
    return h < nhosts ? job_dir(run_id, h) : local_job_dir(run_id);
  };
  SetUp setup =
      set_up_hosts(spec, plan, output, connect, opts, run_id, hostfile, nhosts + (mpi ? 1 : 0));
  ControlHosts control(std::move(setup.control), opts.control_timeout);
  for (size_t h : setup.never_reached) control.mark_lost(h);  // not tried a third time
  const auto no_rank_ran = [](size_t) { return false; };
  // What may remain after a job that did not start, one line each, for its error.
  const auto remains = [&](const std::vector<std::string>& left) {
    std::string out;
    for (const auto& p : left) out += "\n  the job directory may remain: " + p;
    return out;
  };
  if (!setup.problems.empty() || util::interrupted()) {
    const auto left = remove_job_dirs(control, dir_of, no_rank_ran, setup.never_reached);
    // Ctrl-C while the hosts were set up (an upload or a connection cut short by it): the
    // hosts' failures are its doing, so say only that it was interrupted.
    if (setup.problems.empty() || setup.interrupted || util::interrupted()) {
      return util::interrupted_error(" while the hosts were set up: no rank was started" +
                                     remains(left));
    }
    std::string msg = "the job did not start: a host could not be set up:";
    for (const auto& p : setup.problems) msg += "\n  " + p;
    return util::error(setup.code, msg + remains(left));
  }

  if (auto st = check_coordinator_port(plan, control, output, opts.control_timeout); !st) {
    const auto left = remove_job_dirs(control, dir_of, no_rank_ran, setup.never_reached);
    return util::Error{st.error().code, st.error().message + remains(left)};
  }

  const BackendContext ctx{spec,
                           plan,
                           output,
                           connect,
                           opts,
                           control,
                           clock,
                           run_id,
                           random_hex(16),
                           spec.command.is_shell()
                               ? std::vector<std::string>{"sh", "-c", spec.command.shell}
                               : spec.command.argv};
  RankBoard board(plan, clock);
  auto backend = mpi ? make_mpi_backend(ctx) : make_ssh_backend(ctx);
  WatchOptions wo;
  wo.name = spec.name;
  wo.timeouts = spec.timeouts;
  wo.control_timeout = opts.control_timeout;
  wo.status = opts.status;
  wo.t0 = t0;
  wo.cables_down = opts.cables_down;
  const WatchResult watched = watch(board, *backend, output, clock, wo);

  JobOutcome outcome;
  outcome.code = watched.code;
  outcome.reason = watched.reason;
  outcome.startup = watched.startup;
  outcome.ranks = board.ranks();
  // What the summary's advice reads (module_advice): each rank's last error, and the program.
  for (RankOutcome& r : outcome.ranks) r.last_error = output.last_error_line(r.rank);
  outcome.command = spec.command.is_shell()
                        ? std::vector<std::string>{"sh", "-c", spec.command.shell}
                        : spec.command.argv;
  outcome.cleanup_problems = remove_job_dirs(
      control, dir_of,
      [&](size_t h) {
        // runtime mpi: mpirun's wrapper on this machine (the last control host) watches it
        return std::any_of(outcome.ranks.begin(), outcome.ranks.end(),
                           [&](const RankOutcome& o) {
                             return o.started && (mpi || board.host_of(o.rank) == h);
                           });
      },
      setup.never_reached);
  outcome.first_failed = board.first_failed();
  if (watched.rank_failed && outcome.first_failed >= 0) {
    // The first failure may be a consequence: a rank refused by another job's coordinator,
    // on the port this job's rank 0 failed to listen on. Its error names the cause. Judged
    // again now that every rank has ended (the cause may have reported only during the
    // teardown), by the function the watcher's "ending the job" line came from.
    // A first failure that only says a peer went away is another's consequence (first_cause).
    FailureCause f =
        failure_cause(outcome.ranks, outcome.first_failed, output.last_error_lines());
    outcome.ranks[static_cast<size_t>(f.first)].ended_by_us = false;
    outcome.reason = std::move(f.reason);
    outcome.consequence = f.consequence;
    outcome.first_failed = f.cause;
  }
  outcome.duration = std::chrono::duration_cast<std::chrono::milliseconds>(clock.now() - t0);
  if (outcome.code == ExitCode::kOk) {
    bool all_ok = std::all_of(outcome.ranks.begin(), outcome.ranks.end(),
                              [](const RankOutcome& o) { return o.exit_status == 0; });
    if (!all_ok) outcome.code = ExitCode::kJobFailed;
  }
  if (outcome.code == ExitCode::kOk && mpi && board.launcher_status() != 0) {
    const std::string last = board.launcher_last();
    outcome.code = ExitCode::kJobFailed;
    outcome.reason = fmt::format("every rank exited 0 but mpirun exited {}{}",
                                 board.launcher_status(), last.empty() ? "" : ": " + last);
  }
  if (outcome.code == ExitCode::kOk && util::interrupted()) outcome.code = ExitCode::kInterrupted;
  return outcome;
}

}  // namespace cc::launch
