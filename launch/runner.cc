#include "launch/runner.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "launch/stall.h"
#include "launch/wrapper.h"
#include "remote/fan_out.h"
#include "util/interrupt.h"

namespace cc::launch {
namespace {

using Clock = std::chrono::steady_clock;
using util::ExitCode;
using namespace std::chrono_literals;

std::chrono::milliseconds since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t);
}

// What the rank threads and the watching thread share.
struct Shared {
  explicit Shared(size_t hosts) : lost(hosts), control_mu(hosts) {}
  std::mutex mu;
  std::vector<RankOutcome> ranks;
  int first_failed = -1;
  bool ending = false;               // teardown began: later failures are its doing
  std::atomic<bool> abandon{false};  // give up on the ranks still connected
  bool launcher_done = true;         // runtime mpi: mpirun has ended (false while it runs)
  int launcher_status = 0;           // mpirun's exit status (-1: unknown)
  std::string launcher_last;         // mpirun's last line of its own
  // Per control host: known lost (a rank connection or a control command to it failed), so
  // no later control command waits on it; its ranks are ended by their own watchdog.
  std::vector<std::atomic<bool>> lost;
  // Per control host: held while a command runs on its control connection, which the stall
  // sampler and the signaller share.
  std::vector<std::mutex> control_mu;
};

// One command on every control executor at once, never cut short by Ctrl-C (this is the
// cleanup that Ctrl-C asks for). Returns "host: problem" for each host where it failed. With
// `lost`, a host marked there is skipped (said so once in the problems), and a host that does
// not answer, or whose connection fails, is marked: the next command does not wait for it.
std::vector<std::string> on_every_host(std::vector<std::unique_ptr<remote::Executor>>& execs,
                                       const std::function<std::vector<std::string>(size_t)>& argv,
                                       std::chrono::milliseconds timeout,
                                       std::vector<std::atomic<bool>>* lost = nullptr) {
  std::vector<std::string> problems(execs.size());
  std::vector<remote::Executor*> raw;
  for (auto& e : execs) raw.push_back(e.get());
  remote::for_each_host(
      raw, "launch",
      [&](size_t i) {
        if (execs[i] == nullptr) return;
        if (lost != nullptr && (*lost)[i]) {
          problems[i] = fmt::format("{}: lost, not waited for (its ranks' watchdog ends them "
                                    "and removes its job directory)",
                                    execs[i]->host());
          return;
        }
        remote::RunOptions ro;
        ro.timeout = timeout;
        ro.cancelled = [] { return false; };
        auto r = execs[i]->run(remote::Command{argv(i)}, ro);
        if (!r) {
          problems[i] = r.error().message;
          if (lost != nullptr) (*lost)[i] = true;
        } else if (r->timed_out) {
          problems[i] =
              fmt::format("{}: no answer within {} s", execs[i]->host(), timeout.count() / 1000);
          if (lost != nullptr) (*lost)[i] = true;
        } else if (r->exit_status != 0) {
          problems[i] = fmt::format("{}: exit {}: {}", execs[i]->host(), r->exit_status, r->err);
        }
      },
      util::OutputStyle{});
  std::erase(problems, std::string());
  return problems;
}

// Runs one setup step (argv, with `stdin_data`, if any, on its stdin); a failure or no answer is an
// error of `code` saying "WHERE: cannot WHAT: why".
util::Status setup_step(remote::Executor& ex, std::vector<std::string> argv,
                        std::optional<std::string> stdin_data, std::chrono::milliseconds timeout,
                        ExitCode code, const std::string& where, const std::string& what) {
  remote::RunOptions ro;
  ro.timeout = timeout;
  ro.cancelled = [] { return false; };
  ro.stdin_data = std::move(stdin_data);
  auto r = ex.run(remote::Command{std::move(argv)}, ro);
  if (!r) return r.error();
  if (r->exit_status != 0 || r->timed_out) {
    return util::error(
        code, fmt::format("{}: cannot {}: {}", where, what, r->timed_out ? "no answer" : r->err));
  }
  return {};
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
      return util::error(st.error().code, fmt::format("{} (upload {} of {}; check `upload:` in {})",
                                                      st.error().message, up.src.string(),
                                                      ex.host(), spec.source.string()));
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

}  // namespace

