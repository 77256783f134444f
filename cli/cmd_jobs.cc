// `clusterctl jobs`, `clusterctl logs JOB [--rank R] [-f]`, `clusterctl stop JOB`: launched jobs
// seen from any terminal, through their records (launch/job_state.h) and log files.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/hosts.h"
#include "launch/job_state.h"
#include "launch/output.h"
#include "launch/runner.h"
#include "remote/fan_out.h"
#include "remote/inventory.h"
#include "remote/local_executor.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"
#include "util/json_text.h"
#include "util/text.h"

#include <unistd.h>

namespace cc::cli {
namespace {

using util::ExitCode;
using namespace std::chrono_literals;

// `jobs --gc`: the janitor on the chosen hosts (default: every host of this machine's job
// records), as a launch to them runs it. A record's hosts are reached through its lab (the
// record's `lab`, as launch wrote it) unless --lab or --inventory chooses the cluster, so lab
// jobs need no --lab. A record naming a host that its lab's inventory (or the SSH config)
// does not know, such as one of a job that never started, is skipped
// with one warning naming it and the host: the other hosts are still cleaned, and only a host
// that could have been cleaned and was not (no answer) makes the exit status non-zero.
//
// A record whose lab is gone (this state directory has no lab of its name: `lab down` removed
// it, and its hosts with it) has no host left to reach: it gets one line, not one per host. A
// lab's hosts share this machine's /tmp, where the job directories were, so the janitor runs
// here instead; `jobs --forget JOB` drops the record.
ExitCode run_gc(const Context& ctx, const std::string& hosts_spec,
                const std::vector<launch::JobRecord>& jobs) {
  std::vector<std::unique_ptr<remote::Executor>> executors;
  if (!hosts_spec.empty()) {
    auto chosen = make_executors(ctx.global, hosts_spec);
    if (!chosen) {
      fmt::print(stderr, "clusterctl jobs --gc: {}\n", chosen.error().message);
      return chosen.error().code;
    }
    executors = std::move(*chosen);
  } else {
    // The cluster of each record's hosts: its lab ("": the one the global options choose).
    const bool cluster_given = !ctx.global.lab.empty() || !ctx.global.inventory.empty();
    auto cluster_of = [&](const launch::JobRecord& j) {
      return cluster_given ? std::string() : j.lab;
    };
    auto lab_gone = [&](const launch::JobRecord& j) {
      std::error_code ec;
      return !cluster_of(j).empty() &&
             !std::filesystem::exists(remote::lab_dir(j.lab) / "inventory.yaml", ec);
    };
    std::map<std::string, std::set<std::string>> names;  // cluster -> hosts
    std::vector<const launch::JobRecord*> gone;          // records whose lab is gone
    for (const auto& j : jobs) {
      if (j.hosts.empty()) continue;
      if (lab_gone(j)) {
        gone.push_back(&j);
      } else {
        names[cluster_of(j)].insert(j.hosts.begin(), j.hosts.end());
      }
    }
    for (const auto* j : gone) {
      fmt::print(stderr,
                 "clusterctl jobs --gc: job record {}: its lab '{}' is gone, and its hosts with "
                 "it; what the job left in /tmp (this machine's, which a lab's hosts share) is "
                 "cleaned here; `clusterctl jobs --forget {}` drops the record\n",
                 j->id, j->lab, j->id);
    }
    if (!gone.empty()) executors.push_back(std::make_unique<remote::LocalExecutor>("local"));
    if (names.empty() && gone.empty()) {
      fmt::print(stderr, "clusterctl jobs --gc: no job records name a host: give --hosts\n");
      return ExitCode::kUsage;
    }
    std::map<std::pair<std::string, std::string>, std::string> skipped;  // why not known
    for (const auto& [cluster, hosts] : names) {
      GlobalOptions g = ctx.global;
      if (!cluster.empty()) {
        g.lab = cluster;
        g.inventory.clear();
      }
      std::string spec;
      for (const auto& n : hosts) {
        auto unknown = host_problems(g, {n});
        if (!unknown && cluster.empty()) {
          fmt::print(stderr, "clusterctl jobs --gc: {}\n", unknown.error().message);
          return unknown.error().code;
        }
        if (!unknown) {  // the record's lab is gone (`lab down`) or unreadable
          skipped[{cluster, n}] = unknown.error().message;
        } else if (unknown->empty()) {
          spec += (spec.empty() ? "" : ",") + n;
        } else {
          skipped[{cluster, n}] = unknown->front();
        }
      }
      if (spec.empty()) continue;
      auto chosen = make_executors(g, spec);
      if (!chosen) {
        fmt::print(stderr, "clusterctl jobs --gc: {}\n", chosen.error().message);
        return chosen.error().code;
      }
      for (auto& e : *chosen) executors.push_back(std::move(e));
    }
    for (const auto& j : jobs) {
      std::vector<std::string> why;
      std::set<std::string> seen;
      for (const auto& h : j.hosts) {
        auto it = skipped.find({cluster_of(j), h});
        if (it != skipped.end() && seen.insert(h).second) why.push_back(it->second);
      }
      if (why.empty()) continue;
      std::string text;
      for (const auto& w : why) text += (text.empty() ? "" : "; ") + w;
      fmt::print(stderr,
                 "clusterctl jobs --gc: warning: job record {} ({}): {}: {} skipped (a job "
                 "that never started there left nothing to clean; for another cluster's hosts "
                 "give --lab NAME or --inventory FILE; or delete the record)\n",
                 j.id, (launch::jobs_dir() / (j.id + ".json")).string(), text,
                 why.size() == 1 ? "that host was" : "those hosts were");
    }
    if (executors.empty()) {
      fmt::print("0 job directories of launchers that are gone removed\n");
      return ExitCode::kOk;
    }
  }
  std::vector<remote::Executor*> raw;
  for (auto& e : executors) raw.push_back(e.get());
  std::vector<std::vector<std::string>> removed(raw.size());
  std::vector<std::string> silent(raw.size());
  remote::for_each_host(
      raw, "gc",
      [&](size_t i) {
        remote::RunOptions ro;
        ro.timeout = 15s;
        auto probe = raw[i]->run(remote::Command{{"true"}}, ro);
        if (!probe || probe->timed_out) {
          silent[i] = probe ? raw[i]->host() + ": no answer" : probe.error().message;
          return;
        }
        removed[i] = launch::sweep_leftovers(*raw[i], 15s);
      },
      ctx.style);
  size_t n = 0;
  for (const auto& r : removed) {
    for (const auto& d : r) fmt::print("removed {}\n", d);
    n += r.size();
  }
  fmt::print("{} of launchers that are gone removed\n",
             util::plural(n, "job directory", "job directories"));
  bool unreachable = false;
  for (const auto& s : silent) {
    if (s.empty()) continue;
    fmt::print(stderr, "clusterctl jobs --gc: {}\n", s);
    unreachable = true;
  }
  return unreachable ? ExitCode::kUnreachable : ExitCode::kOk;
}

ExitCode run_forget(const std::vector<std::string>& ids) {
  ExitCode rc = ExitCode::kOk;
  for (const auto& id : ids) {
    if (auto st = launch::forget_job(id); !st) {
      fmt::print(stderr, "clusterctl jobs --forget: {}\n", st.error().message);
      rc = util::worst(rc, st.error().code);
    } else {
      fmt::print("forgot job record {} (its logs are kept)\n", id);
    }
  }
  return rc;
}

ExitCode run_jobs(const Context& ctx, bool gc, const std::string& gc_hosts) {
  auto listed = launch::list_jobs();
  if (!listed) {
    fmt::print(stderr, "clusterctl jobs: {}\n", listed.error().message);
    return listed.error().code;
  }
  const auto& jobs = *listed;
  if (gc) return run_gc(ctx, gc_hosts, jobs);
  if (ctx.global.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& j : jobs) {
      out.push_back({{"id", j.id},
                     {"name", j.name},
                     {"state", launch::to_string(j.live_state())},
                     {"exit_code", j.exit_code ? nlohmann::json(*j.exit_code) : nlohmann::json()},
                     {"started_at", j.started_at},
                     {"ranks", j.world_size},
                     {"pid", j.pid},
                     {"logs", j.logs},
                     {"lab", j.lab.empty() ? nlohmann::json() : nlohmann::json(j.lab)},
                     {"reason", j.why().empty() ? nlohmann::json() : nlohmann::json(j.why())}});
    }
    fmt::print("{}\n", util::json_text(out, 2));
    return ExitCode::kOk;
  }
  if (jobs.empty()) {
    fmt::print("no jobs (records in {})\n", launch::jobs_dir().string());
    return ExitCode::kOk;
  }
  // `why` last: it is the one column of free length (the logs path comes before it).
  fmt::print("{:<40}  {:<11}  {:>4}  {:>5}  {:<20}  {}  {}\n", "job", "state", "exit", "ranks",
             "started", "logs", "why");
  for (const auto& j : jobs) {
    const std::string why = j.why();
    fmt::print("{:<40}  {:<11}  {:>4}  {:>5}  {:<20}  {}  {}\n", j.id,
               launch::to_string(j.live_state()), j.exit_code ? std::to_string(*j.exit_code) : "-",
               j.world_size, j.started_at, j.logs, why.empty() ? "-" : why);
  }
  const bool any_failed = std::any_of(jobs.begin(), jobs.end(), [](const launch::JobRecord& j) {
    const launch::JobState st = j.live_state();
    return st == launch::JobState::kFailed || st == launch::JobState::kLost;
  });
  if (any_failed) {
    fmt::print(stderr, "the whole story of a failed job: `clusterctl logs JOB` ends with its "
                       "summary\n");
  }
  return ExitCode::kOk;
}

struct LogsCli {
  std::string job;
  int rank = -1;
  bool follow = false;
};

// What starts each line of `rank`: "[R host] " when several ranks are shown, else nothing.
std::string line_prefix(const launch::JobRecord& j, const std::vector<int>& ranks, int rank) {
  return ranks.size() > 1 ? launch::rank_prefix(rank, j.hosts[static_cast<size_t>(rank)]) : "";
}

// Where `logs` is in each rank log: the bytes shown so far, the line not yet ended, and
// whether the path was named as one that cannot be read (once, then skipped).
struct LogSlot {
  std::filesystem::path path;
  off_t offset = 0;
  std::string partial;
  bool refused = false;
};

// Prints what was added to each log since the last call, a piece at a time; returns whether
// anything was. Logs are read under the file rule (util::open_regular_file): a FIFO, device or
// directory put in a log's place is named once on stderr and skipped, never waited on.
bool print_new(const launch::JobRecord& j, const std::vector<int>& ranks,
               std::vector<LogSlot>& slots) {
  bool any = false;
  for (size_t slot = 0; slot < slots.size(); ++slot) {
    LogSlot& s = slots[slot];
    if (s.refused) continue;
    const int rank = ranks[slot / 2];
    std::FILE* to = slot % 2 == 0 ? stdout : stderr;
    auto fd = util::open_regular_file(s.path);
    if (!fd) {
      std::error_code ec;
      if (!std::filesystem::exists(std::filesystem::symlink_status(s.path, ec))) continue;
      fmt::print(stderr, "clusterctl logs: rank {}'s log {}; skipped\n", rank,
                 fd.error().message);
      std::fflush(stderr);
      s.refused = true;
      continue;
    }
    char buf[64 * 1024];
    for (;;) {
      const ssize_t n = ::pread(fd->get(), buf, sizeof buf, s.offset);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      s.offset += static_cast<off_t>(n);
      any = true;
      s.partial.append(buf, static_cast<size_t>(n));
      size_t nl = 0;
      while ((nl = s.partial.find('\n')) != std::string::npos) {
        fmt::print(to, "{}{}\n", line_prefix(j, ranks, rank),
                   std::string_view(s.partial).substr(0, nl));
        s.partial.erase(0, nl + 1);
      }
      std::fflush(to);
    }
  }
  return any;
}

// A last line without a newline, once the job has ended (nothing more will follow it).
void flush_partial(const launch::JobRecord& j, const std::vector<int>& ranks,
                   std::vector<LogSlot>& slots) {
  for (size_t slot = 0; slot < slots.size(); ++slot) {
    if (slots[slot].partial.empty()) continue;
    std::FILE* to = slot % 2 == 0 ? stdout : stderr;
    fmt::print(to, "{}{}\n", line_prefix(j, ranks, ranks[slot / 2]), slots[slot].partial);
    slots[slot].partial.clear();
  }
  std::fflush(stdout);
}

// The end of a finished job's logs: its summary (LOGS/JOBID/summary.txt: the table and why it
// failed, as launch printed it) on stderr, or, when there is none, what is known and why not.
void show_outcome(const launch::JobRecord& j) {
  const std::filesystem::path file = std::filesystem::path(j.logs) / "summary.txt";
  const launch::JobState state = j.live_state();
  // read_file: a regular file of bounded size only (the record names the directory; a FIFO
  // planted there must not hang `logs`).
  auto read = util::read_file(file);
  const std::string text = read ? *read : std::string();
  if (state == launch::JobState::kLost) {
    fmt::print(stderr,
               "clusterctl logs: job {} is lost: its launcher (pid {}) ended without recording "
               "the outcome (killed?); its ranks were ended by their watchdogs; `clusterctl jobs "
               "--gc` removes what it left on the hosts\n",
               j.id, j.pid);
  } else if (!text.empty()) {
    fmt::print(stderr, "{}{}", text, text.ends_with('\n') ? "" : "\n");
  } else {
    fmt::print(stderr,
               "clusterctl logs: job {} {} (exit {}); its summary {} is missing, so the reason "
               "is not known here\n",
               j.id, launch::to_string(state), j.exit_code ? std::to_string(*j.exit_code) : "-",
               file.string());
  }
  std::fflush(stderr);
}

// `logs -f`'s exit status once the job has ended: the job's own, as `launch` exited (0
// succeeded; 4 a rank failed; 2 or 3 it never started; 130 interrupted); 4 for a job whose
// launcher is gone without an outcome (lost). Never 0 for a job that did not succeed.
ExitCode outcome_code(const launch::JobRecord& j) {
  switch (j.live_state()) {
    case launch::JobState::kSucceeded:
      return ExitCode::kOk;
    case launch::JobState::kInterrupted:
      return ExitCode::kInterrupted;
    case launch::JobState::kFailed:
      if (j.exit_code && *j.exit_code != 0) return static_cast<ExitCode>(*j.exit_code);
      return ExitCode::kJobFailed;
    default:
      return ExitCode::kJobFailed;
  }
}

ExitCode run_logs(const LogsCli& o) {
  auto j = launch::find_job(o.job);
  if (!j) {
    fmt::print(stderr, "clusterctl logs: {}\n", j.error().message);
    return j.error().code;
  }
  std::vector<int> ranks;
  if (o.rank >= 0) {
    if (o.rank >= j->world_size) {
      fmt::print(stderr, "clusterctl logs: job {} has ranks 0..{}, not {}\n", j->id,
                 j->world_size - 1, o.rank);
      return ExitCode::kUsage;
    }
    ranks.push_back(o.rank);
  } else {
    for (int r = 0; r < j->world_size; ++r) ranks.push_back(r);
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(j->logs, ec)) {
    fmt::print(stderr,
               "clusterctl logs: job {}'s log directory {} no longer exists (deleted or moved): "
               "there are no logs to show; `clusterctl jobs` still lists the job's outcome\n",
               j->id, j->logs);
    return ExitCode::kUsage;
  }
  // Records of versions before per-run log directories (logs/NAME/JOBID): every run of a
  // job.yaml wrote its `logs:` directory afresh, so once a later run of the same directory
  // started, this job's own logs are gone. Say so instead of showing the later run's output
  // under this job's id.
  auto listed = launch::list_jobs();
  if (!listed) {
    fmt::print(stderr, "clusterctl logs: {}\n", listed.error().message);
    return listed.error().code;
  }
  for (const auto& later : *listed) {
    if (later.id != j->id && later.logs == j->logs && later.started_at > j->started_at) {
      fmt::print(stderr,
                 "clusterctl logs: job {}'s log directory {} now holds the logs of the later run "
                 "{} (every run of a job rewrites its `logs:` directory): job {}'s own output "
                 "is gone; `clusterctl logs {}` shows the later run's, and `clusterctl jobs` "
                 "still lists {}'s outcome\n",
                 j->id, j->logs, later.id, j->id, later.id, j->id);
      return ExitCode::kUsage;
    }
  }
  std::vector<LogSlot> slots(ranks.size() * 2);
  for (size_t slot = 0; slot < slots.size(); ++slot) {
    slots[slot].path = std::filesystem::path(j->logs) /
                       fmt::format("rank-{}.{}", ranks[slot / 2], slot % 2 == 0 ? "out" : "err");
  }
  print_new(*j, ranks, slots);
  launch::JobRecord last = *j;
  while (o.follow && !util::interrupted() && last.live_state() == launch::JobState::kRunning) {
    auto now = launch::find_job(j->id);
    std::this_thread::sleep_for(200ms);
    print_new(*j, ranks, slots);
    if (!now) break;  // its record was removed: nothing more to learn
    last = std::move(*now);
  }
  if (util::interrupted()) return ExitCode::kInterrupted;
  if (last.live_state() == launch::JobState::kRunning) return ExitCode::kOk;  // no -f
  flush_partial(*j, ranks, slots);
  show_outcome(last);
  return o.follow ? outcome_code(last) : ExitCode::kOk;
}

ExitCode run_stop(const std::string& id) {
  auto j = launch::find_job(id);
  if (!j) {
    fmt::print(stderr, "clusterctl stop: {}\n", j.error().message);
    return j.error().code;
  }
  if (j->state == launch::JobState::kRunning && j->pid_start.empty()) {
    fmt::print(stderr,
               "clusterctl stop: job {}'s record (from an older clusterctl) has no start time for "
               "its launcher (pid {}), so a reused pid cannot be told from it: not signalling; "
               "if `ps -p {}` shows its clusterctl, end it with `kill {}`\n",
               j->id, j->pid, j->pid, j->pid);
    return ExitCode::kCheckFailed;
  }
  if (j->state == launch::JobState::kRunning && !j->launcher_alive()) {
    fmt::print(stderr,
               "clusterctl stop: job {}'s launcher (pid {}) is gone; its record is stale "
               "(`clusterctl jobs` shows it as lost); nothing was signalled\n",
               j->id, j->pid);
    return ExitCode::kCheckFailed;
  }
  if (j->live_state() != launch::JobState::kRunning) {
    // What `stop` is for has happened already: not an error (a script may stop what it
    // started without knowing whether it ended).
    fmt::print(stderr, "clusterctl stop: job {} already ended ({}): nothing to stop\n", j->id,
               launch::to_string(j->live_state()));
    return ExitCode::kOk;
  }
  // The launching process ends the job as on Ctrl-C: SIGTERM, then SIGKILL after the grace
  // period, every job directory removed.
  if (::kill(static_cast<pid_t>(j->pid), SIGTERM) != 0) {
    fmt::print(stderr, "clusterctl stop: cannot signal pid {} of job {}\n", j->pid, j->id);
    return ExitCode::kCheckFailed;
  }
  fmt::print(stderr, "clusterctl stop: ending job {} (pid {})...\n", j->id, j->pid);
  const auto deadline = std::chrono::steady_clock::now() + 3600s;
  while (std::chrono::steady_clock::now() < deadline && !util::interrupted()) {
    auto now = launch::find_job(j->id);
    if (!now || now->live_state() != launch::JobState::kRunning) {
      fmt::print(stderr, "clusterctl stop: job {} ended ({})\n", j->id,
                 now ? launch::to_string(now->live_state()) : "gone");
      return ExitCode::kOk;
    }
    std::this_thread::sleep_for(100ms);
  }
  return util::interrupted() ? ExitCode::kInterrupted : ExitCode::kCheckFailed;
}

}  // namespace

