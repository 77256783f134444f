// `clusterctl jobs`, `clusterctl logs JOB [--rank R] [-f]`, `clusterctl stop JOB`: launched jobs
// seen from any terminal, through their records (launch/job_state.h) and log files.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/hosts.h"
#include "cli/options.h"
#include "launch/job_state.h"
#include "launch/output.h"
#include "launch/runner.h"
#include "remote/fan_out.h"
#include "remote/inventory.h"
#include "remote/local_executor.h"
#include "util/address.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"
#include "util/json_text.h"
#include "util/text.h"

#include <unistd.h>

namespace cc::cli {
namespace {

using util::ExitCode;
using namespace std::chrono_literals;

// "a, b, c and 21 more": the first few ids of a group of records, for one line per group.
std::string some_ids(const std::vector<std::string>& ids) {
  constexpr std::size_t kShown = 5;
  std::string out;
  for (std::size_t i = 0; i < ids.size() && i < kShown; ++i) out += (i ? ", " : "") + ids[i];
  if (ids.size() > kShown) out += fmt::format(" and {} more", ids.size() - kShown);
  return out;
}

// How `jobs --gc` reaches a record's hosts: the lab, or else the inventory, and the SSH config
// its job ran with (launch records them); all "" for the cluster the global options choose.
struct Reach {
  std::string lab;
  std::string inventory;
  std::string ssh_config;
  bool operator==(const Reach&) const = default;
  bool operator<(const Reach& o) const {
    return std::tie(lab, inventory, ssh_config) < std::tie(o.lab, o.inventory, o.ssh_config);
  }
};

// The record's job may have run on its hosts (and left a directory there): it is not one that
// never started (failed or interrupted before any rank had an end status).
bool may_have_run(const launch::JobRecord& j) {
  const launch::JobState st = j.live_state();
  return !j.rank_status.empty() || st == launch::JobState::kSucceeded ||
         st == launch::JobState::kRunning || st == launch::JobState::kLost;
}

// `jobs --gc`: the janitor on the chosen hosts (default: every host of this machine's job
// records), as a launch to them runs it. A record's hosts are reached as its job reached them
// (the record's `lab`, else its `inventory`, and its `ssh_config`, as launch wrote them) unless
// --lab or --inventory chooses the cluster (-F: the SSH config), so lab and inventory jobs need
// no options. A record naming a host that its inventory (or the SSH config) does not know is
// skipped with a warning naming it and the host, records of one cause in one line: the other
// hosts are still cleaned, and only a host that could have been cleaned and was not (no
// answer) makes the exit status non-zero. The warning says that a job that never started left
// nothing there only of a record whose job never started.
//
// A record whose lab is gone (this state directory has no lab of its name: `lab down` removed
// it, and its hosts with it) has no host left to reach: the records of one such lab get one
// line, not one per record or host. A lab's hosts share this machine's /tmp, where the job
// directories were, so the janitor runs here instead; `jobs --forget JOB` (or
// `--forget-ended`) drops the records.
//
// A record's lab host that does not answer (its lab is down but for its directory, or its sshd
// was stopped: often another user's lab on a shared machine) is no host the operator asked
// for by name: it is named on stderr, and since its job directories are in this machine's
// /tmp, the janitor runs here instead; only a host named with --hosts, or of an inventory,
// that does not answer makes the exit status 3.
ExitCode run_gc(const Context& ctx, const std::string& hosts_spec,
                const std::vector<launch::JobRecord>& jobs) {
  std::vector<std::unique_ptr<remote::Executor>> executors;
  std::vector<std::string> lab_of;  // per executor: the lab it reaches, when from a record
  // Per executor: the records (id, name) of jobs that ran on its host, when from records.
  std::vector<std::vector<std::pair<std::string, std::string>>> records_of;
  if (!hosts_spec.empty()) {
    auto chosen = make_executors(ctx.global, hosts_spec);
    if (!chosen) {
      fmt::print(stderr, "clusterctl jobs --gc: {}\n", chosen.error().message);
      return chosen.error().code;
    }
    executors = std::move(*chosen);
  } else {
    const bool cluster_given = !ctx.global.lab.empty() || !ctx.global.inventory.empty();
    auto reach_of = [&](const launch::JobRecord& j) {
      Reach r;
      if (!cluster_given) {
        r.lab = j.lab;
        if (j.lab.empty()) r.inventory = j.inventory;
      }
      if (ctx.global.ssh_config.empty()) r.ssh_config = j.ssh_config;
      return r;
    };
    auto lab_gone = [&](const launch::JobRecord& j) {
      const Reach r = reach_of(j);
      std::error_code ec;
      return !r.lab.empty() &&
             !std::filesystem::exists(remote::lab_dir(r.lab) / "inventory.yaml", ec);
    };
    std::map<Reach, std::set<std::string>> names;          // hosts per way to reach them
    std::map<std::string, std::vector<std::string>> gone;  // lab -> ids of its records
    // The records (id, name) naming each host, per way to reach it (host_key of the name).
    std::map<std::pair<Reach, std::string>, std::vector<std::pair<std::string, std::string>>>
        records_naming;
    bool never_started = false;
    for (const auto& j : jobs) {
      if (j.hosts.empty()) continue;
      // Nothing to collect: reaching its hosts could only fail (a launch that failed because
      // a host cannot be reached leaves such a record) and fail every later gc with it.
      if (!may_have_run(j)) {
        never_started = true;
        continue;
      }
      if (lab_gone(j)) {
        gone[j.lab].push_back(j.id);
      } else {
        const Reach r = reach_of(j);
        names[r].insert(j.hosts.begin(), j.hosts.end());
        std::set<std::string> keys;  // a record naming one host twice is listed once
        for (const auto& h : j.hosts) {
          if (keys.insert(util::host_key(h)).second) {
            records_naming[{r, util::host_key(h)}].emplace_back(j.id, j.name);
          }
        }
      }
    }
    for (const auto& [lab, ids] : gone) {
      if (ids.size() == 1) {
        fmt::print(stderr,
                   "clusterctl jobs --gc: job record {}: its lab '{}' is gone, and its hosts "
                   "with it; what the job left in /tmp (this machine's, which a lab's hosts "
                   "share) is cleaned here; `clusterctl jobs --forget {}` drops the record\n",
                   ids.front(), lab, ids.front());
      } else {
        fmt::print(stderr,
                   "clusterctl jobs --gc: {} job records ({}) name lab '{}', which is gone, and "
                   "its hosts with it; what their jobs left in /tmp (this machine's, which a "
                   "lab's hosts share) is cleaned here; `clusterctl jobs --forget-ended` drops "
                   "the records of every job that has ended\n",
                   ids.size(), some_ids(ids), lab);
      }
    }
    if (!gone.empty()) executors.push_back(std::make_unique<remote::LocalExecutor>("local"));
    lab_of.resize(executors.size());
    records_of.resize(executors.size());
    if (names.empty() && gone.empty()) {
      if (never_started) {
        fmt::print("0 job directories of launchers that are gone removed\n");
        return ExitCode::kOk;
      }
      fmt::print(stderr, "clusterctl jobs --gc: no job records name a host: give --hosts\n");
      return ExitCode::kUsage;
    }
    std::map<std::pair<Reach, std::string>, std::string> skipped;  // why a host is not known
    for (const auto& [reach, hosts] : names) {
      GlobalOptions g = ctx.global;
      if (!reach.lab.empty()) {
        g.lab = reach.lab;
        g.inventory.clear();
      } else if (!reach.inventory.empty()) {
        g.inventory = reach.inventory;
        g.lab.clear();
      }
      if (!reach.ssh_config.empty()) g.ssh_config = reach.ssh_config;
      const bool own = reach == Reach{};  // the global options' cluster: its error is fatal
      std::string spec;
      std::set<std::string> keys;  // one host under two spellings in the records is one host
      for (const auto& n : hosts) {
        if (!keys.insert(util::host_key(n)).second) continue;
        auto unknown = host_problems(g, {n});
        if (!unknown && own) {
          fmt::print(stderr, "clusterctl jobs --gc: {}\n", unknown.error().message);
          return unknown.error().code;
        }
        if (!unknown) {  // the record's inventory is gone or unreadable
          skipped[{reach, n}] = unknown.error().message;
        } else if (unknown->empty()) {
          spec += (spec.empty() ? "" : ",") + n;
        } else {
          skipped[{reach, n}] = unknown->front();
        }
      }
      if (spec.empty()) continue;
      auto chosen = make_executors(g, spec);
      if (!chosen) {
        fmt::print(stderr, "clusterctl jobs --gc: {}\n", chosen.error().message);
        return chosen.error().code;
      }
      for (auto& e : *chosen) {
        std::vector<std::pair<std::string, std::string>> named_by;
        if (auto it = records_naming.find({reach, util::host_key(e->host())});
            it != records_naming.end()) {
          named_by = it->second;
        }
        records_of.push_back(std::move(named_by));
        executors.push_back(std::move(e));
        lab_of.push_back(g.lab);
      }
    }
    // One warning per cause: the records whose skipped hosts have the same reasons share a
    // line (records of jobs that never started were left out above).
    std::map<std::string, std::vector<std::string>> warned;
    std::map<std::string, std::size_t> host_count;
    for (const auto& j : jobs) {
      if (!may_have_run(j)) continue;  // nothing to collect, see above
      std::vector<std::string> why;
      std::set<std::string> seen;
      for (const auto& h : j.hosts) {
        auto it = skipped.find({reach_of(j), h});
        if (it != skipped.end() && seen.insert(h).second) why.push_back(it->second);
      }
      if (why.empty()) continue;
      std::string text;
      for (const auto& w : why) text += (text.empty() ? "" : "; ") + w;
      warned[text].push_back(j.id);
      host_count[text] = why.size();
    }
    for (const auto& [text, ids] : warned) {
      const std::string records =
          ids.size() == 1 ? fmt::format("job record {} ({})", ids.front(),
                                        (launch::jobs_dir() / (ids.front() + ".json")).string())
                          : fmt::format("{} job records ({}, in {})", ids.size(), some_ids(ids),
                                        launch::jobs_dir().string());
      const std::string drop = ids.size() == 1
                                   ? fmt::format("`clusterctl jobs --forget {}`", ids.front())
                                   : std::string("`clusterctl jobs --forget-ended`");
      const std::string advice = fmt::format(
          "the job ran there and may have left a job directory: give the --lab NAME or "
          "--inventory FILE (or -F FILE) it ran with to clean it; {} drops the record{}",
          drop, ids.size() == 1 ? "" : "s");
      fmt::print(stderr, "clusterctl jobs --gc: warning: {}: {}: {} skipped ({})\n", records,
                 text, host_count[text] == 1 ? "that host was" : "those hosts were", advice);
    }
    if (executors.empty()) {
      fmt::print("0 job directories of launchers that are gone removed\n");
      return ExitCode::kOk;
    }
  }
  lab_of.resize(executors.size());
  records_of.resize(executors.size());
  std::vector<remote::Executor*> raw;
  for (auto& e : executors) raw.push_back(e.get());
  std::vector<std::vector<std::string>> removed(raw.size());
  std::vector<std::string> silent(raw.size());
  auto sweep = [&](size_t i) {
    remote::RunOptions ro;
    ro.timeout = 15s;
    auto probe = raw[i]->run(remote::Command{{"true"}}, ro);
    if (!probe || probe->timed_out) {
      silent[i] = probe ? raw[i]->host() + ": no answer" : probe.error().message;
      return;
    }
    removed[i] = launch::sweep_leftovers(*raw[i], 15s);
  };
  remote::for_each_host(raw, "gc", sweep, ctx.style);
  // A record's lab host that did not answer: the lab's hosts share this machine's /tmp, where
  // the janitor runs instead (unless it ran here already).
  std::map<std::string, std::vector<std::string>> silent_lab;  // lab -> its silent hosts
  for (size_t i = 0; i < raw.size(); ++i) {
    if (!silent[i].empty() && !lab_of[i].empty()) silent_lab[lab_of[i]].push_back(raw[i]->host());
  }
  const bool local_ran = std::any_of(raw.begin(), raw.end(), [](const remote::Executor* e) {
    return e->host() == "local";
  });
  if (!silent_lab.empty() && !local_ran) {
    executors.push_back(std::make_unique<remote::LocalExecutor>("local"));
    raw.push_back(executors.back().get());
    lab_of.emplace_back();
    removed.emplace_back();
    silent.emplace_back();
    sweep(raw.size() - 1);
  }
  size_t n = 0;
  for (const auto& r : removed) {
    for (const auto& d : r) fmt::print("removed {}\n", d);
    n += r.size();
  }
  fmt::print("{} of launchers that are gone removed\n",
             util::plural(n, "job directory", "job directories"));
  bool unreachable = false;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (silent[i].empty()) continue;
    // Which records brought the host in: a host that is gone for good (or a record's wrong
    // user) fails every gc until its record is dropped.
    std::string why;
    const auto& recs = records_of[i];
    if (lab_of[i].empty() && recs.size() == 1) {
      const auto& [id, job_name] = recs.front();
      why = fmt::format(
          "; job record {}{} names {}: once its job directory there is cleaned, or if the host "
          "will not be back, `clusterctl jobs --forget {}` drops the record",
          id, job_name.empty() ? "" : fmt::format(" (job '{}')", job_name), raw[i]->host(), id);
    } else if (lab_of[i].empty() && !recs.empty()) {
      std::vector<std::string> ids;
      for (const auto& r : recs) ids.push_back(r.first);
      why = fmt::format(
          "; {} job records ({}) name {}: once their job directories there are cleaned, or if "
          "the host will not be back, `clusterctl jobs --forget ID` drops a record, `clusterctl "
          "jobs --forget-ended` those of every job that has ended",
          recs.size(), some_ids(ids), raw[i]->host());
    }
    fmt::print(stderr, "clusterctl jobs --gc: {}{}{}\n",
               lab_of[i].empty() ? "" : "skipped: ", silent[i], why);
    unreachable = unreachable || lab_of[i].empty();
  }
  for (const auto& [lab, hosts] : silent_lab) {
    fmt::print(stderr,
               "clusterctl jobs --gc: lab '{}': {} did not answer (the lab is down, or {} "
               "sshd stopped: `clusterctl lab status --name {}`); a lab's hosts share this "
               "machine's /tmp, where their job directories are, so it was cleaned here; not "
               "counted as unreachable (exit 3 is for a host named with --hosts or of an "
               "inventory)\n",
               lab, fmt::join(hosts, ", "), hosts.size() == 1 ? "its" : "their", lab);
  }
  return unreachable ? ExitCode::kUnreachable : ExitCode::kOk;
}

// --forget JOB...: each a job's id or the name of one record (launch::NameUse::kOnlyRecord:
// dropping is not undone, so a name that several records share is refused, naming them).
ExitCode run_forget(const std::vector<std::string>& given) {
  ExitCode rc = ExitCode::kOk;
  for (const auto& job : given) {
    auto listed = launch::list_jobs();
    if (!listed) {
      fmt::print(stderr, "clusterctl jobs --forget: {}\n", listed.error().message);
      return listed.error().code;
    }
    auto rec = launch::resolve_job(*listed, job, launch::NameUse::kOnlyRecord, "jobs --forget");
    util::Status st = rec ? launch::forget_job(rec->id) : util::Status(rec.error());
    if (!st) {
      fmt::print(stderr, "clusterctl jobs --forget: {}\n", st.error().message);
      rc = util::worst(rc, st.error().code);
    } else {
      fmt::print("forgot job record {} (its logs are kept)\n", rec->id);
    }
  }
  return rc;
}

// --forget-ended: drops the record of every job that has ended (succeeded, failed,
// interrupted, or lost: its launcher gone), keeping those of running jobs. The logs are kept.
ExitCode run_forget_ended() {
  auto listed = launch::list_jobs();
  if (!listed) {
    fmt::print(stderr, "clusterctl jobs --forget-ended: {}\n", listed.error().message);
    return listed.error().code;
  }
  ExitCode rc = ExitCode::kOk;
  std::size_t forgot = 0, running = 0;
  for (const auto& j : *listed) {
    if (j.live_state() == launch::JobState::kRunning) {
      ++running;
      continue;
    }
    if (auto st = launch::forget_job(j.id); !st) {
      fmt::print(stderr, "clusterctl jobs --forget-ended: {}\n", st.error().message);
      rc = util::worst(rc, st.error().code);
    } else {
      ++forgot;
    }
  }
  fmt::print("forgot {} job record{} of jobs that have ended (their logs are kept){}\n", forgot,
             forgot == 1 ? "" : "s",
             running == 0 ? "" : fmt::format("; kept {} of running jobs", running));
  return rc;
}

// How many records `jobs` lists without --all: the newest, and every running job besides.
constexpr std::size_t kJobsShown = 20;

ExitCode run_jobs(const Context& ctx, bool gc, const std::string& gc_hosts, bool all) {
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
  std::size_t hidden = 0;
  bool any_failed = false;  // shown; only a failed job: a lost one has no summary
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const launch::JobRecord& j = jobs[i];
    const launch::JobState state = j.live_state();
    if (!all && i >= kJobsShown && state != launch::JobState::kRunning) {
      ++hidden;
      continue;
    }
    any_failed = any_failed || state == launch::JobState::kFailed;
    const std::string why = j.why();
    fmt::print("{:<40}  {:<11}  {:>4}  {:>5}  {:<20}  {}  {}\n", j.id, launch::to_string(state),
               j.exit_code ? std::to_string(*j.exit_code) : "-", j.world_size, j.started_at,
               j.logs, why.empty() ? "-" : why);
  }
  if (hidden > 0) {
    fmt::print(stderr,
               "{} not shown (the newest {} and every running job are): `clusterctl jobs "
               "--all` lists every one; `clusterctl jobs --forget-ended` drops the records of "
               "jobs that have ended\n",
               util::plural(hidden, "older job", "older jobs"), kJobsShown);
  }
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

// Where `logs` is in each rank log: the bytes shown so far, the line not yet ended (cut as
// launch shows lines: a line longer than 64 KiB in pieces, so memory stays bounded), and
// whether the path was named as one that cannot be read (once, then skipped).
struct LogSlot {
  std::filesystem::path path;
  off_t offset = 0;
  launch::LineCutter lines;
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
      s.lines.feed(std::string_view(buf, static_cast<size_t>(n)), [&](std::string_view line, bool) {
        fmt::print(to, "{}{}\n", line_prefix(j, ranks, rank), line);
      });
      util::flush_output(to);
    }
  }
  return any;
}

