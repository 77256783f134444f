// `clusterctl jobs`, `clusterctl logs JOB [--rank R] [-f]`, `clusterctl stop JOB`: launched jobs
// seen from any terminal, through their records (launch/job_state.h) and log files.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "launch/job_state.h"
#include "launch/output.h"
#include "util/interrupt.h"

namespace cc::cli {
namespace {

using util::ExitCode;
using namespace std::chrono_literals;

ExitCode run_jobs(const Context& ctx) {
  auto jobs = launch::list_jobs();
  if (ctx.global.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& j : jobs) {
      out.push_back({{"id", j.id},
                     {"name", j.name},
                     {"state", j.live_state()},
                     {"exit_code", j.exit_code ? nlohmann::json(*j.exit_code) : nlohmann::json()},
                     {"started_at", j.started_at},
                     {"ranks", j.world_size},
                     {"pid", j.pid},
                     {"logs", j.logs}});
    }
    fmt::print("{}\n", out.dump(2));
    return ExitCode::kOk;
  }
  if (jobs.empty()) {
    fmt::print("no jobs (records in {})\n", launch::jobs_dir().string());
    return ExitCode::kOk;
  }
  fmt::print("{:<40}  {:<11}  {:>4}  {:>5}  {:<20}  {}\n", "job", "state", "exit", "ranks",
             "started", "logs");
  for (const auto& j : jobs) {
    fmt::print("{:<40}  {:<11}  {:>4}  {:>5}  {:<20}  {}\n", j.id, j.live_state(),
               j.exit_code ? std::to_string(*j.exit_code) : "-", j.world_size, j.started_at,
               j.logs);
  }
  return ExitCode::kOk;
}

struct LogsCli {
  std::string job;
  int rank = -1;
  bool follow = false;
};

// Prints what was added to each log since the last call; returns whether anything was.
bool print_new(const launch::JobRecord& j, const std::vector<int>& ranks,
               std::vector<std::streamoff>& offsets, std::vector<std::string>& partial) {
  bool any = false;
  for (size_t i = 0; i < ranks.size(); ++i) {
    for (int fd = 1; fd <= 2; ++fd) {
      size_t slot = i * 2 + static_cast<size_t>(fd - 1);
      std::ifstream f(fmt::format("{}/rank-{}.{}", j.logs, ranks[i], fd == 1 ? "out" : "err"),
                      std::ios::binary);
      if (!f) continue;
      f.seekg(offsets[slot]);
      std::string chunk((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (chunk.empty()) continue;
      offsets[slot] += static_cast<std::streamoff>(chunk.size());
      any = true;
      std::string& text = partial[slot];
      text += chunk;
      size_t nl = 0;
      while ((nl = text.find('\n')) != std::string::npos) {
        std::string line = text.substr(0, nl);
        text.erase(0, nl + 1);
        std::FILE* to = fd == 1 ? stdout : stderr;
        std::string prefix =
            ranks.size() > 1 ? launch::rank_prefix(ranks[i], j.hosts[static_cast<size_t>(ranks[i])])
                             : "";
        fmt::print(to, "{}{}\n", prefix, line);
        std::fflush(to);
      }
    }
  }
  return any;
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
  // Every run of a job.yaml writes its `logs:` directory afresh: once a later run of the
  // same directory started, this job's own logs are gone. Say so instead of showing the
  // later run's output under this job's id.
  for (const auto& later : launch::list_jobs()) {
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
  std::vector<std::streamoff> offsets(ranks.size() * 2, 0);
  std::vector<std::string> partial(ranks.size() * 2);
  print_new(*j, ranks, offsets, partial);
  while (o.follow && !util::interrupted()) {
    auto now = launch::find_job(j->id);
    bool over = !now || now->live_state() != "running";
    std::this_thread::sleep_for(200ms);
    print_new(*j, ranks, offsets, partial);
    if (over) break;
  }
  return util::interrupted() ? ExitCode::kInterrupted : ExitCode::kOk;
}

ExitCode run_stop(const std::string& id) {
  auto j = launch::find_job(id);
  if (!j) {
    fmt::print(stderr, "clusterctl stop: {}\n", j.error().message);
    return j.error().code;
  }
  if (j->live_state() != "running") {
    fmt::print(stderr, "clusterctl stop: job {} is not running ({})\n", j->id, j->live_state());
    return ExitCode::kCheckFailed;
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
    if (!now || now->live_state() != "running") {
      fmt::print(stderr, "clusterctl stop: job {} ended ({})\n", j->id,
                 now ? now->live_state() : "gone");
      return ExitCode::kOk;
    }
    std::this_thread::sleep_for(100ms);
  }
  return util::interrupted() ? ExitCode::kInterrupted : ExitCode::kCheckFailed;
}

}  // namespace

void add_jobs_commands(CLI::App& app, Context& ctx) {
  CLI::App* jobs = app.add_subcommand("jobs", "List launched jobs, newest first (--json)");
  jobs->callback([&ctx] { ctx.action = [&ctx] { return run_jobs(ctx); }; });

  auto lo = std::make_shared<LogsCli>();
  CLI::App* logs = app.add_subcommand("logs", "Show a job's rank output from its log files");
  logs->add_option("job", lo->job, "Job id, or a job name (its newest run)")->required();
  logs->add_option("--rank", lo->rank, "Only this rank, without prefix");
  logs->add_flag("-f,--follow", lo->follow, "Keep printing new lines until the job ends");
  logs->callback([&ctx, lo] { ctx.action = [lo] { return run_logs(*lo); }; });

  auto id = std::make_shared<std::string>();
  CLI::App* stop = app.add_subcommand(
      "stop", "End a running job as Ctrl-C would (SIGTERM, SIGKILL after its grace period)");
  stop->add_option("job", *id, "Job id, or a job name (its newest run)")->required();
  stop->callback([&ctx, id] { ctx.action = [id] { return run_stop(*id); }; });
}

}  // namespace cc::cli