std::vector<std::string> sweep_leftovers(remote::Executor& ex, std::chrono::milliseconds timeout) {
  remote::RunOptions ro;
  ro.timeout = timeout;
  ro.cancelled = [] { return false; };
  auto listed = ex.run(remote::Command{leftovers_argv()}, ro);
  std::vector<std::string> removed;
  if (!listed || listed->timed_out || listed->exit_status != 0) return removed;
  std::string_view rest = listed->out;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos || !launcher_gone(line.substr(sp + 1))) continue;
    const std::string dir(line.substr(0, sp));
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
  const auto t0 = Clock::now();
  const size_t nhosts = plan.hosts.size();
  const int world = plan.world_size();
  std::vector<std::string> command = spec.command.is_shell()
                                         ? std::vector<std::string>{"sh", "-c", spec.command.shell}
                                         : spec.command.argv;
  // runtime mpi: one more control connection, to this machine, where mpirun runs.
  const bool mpi = plan.runtime == Runtime::kMpi;
  std::string hostfile;
  if (mpi) {
    if (!opts.connect_local) return util::error(ExitCode::kUsage, "runtime mpi: no local runner");
    auto hf = mpi_hostfile(plan);
    if (!hf) return hf.error();
    hostfile = std::move(*hf);
  }
  const size_t ncontrol = nhosts + (mpi ? 1 : 0);
  // This run's job directories: the job id and a part no one can predict, new for every run
  // and every restart attempt (wrapper.h, "Trust").
  const std::string run_id = fmt::format("{}-{}", opts.job_id, util::random_hex(8));
  const std::string launcher = launcher_record(opts.job_id);
  auto dir_of = [&](size_t h) {
    return h < nhosts ? job_dir(run_id, h) : local_job_dir(run_id);
  };

  // One control connection per host, then every host set up at once.
  std::vector<std::unique_ptr<remote::Executor>> control(ncontrol);
  std::vector<std::string> setup_problems(ncontrol);
  std::vector<std::string> swept;
  ExitCode setup_code = ExitCode::kOk;
  std::mutex setup_mu;
  {
    std::vector<std::thread> threads;
    for (size_t h = 0; h < ncontrol; ++h) {
      threads.emplace_back([&, h] {
        auto ex = h < nhosts ? connect(h) : opts.connect_local();
        util::Status st;
        if (!ex) {
          st = ex.error();
        } else {
          control[h] = std::move(*ex);
          auto removed = sweep_leftovers(*control[h], opts.control_timeout);
          if (!removed.empty()) {
            std::lock_guard<std::mutex> lock(setup_mu);
            swept.insert(swept.end(), removed.begin(), removed.end());
          }
          st = h < nhosts ? setup_host(*control[h], spec, plan, dir_of(h), launcher,
                                       opts.control_timeout)
                          : setup_local(*control[h], dir_of(h), hostfile, launcher,
                                        opts.control_timeout);
        }
        if (!st) {
          std::lock_guard<std::mutex> lock(setup_mu);
          setup_problems[h] = st.error().message;
          if (setup_code == ExitCode::kOk || st.error().code == ExitCode::kUnreachable) {
            setup_code = st.error().code;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  std::erase(setup_problems, std::string());
  if (!swept.empty()) {
    std::sort(swept.begin(), swept.end());
    std::string list;
    for (const auto& d : swept) list += "\n  " + d;
    output.note(fmt::format("removed {} job director{} left by launchers that are gone (killed?):{}",
                            swept.size(), swept.size() == 1 ? "y" : "ies", list));
  }
  if (!setup_problems.empty() || util::interrupted()) {
    on_every_host(
        control, [&](size_t h) { return cleanup_argv(dir_of(h)); }, opts.control_timeout);
    if (setup_problems.empty()) return util::error(ExitCode::kInterrupted, "interrupted");
    std::string msg = "the job did not start: a host could not be set up:";
    for (const auto& p : setup_problems) msg += "\n  " + p;
    return util::error(setup_code, msg);
  }

  Shared sh(ncontrol);
  sh.ranks.resize(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    sh.ranks[static_cast<size_t>(r)].rank = r;
    sh.ranks[static_cast<size_t>(r)].host = plan.hosts[plan.host_of(r)].name;
  }
  const std::string nonce = random_hex(16);
  std::vector<std::thread> rank_threads;
  if (mpi) {
    sh.launcher_done = false;
    rank_threads.emplace_back([&] {
      MpiLaunch m = opts.mpi;
      m.job_id = run_id;
      m.local_dir = dir_of(nhosts);
      m.nonce = nonce;
      m.cwd = spec.cwd;
      m.grace_s = static_cast<int>(spec.timeouts.grace.count());
      m.command = command;
      std::vector<Clock::time_point> began(static_cast<size_t>(world), Clock::now());
      MpiDemux demux(nonce);
      StartMarker marker(nonce);
      auto handle = [&](const std::vector<MpiEvent>& events) {
        for (const auto& e : events) {
          if (e.kind == MpiEvent::Kind::kMpirun) {
            if (e.text.find_first_not_of(" -") == std::string::npos) continue;  // its rulers
            output.note("mpirun: " + e.text);
            std::lock_guard<std::mutex> lock(sh.mu);
            sh.launcher_last = e.text;
            continue;
          }
          if (e.rank < 0 || e.rank >= world) continue;
          const auto ri = static_cast<size_t>(e.rank);
          if (e.kind == MpiEvent::Kind::kLine) {
            output.feed(e.rank, e.fd, e.text + "\n");
            continue;
          }
          if (e.kind == MpiEvent::Kind::kEnded) output.finish(e.rank);
          std::lock_guard<std::mutex> lock(sh.mu);
          RankOutcome& o = sh.ranks[ri];
          if (e.kind == MpiEvent::Kind::kStarted) {
            o.started = true;
            o.pid = e.value;
            began[ri] = Clock::now();
          } else if (!o.finished) {
            o.finished = true;
            o.exit_status = static_cast<int>(e.value);
            o.signaled = e.signaled;
            o.duration = since(began[ri]);
            if (o.failed() && (sh.ending || sh.first_failed >= 0)) {
              o.ended_by_us = true;  // by clusterctl, or by mpirun after the first failure
            } else if (o.failed()) {
              sh.first_failed = e.rank;
            }
          }
        }
      };
      int status = -1;
      std::string problem;
      auto ex = opts.connect_local();
      if (!ex) {
        problem = ex.error().message;
      } else {
        remote::RunOptions ro;
        ro.timeout = std::chrono::hours(24 * 365);
        ro.stdin_data = env_payload(mpirun_env(plan), nonce);
        ro.keep_stdin_open = true;
        ro.heartbeat = kHeartbeatInterval;
        ro.cancelled = [&] { return sh.abandon.load(); };
        ro.on_output = [&](int fd, std::string_view bytes) {
          if (fd == 2 && !marker.started()) {
            std::string pass = marker.feed(bytes);
            if (!pass.empty()) handle(demux.feed(2, pass));
            return;
          }
          handle(demux.feed(fd, bytes));
        };
        WrapperArgs wa{m.local_dir,
                       0,
                       "",
                       m.grace_s,
                       nonce,
                       mpirun_argv(plan, m),
                       static_cast<int>(kHeartbeatTimeout.count())};
        auto res = (*ex)->run(remote::Command{wrapper_argv(wa)}, ro);
        if (!res) {
          problem = res.error().message;
        } else if (res->timed_out) {
          problem = "abandoned: mpirun did not end after SIGKILL";
        } else {
          status = res->exit_status;
        }
        if (auto rest = marker.flush(); !rest.empty()) handle(demux.feed(2, rest));
        handle(demux.flush());
      }
      for (int r = 0; r < world; ++r) output.finish(r);
      std::lock_guard<std::mutex> lock(sh.mu);
      sh.launcher_done = true;
      sh.launcher_status = status;
      if (problem.empty()) {
        problem = fmt::format("mpirun ended ({})", status == 127 ? "exit 127: is Open MPI "
                                                                   "installed on this machine?"
                                                                 : fmt::format("exit {}", status));
        if (!sh.launcher_last.empty()) problem += ": " + sh.launcher_last;
      }
      for (auto& o : sh.ranks) {
        if (o.finished) continue;
        o.finished = true;
        o.exit_status = -1;
        o.problem = o.started ? "no exit status: " + problem : "never started: " + problem;
        o.duration = o.started ? since(began[static_cast<size_t>(o.rank)]) : o.duration;
        if (sh.ending || sh.first_failed >= 0) {
          o.ended_by_us = true;
        } else {
          sh.first_failed = o.rank;
        }
      }
    });
  }
  for (int r = 0; r < world && !mpi; ++r) {
    rank_threads.emplace_back([&, r] {
      const size_t h = plan.host_of(r);
      const std::string dir = job_dir(run_id, h);
      const auto start = Clock::now();
      StartMarker marker(nonce);
      auto finish = [&](int status, std::string problem, bool signaled = false) {
        if (auto rest = marker.flush(); !rest.empty()) output.feed(r, 2, rest);
        output.finish(r);
        std::lock_guard<std::mutex> lock(sh.mu);
        RankOutcome& o = sh.ranks[static_cast<size_t>(r)];
        o.finished = true;
        o.exit_status = status;
        o.signaled = signaled;
        o.problem = std::move(problem);
        o.duration = since(start);
        if (sh.ending) {
          o.ended_by_us = o.failed();
        } else if (o.failed() && sh.first_failed < 0) {
          sh.first_failed = r;
        }
      };
      auto ex = connect(h);
      if (!ex) {
        finish(-1, ex.error().message);
        return;
      }
      remote::RunOptions ro;
      ro.timeout = std::chrono::hours(24 * 365);
      ro.stdin_data = env_payload(rank_env(plan, r, dir), nonce);
      ro.keep_stdin_open = true;
      ro.heartbeat = kHeartbeatInterval;
      ro.heartbeat_timeout = kHeartbeatTimeout;
      ro.cancelled = [&] { return sh.abandon.load(); };
      ro.on_output = [&](int fd, std::string_view bytes) {
        if (fd == 2 && !marker.started()) {
          std::string pass = marker.feed(bytes);
          if (marker.started()) {
            std::lock_guard<std::mutex> lock(sh.mu);
            sh.ranks[static_cast<size_t>(r)].started = true;
            sh.ranks[static_cast<size_t>(r)].pid = marker.pid();
          }
          if (!pass.empty()) output.feed(r, 2, pass);
          return;
        }
        output.feed(r, fd, bytes);
      };
      WrapperArgs wa{dir,
                     r,
                     spec.cwd,
                     static_cast<int>(spec.timeouts.grace.count()),
                     nonce,
                     command,
                     static_cast<int>(kHeartbeatTimeout.count())};
      auto res = (*ex)->run(remote::Command{wrapper_argv(wa)}, ro);
      if (!res) {
        sh.lost[h] = true;  // teardown does not wait for it
        finish(-1, fmt::format("connection lost: host {} lost: {}", plan.hosts[h].name,
                               res.error().message));
      } else if (res->timed_out) {
        finish(-1, "abandoned: no exit status after SIGKILL (host unreachable?)");
      } else {
        // 128+N: an exit with that status, or death by signal N? The wrapper's end record says
        // (wrapper.h); without one (no perl on the host), as sh reports it: a signal.
        bool signaled = res->signaled;
        if (!signaled && res->exit_status > 128) {
          remote::RunOptions q;
          q.timeout = 5s;
          q.cancelled = [] { return false; };
          auto rec = (*ex)->run(remote::Command{end_record_argv(dir, r)}, q);
          auto how = rec && rec->exit_status == 0 ? parse_end_record(rec->out) : std::nullopt;
          signaled = how.value_or(true);
        }
        finish(res->exit_status, "", signaled);
      }
      (*ex).reset();
    });
  }

  // Watch: the first failure, Ctrl-C or a timeout ends the job.
  JobOutcome outcome;
  std::optional<Clock::time_point> ending_at;
  std::thread signaller;
  // runtime mpi, after a rank failed: mpirun is ending the job itself (Open MPI aborts on the
  // first non-zero exit), and a SIGTERM in the middle of that makes Open MPI 4.1's mpirun crash
  // and leave its daemons behind; it gets SIGKILL only if still there after the grace period.
  auto begin_end = [&](std::string reason, ExitCode code, bool rank_failed) {
    outcome.reason = std::move(reason);
    outcome.code = code;
    ending_at = Clock::now();
    output.note(fmt::format("{}: ending the job (SIGTERM, SIGKILL after {} s)", outcome.reason,
                            spec.timeouts.grace.count()));
    // One signaller per host, so a host that does not answer delays no other host's SIGTERM
    // or SIGKILL (and, once marked lost, is not asked again).
    signaller = std::thread([&, rank_failed] {
      const auto kill_at = *ending_at + spec.timeouts.grace;
      auto all_over = [&] {
        std::lock_guard<std::mutex> lock(sh.mu);
        return sh.launcher_done && std::all_of(sh.ranks.begin(), sh.ranks.end(),
                                               [](const RankOutcome& o) { return o.finished; });
      };
      auto signal_host = [&](size_t h, std::vector<std::string> argv) {
        if (control[h] == nullptr || sh.lost[h]) return;
        remote::RunOptions ro;
        ro.timeout = opts.control_timeout;
        ro.cancelled = [] { return false; };
        std::lock_guard<std::mutex> lock(sh.control_mu[h]);
        auto r = control[h]->run(remote::Command{std::move(argv)}, ro);
        if (!r || r->timed_out) sh.lost[h] = true;
      };
      std::vector<std::thread> per_host;
      for (size_t h = 0; h < ncontrol; ++h) {
        per_host.emplace_back([&, h] {
          if (!(h >= nhosts && rank_failed)) signal_host(h, signal_argv(dir_of(h), "TERM"));
          auto next_term = Clock::now() + 1s;
          while (Clock::now() < kill_at) {
            if (all_over()) return;
            if (!mpi && Clock::now() >= next_term) {
              // A rank that was still starting at the first TERM: its group gets TERM now
              // (the script signals each group once), well before the SIGKILL.
              signal_host(h, signal_argv(dir_of(h), "TERM"));
              next_term = Clock::now() + 1s;
            }
            std::this_thread::sleep_for(50ms);
          }
          signal_host(h, signal_argv(dir_of(h), "KILL"));
        });
      }
      for (auto& t : per_host) t.join();
    });
  };
  auto last_status = Clock::now() - 1s;
  std::vector<StallWatch> stall(static_cast<size_t>(world), StallWatch(spec.timeouts.stall));
  std::atomic<bool> sampling{true};
  // Samples every running rank's process state and CPU time (one round trip per host): warns
  // about the silent ranks that keep a core busy (with `stall_warnings`), and about a stopped
  // rank (SIGSTOP, Ctrl-Z, a debugger), which every other rank then waits for.
  auto sample_ranks = [&](bool stall_warnings) {
    std::vector<std::vector<long>> pids(nhosts);
    {
      std::lock_guard<std::mutex> lock(sh.mu);
      for (const auto& o : sh.ranks) {
        if (o.started && !o.finished && o.pid > 0) pids[plan.host_of(o.rank)].push_back(o.pid);
      }
    }
    std::vector<std::vector<ProcessSample>> answers(nhosts);
    std::vector<remote::Executor*> raw;
    for (auto& e : control) raw.push_back(e.get());
    remote::for_each_host(
        raw, "stall",
        [&](size_t h) {
          if (h >= nhosts || pids[h].empty() || control[h] == nullptr || sh.lost[h]) return;
          remote::RunOptions sro;
          sro.timeout = 2s;  // ps answers in milliseconds; a host that does not is not waited on
          sro.cancelled = [] { return false; };
          std::lock_guard<std::mutex> lock(sh.control_mu[h]);
          auto res = control[h]->run(remote::Command{sample_argv(pids[h])}, sro);
          if (res && res->exit_status == 0) answers[h] = parse_samples(res->out);
        },
        util::OutputStyle{});
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(sh.mu);
    for (auto& o : sh.ranks) {
      if (!o.started || o.finished || o.pid <= 0) continue;
      const auto& samples = answers[plan.host_of(o.rank)];
      auto it = std::find_if(samples.begin(), samples.end(),
                             [&](const ProcessSample& p) { return p.pid == o.pid; });
      if (it == samples.end()) continue;
      if (it->stopped && !o.stopped) {
        o.stopped = true;
        output.note(fmt::format("warning: rank {} on {} is stopped (SIGSTOP, Ctrl-Z or a "
                                "debugger): every other rank waits for it; `kill -CONT {}` on {} "
                                "resumes it",
                                o.rank, o.host, o.pid, o.host));
      }
      if (!stall_warnings) continue;
      auto silent =
          std::chrono::duration_cast<std::chrono::milliseconds>(now - output.last_output(o.rank));
      auto& w = stall[static_cast<size_t>(o.rank)];
      if (w.sample(now, it->cpu, silent)) {
        output.note(fmt::format("warning: rank {} on {} has printed nothing for {} s while "
                                "using {:.0f}% CPU: a hung collective? (timeouts.stall)",
                                o.rank, o.host, silent.count() / 1000, w.last_load() * 100));
      }
    }
  };
  // The stall sampler runs beside the watch loop, so a host slow to answer its sample never
  // delays noticing a failure. runtime mpi: a rank's pid is its wrapper's (mpi.h), whose CPU
  // time says nothing.
  std::thread sampler;
  if (!mpi && spec.timeouts.stall.count() > 0) {
    sampler = std::thread([&] {
      auto next = t0 + stall[0].interval();
      while (sampling) {
        if (Clock::now() >= next) {
          sample_ranks(true);
          next = Clock::now() + stall[0].interval();
        }
        std::this_thread::sleep_for(50ms);
      }
    });
  }
  for (;;) {
    int running = 0, finished = 0, started = 0, first_failed = -1;
    {
      std::lock_guard<std::mutex> lock(sh.mu);
      for (const auto& o : sh.ranks) {
        started += o.started ? 1 : 0;
        finished += o.finished ? 1 : 0;
        running += o.started && !o.finished ? 1 : 0;
      }
      first_failed = sh.first_failed;
      if (started == world && outcome.startup.count() == 0) outcome.startup = since(t0);
    }
    if (finished == world) {
      std::lock_guard<std::mutex> lock(sh.mu);
      if (sh.launcher_done) break;
    }
    if (!ending_at) {
      std::string why;
      ExitCode code = ExitCode::kJobFailed;
      bool rank_failed = false;
      if (util::interrupted()) {
        why = "interrupted (Ctrl-C or `clusterctl stop`)";
        code = ExitCode::kInterrupted;
      } else if (first_failed >= 0) {
        // A rank that failed because another was stopped (its collective timed out) is not
        // the cause: look once more at the others (only when the failed rank reported an exit
        // status; after a lost connection the hosts may not answer).
        bool exited = false;
        {
          std::lock_guard<std::mutex> lock(sh.mu);
          exited = sh.ranks[static_cast<size_t>(first_failed)].exit_status >= 0;
        }
        if (!mpi && exited) sample_ranks(false);
        std::lock_guard<std::mutex> lock(sh.mu);
        const RankOutcome& o = sh.ranks[static_cast<size_t>(first_failed)];
        why = fmt::format("rank {} on {} failed ({})", o.rank, o.host, describe_status(o));
        rank_failed = true;
      } else if (started < world && Clock::now() - t0 > spec.timeouts.startup) {
        std::lock_guard<std::mutex> lock(sh.mu);
        auto it = std::find_if(sh.ranks.begin(), sh.ranks.end(),
                               [](const RankOutcome& o) { return !o.started && !o.finished; });
        why = fmt::format("rank {} on {} was not running after timeouts.startup ({} s)",
                          it != sh.ranks.end() ? it->rank : -1,
                          it != sh.ranks.end() ? it->host : "?", spec.timeouts.startup.count());
      } else if (spec.timeouts.total.count() > 0 && Clock::now() - t0 > spec.timeouts.total) {
        why = fmt::format("the job ran longer than timeouts.total ({} s)",
                          spec.timeouts.total.count());
      }
      if (!why.empty()) {
        {
          std::lock_guard<std::mutex> lock(sh.mu);
          sh.ending = true;
          auto stopped = std::find_if(sh.ranks.begin(), sh.ranks.end(), [](const RankOutcome& o) {
            return o.stopped && !o.finished;
          });
          if (code != ExitCode::kInterrupted && stopped != sh.ranks.end()) {
            why = fmt::format("rank {} on {} was stopped (SIGSTOP, Ctrl-Z or a debugger) and "
                              "the others waited for it; then {}",
                              stopped->rank, stopped->host, why);
          }
        }
        sampling = false;  // no stall warnings during teardown
        begin_end(why, code, rank_failed);
      }
    } else if (Clock::now() - *ending_at > spec.timeouts.grace + opts.control_timeout + 5s) {
      sh.abandon = true;  // the ranks still connected belong to unreachable hosts
    }
    if (opts.status && Clock::now() - last_status >= 200ms) {
      last_status = Clock::now();
      opts.status(fmt::format("{}: {}/{} running, {} exited, {} s{}", spec.name, running, world,
                              finished, since(t0).count() / 1000, ending_at ? " (ending)" : ""));
    }
    std::this_thread::sleep_for(20ms);
  }
  sampling = false;
  if (sampler.joinable()) sampler.join();
  for (auto& t : rank_threads) t.join();
  if (signaller.joinable()) signaller.join();
  outcome.cleanup_problems = on_every_host(
      control, [&](size_t h) { return cleanup_argv(dir_of(h)); }, opts.control_timeout,
      &sh.lost);
  outcome.ranks = sh.ranks;
  outcome.first_failed = sh.first_failed;
  outcome.duration = since(t0);
  if (outcome.code == ExitCode::kOk) {
    bool all_ok = std::all_of(outcome.ranks.begin(), outcome.ranks.end(),
                              [](const RankOutcome& o) { return o.exit_status == 0; });
    if (!all_ok) outcome.code = ExitCode::kJobFailed;
  }
  if (outcome.code == ExitCode::kOk && mpi && sh.launcher_status != 0) {
    outcome.code = ExitCode::kJobFailed;
    outcome.reason = fmt::format("every rank exited 0 but mpirun exited {}{}", sh.launcher_status,
                                 sh.launcher_last.empty() ? "" : ": " + sh.launcher_last);
  }
  if (outcome.code == ExitCode::kOk && util::interrupted()) outcome.code = ExitCode::kInterrupted;
  return outcome;
}

}  // namespace cc::launch