// A last line without a newline, once the job has ended (nothing more will follow it).
void flush_partial(const launch::JobRecord& j, const std::vector<int>& ranks,
                   std::vector<LogSlot>& slots) {
  for (size_t slot = 0; slot < slots.size(); ++slot) {
    std::FILE* to = slot % 2 == 0 ? stdout : stderr;
    slots[slot].lines.finish([&](std::string_view line, bool) {
      fmt::print(to, "{}{}\n", line_prefix(j, ranks, ranks[slot / 2]), line);
    });
  }
  util::flush_output(stdout);
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
    // A job that never started (no rank has an end status) has no table: its summary is why,
    // launch's message, which names no command; `logs` shows it as its own (summaries of older
    // versions begin with "clusterctl launch: ", which is not the command run here).
    std::string_view body = text;
    const bool never_started = j.rank_status.empty();
    constexpr std::string_view kOlderPrefix = "clusterctl launch: ";
    if (never_started && body.starts_with(kOlderPrefix)) body.remove_prefix(kOlderPrefix.size());
    fmt::print(stderr, "{}{}{}", never_started ? "clusterctl logs: " : "", body,
               body.ends_with('\n') ? "" : "\n");
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
// succeeded; 4 a rank failed; 1, 2 or 3 it never started; 130 interrupted); 4 for a job whose
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
  auto j = launch::find_job(o.job, launch::NameUse::kCurrentRun, "logs");
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
    if (later.id != j->id && later.logs == j->logs && later.started_us > j->started_us) {
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
    auto now = launch::find_job(j->id, launch::NameUse::kCurrentRun, "logs");
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
  auto j = launch::find_job(id, launch::NameUse::kCurrentRun, "stop");
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
    auto now = launch::find_job(j->id, launch::NameUse::kCurrentRun, "stop");
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
    bool forget_ended = false;
    bool all = false;
  };
  auto jo = std::make_shared<JobsCli>();
  CLI::App* jobs = app.add_subcommand("jobs", "List launched jobs, newest first (--json)");
  CLI::Option* gc_flag =
      jobs->add_flag("--gc", jo->gc,
                     "Remove the job directories (and upload temporaries in them) that launchers "
                     "from this machine left on hosts when they were killed, and say which");
  jobs->add_option("--hosts", jo->hosts,
                   "With --gc: the hosts to clean (as for exec; default: every host named in "
                   "this machine's job records, each reached as its job was, through the lab "
                   "or inventory and SSH config its record names, unless --lab or --inventory "
                   "is given, skipping with a warning a record's host that the inventory or SSH "
                   "config does not know)");
  CLI::Option* forget =
      jobs->add_option("--forget", jo->forget,
                       "Drop these jobs' records (ids, or a name that one record has; not of a "
                       "running job): e.g. of a lab that is gone, which `--gc` names; their logs "
                       "are kept")
          ->type_name("JOB")
          ->excludes(gc_flag);
  jobs->add_flag("--forget-ended", jo->forget_ended,
                 "Drop the records of every job that has ended (succeeded, failed, interrupted "
                 "or lost), keeping running jobs'; their logs are kept. Run --gc first: it "
                 "cleans the hosts the records name")
      ->excludes(gc_flag)
      ->excludes(forget);
  jobs->add_flag("--all", jo->all,
                 fmt::format("List every record; without it the newest {} and every running "
                             "job (--json always lists every one)",
                             kJobsShown))
      ->excludes(gc_flag)
      ->excludes(forget);
  jobs->callback([&ctx, jo] {
    ctx.action = [&ctx, jo] {
      if (jo->forget_ended) return run_forget_ended();
      return jo->forget.empty() ? run_jobs(ctx, jo->gc, jo->hosts, jo->all)
                                : run_forget(jo->forget);
    };
  });

  auto lo = std::make_shared<LogsCli>();
  CLI::App* logs = app.add_subcommand(
      "logs",
      "Show a job's rank output from its log files; a job that has ended ends with its "
      "summary (why it failed) on stderr");
  logs->add_option("job", lo->job,
                   "Job id, or a job name: its run that is running, else its newest (a name "
                   "that several running runs share is refused, naming their ids)")
      ->required();
  logs->add_option("--rank", lo->rank, "Only this rank, without prefix")
      ->check(whole_number(0, std::numeric_limits<int>::max()))
      ->type_name("N");
  logs->add_flag("-f,--follow", lo->follow,
                 "Keep printing new lines until the job ends, then its summary; exit as the job "
                 "did: 0 succeeded, 4 failed (1, 2 or 3: it never started), 130 interrupted, 4 "
                 "lost");
  logs->callback([&ctx, lo] { ctx.action = [lo] { return run_logs(*lo); }; });

  auto id = std::make_shared<std::string>();
  CLI::App* stop = app.add_subcommand(
      "stop",
      "End a running job as Ctrl-C would (SIGTERM, SIGKILL after its grace period; a second "
      "stop: SIGKILL at once); a job that already ended: nothing to do, exit 0");
  stop->add_option("job", *id,
                   "Job id, or a job name: its run that is running (a name that several "
                   "running runs share is refused, naming their ids)")
      ->required();
  stop->callback([&ctx, id] { ctx.action = [id] { return run_stop(*id); }; });
}

}  // namespace cc::cli