void add_jobs_commands(CLI::App& app, Context& ctx) {
  struct JobsCli {
    bool gc = false;
    std::string hosts;
    std::vector<std::string> forget;
  };
  auto jo = std::make_shared<JobsCli>();
  CLI::App* jobs = app.add_subcommand("jobs", "List launched jobs, newest first (--json)");
  CLI::Option* gc_flag =
      jobs->add_flag("--gc", jo->gc,
                     "Remove the job directories (and upload temporaries in them) that launchers "
                     "from this machine left on hosts when they were killed, and say which");
  jobs->add_option("--hosts", jo->hosts,
                   "With --gc: the hosts to clean (as for exec; default: every host named in "
                   "this machine's job records, each reached through its record's lab unless "
                   "--lab or --inventory is given, skipping with a warning a record's host that "
                   "the inventory or SSH config does not know)");
  jobs->add_option("--forget", jo->forget,
                   "Drop these jobs' records (ids; not of a running job): e.g. of a lab that is "
                   "gone, which `--gc` names; their logs are kept")
      ->type_name("JOB")
      ->excludes(gc_flag);
  jobs->callback([&ctx, jo] {
    ctx.action = [&ctx, jo] {
      return jo->forget.empty() ? run_jobs(ctx, jo->gc, jo->hosts) : run_forget(jo->forget);
    };
  });

  auto lo = std::make_shared<LogsCli>();
  CLI::App* logs = app.add_subcommand(
      "logs",
      "Show a job's rank output from its log files; a job that has ended ends with its "
      "summary (why it failed) on stderr");
  logs->add_option("job", lo->job, "Job id, or a job name (its newest run)")->required();
  logs->add_option("--rank", lo->rank, "Only this rank, without prefix");
  logs->add_flag("-f,--follow", lo->follow,
                 "Keep printing new lines until the job ends, then its summary; exit as the job "
                 "did: 0 succeeded, 4 failed (2 or 3: it never started), 130 interrupted, 4 lost");
  logs->callback([&ctx, lo] { ctx.action = [lo] { return run_logs(*lo); }; });

  auto id = std::make_shared<std::string>();
  CLI::App* stop = app.add_subcommand(
      "stop",
      "End a running job as Ctrl-C would (SIGTERM, SIGKILL after its grace period; a second "
      "stop: SIGKILL at once); a job that already ended: nothing to do, exit 0");
  stop->add_option("job", *id, "Job id, or a job name (its newest run)")->required();
  stop->callback([&ctx, id] { ctx.action = [id] { return run_stop(*id); }; });
}

}  // namespace cc::cli
