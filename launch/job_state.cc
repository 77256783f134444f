#include "launch/job_state.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "remote/inventory.h"
#include "util/atomic_file.h"
#include "util/clock.h"
#include "util/json_text.h"
#include "util/process.h"
#include "util/state_dir.h"
#include "util/suggest.h"

namespace cc::launch {
namespace {

constexpr const char* kSchema = "clusterctl.job/1";

nlohmann::json to_json(const JobRecord& r) {
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t i = 0; i < r.hosts.size(); ++i) {
    nlohmann::json e{{"rank", i}, {"host", r.hosts[i]}};
    e["status"] = i < r.rank_status.size() ? nlohmann::json(r.rank_status[i]) : nlohmann::json();
    ranks.push_back(e);
  }
  nlohmann::json out = {{"schema", kSchema},
          {"id", r.id},
          {"name", r.name},
          {"job_file", r.job_file},
          {"pid", r.pid},
          {"pid_start", r.pid_start},
          {"state", to_string(r.state)},
          {"exit_code", r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json()},
          {"started_at", r.started_at},
          {"started_us", r.started_us},
          {"logs", r.logs},
          {"world_size", r.world_size},
          {"ranks", ranks}};
  if (!r.lab.empty()) out["lab"] = r.lab;
  if (!r.inventory.empty()) out["inventory"] = r.inventory;
  if (!r.ssh_config.empty()) out["ssh_config"] = r.ssh_config;
  if (!r.reason.empty()) out["reason"] = r.reason;
  return out;
}

// A path of a record, only when absolute (a record names files by their absolute paths).
std::string absolute_path(const std::string& text) {
  return std::filesystem::path(text).is_absolute() ? text : std::string();
}

std::optional<JobRecord> from_json(const nlohmann::json& j) {
  try {
    if (j.at("schema") != kSchema) return std::nullopt;
    JobRecord r;
    r.id = j.at("id");
    r.name = j.at("name");
    r.job_file = j.at("job_file");
    r.pid = j.at("pid");
    r.pid_start = j.value("pid_start", "");
    auto state = job_state_from(j.at("state").get<std::string>());
    if (!state || *state == JobState::kLost) return std::nullopt;
    r.state = *state;
    if (!j.at("exit_code").is_null()) r.exit_code = j.at("exit_code").get<int>();
    r.started_at = j.at("started_at");
    if (j.contains("started_us")) {
      r.started_us = j.at("started_us").get<std::int64_t>();
    } else if (auto t = util::parse_utc_iso(r.started_at)) {  // an older record: to the second
      r.started_us =
          std::chrono::duration_cast<std::chrono::microseconds>(t->time_since_epoch()).count();
    }
    r.logs = j.at("logs");
    r.world_size = j.at("world_size");
    const std::string lab = j.value("lab", "");
    if (!lab.empty() && remote::validate_lab_name(lab)) r.lab = lab;
    r.inventory = absolute_path(j.value("inventory", ""));
    r.ssh_config = absolute_path(j.value("ssh_config", ""));
    r.reason = j.value("reason", "");
    for (const auto& e : j.at("ranks")) {
      r.hosts.push_back(e.at("host"));
      if (!e.at("status").is_null()) r.rank_status.push_back(e.at("status"));
    }
    return r;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace

namespace {
constexpr std::pair<JobState, std::string_view> kStates[] = {
    {JobState::kRunning, "running"},
    {JobState::kSucceeded, "succeeded"},
    {JobState::kFailed, "failed"},
    {JobState::kInterrupted, "interrupted"},
    {JobState::kLost, "lost"}};
}  // namespace

std::string_view to_string(JobState s) {
  for (const auto& [state, name] : kStates) {
    if (state == s) return name;
  }
  return "?";
}

std::optional<JobState> job_state_from(std::string_view text) {
  for (const auto& [state, name] : kStates) {
    if (name == text) return state;
  }
  return std::nullopt;
}

std::string JobRecord::why() const {
  const JobState st = live_state();
  if (st == JobState::kLost) {
    return fmt::format("launcher (pid {}) gone without an outcome (killed?)", pid);
  }
  if (st == JobState::kRunning || st == JobState::kSucceeded) return "";
  if (!reason.empty()) return reason;
  for (size_t i = 0; i < rank_status.size(); ++i) {
    if (rank_status[i] != "exit 0") {
      return fmt::format("rank {}{} {}", i, i < hosts.size() ? " on " + hosts[i] : "",
                         rank_status[i]);
    }
  }
  return "";
}

JobState JobRecord::live_state() const {
  if (state != JobState::kRunning) return state;
  return launcher_alive() ? state : JobState::kLost;
}

bool JobRecord::launcher_alive() const {
  if (pid <= 0) return false;
  if (pid_start.empty()) return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
  return util::process_start_time(pid) == pid_start;
}

std::filesystem::path jobs_dir() {
  return util::state_dir() / "jobs";
}

util::Status save_job(const JobRecord& rec) {
  auto dir = util::private_state_dir("jobs");
  if (!dir) return dir.error();
  return util::write_file_atomic(*dir / (rec.id + ".json"), util::json_text(to_json(rec), 2) + "\n", 0600);
}

util::Result<std::vector<JobRecord>> list_jobs() {
  auto dir = util::private_state_dir("jobs");
  if (!dir) return dir.error();
  std::vector<JobRecord> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(*dir, ec)) {
    if (e.path().extension() != ".json") continue;
    auto text = util::read_file(e.path());
    if (!text) continue;
    auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) continue;
    if (auto r = from_json(j)) out.push_back(std::move(*r));
  }
  sort_newest_first(out);
  return out;
}

void sort_newest_first(std::vector<JobRecord>& jobs) {
  std::sort(jobs.begin(), jobs.end(), [](const JobRecord& a, const JobRecord& b) {
    return a.started_us != b.started_us ? a.started_us > b.started_us : a.id > b.id;
  });
}

util::Status forget_job(const std::string& id) {
  auto listed = list_jobs();
  if (!listed) return listed.error();
  const auto found =
      std::find_if(listed->begin(), listed->end(), [&](const JobRecord& j) { return j.id == id; });
  // The file is ID.json (save_job): an id that is not one plain file name names no record.
  if (found == listed->end() || std::filesystem::path(id).filename() != id || id == "." ||
      id == "..") {
    return util::error(util::ExitCode::kUsage,
                       fmt::format("no job record with the id '{}' in {}; `clusterctl jobs` "
                                   "lists them",
                                   id, jobs_dir().string()));
  }
  if (found->live_state() == JobState::kRunning) {
    return util::error(util::ExitCode::kUsage,
                       fmt::format("job {} is running (pid {}): its record stays; end it with "
                                   "`clusterctl stop {}` first",
                                   id, found->pid, id));
  }
  auto dir = util::private_state_dir("jobs");
  if (!dir) return dir.error();
  std::error_code ec;
  if (!std::filesystem::remove(*dir / (id + ".json"), ec) || ec) {
    return util::error(util::ExitCode::kUsage,
                       fmt::format("{}: cannot remove: {}", (*dir / (id + ".json")).string(),
                                   ec ? ec.message() : "it is gone"));
  }
  return {};
}

namespace {

// "ID (running, started 2026-11-30T23:30:53Z), ...": the runs a name could mean, newest first.
std::string runs_text(const std::vector<const JobRecord*>& runs) {
  std::string out;
  for (const JobRecord* j : runs) {
    out += fmt::format("{}{} ({}, started {})", out.empty() ? "" : ", ", j->id,
                       to_string(j->live_state()), j->started_at);
  }
  return out;
}

}  // namespace

util::Result<JobRecord> resolve_job(const std::vector<JobRecord>& jobs, const std::string& given,
                                    NameUse use, std::string_view command) {
  std::vector<const JobRecord*> named;  // newest first, as `jobs` is
  for (const auto& j : jobs) {
    if (j.id == given) return j;
  }
  for (const auto& j : jobs) {
    if (j.name == given) named.push_back(&j);
  }
  if (named.empty()) {
    std::string known;
    for (size_t i = 0; i < jobs.size() && i < 5; ++i) known += (i ? ", " : "") + jobs[i].id;
    // A typo of a job's name ("sleepyy") or of a run's id: the names first (what is usually
    // typed), newest first, so a tie goes to the job last run.
    std::vector<std::string> candidates;
    for (const auto& j : jobs) {
      if (std::find(candidates.begin(), candidates.end(), j.name) == candidates.end()) {
        candidates.push_back(j.name);
      }
    }
    for (const auto& j : jobs) candidates.push_back(j.id);
    return util::error(util::ExitCode::kUsage,
                       fmt::format("no job '{}' in {}{}; `clusterctl jobs` lists them{}", given,
                                   jobs_dir().string(), util::did_you_mean(given, candidates),
                                   known.empty() ? "" : " (recent: " + known + ")"));
  }
  if (named.size() == 1) return *named.front();
  if (use == NameUse::kOnlyRecord) {
    return util::error(util::ExitCode::kUsage,
                       fmt::format("{} job records have the name '{}': {}; give the id of the "
                                   "one to drop (`clusterctl {} ID`), or drop every ended job's "
                                   "record with `clusterctl jobs --forget-ended`",
                                   named.size(), given, runs_text(named), command));
  }
  std::vector<const JobRecord*> running;
  for (const JobRecord* j : named) {
    if (j->live_state() == JobState::kRunning) running.push_back(j);
  }
  if (running.size() == 1) return *running.front();
  if (running.size() > 1) {
    return util::error(
        util::ExitCode::kUsage,
        fmt::format("{} runs of job '{}' are running: {}; `clusterctl {}` takes one run: give "
                    "its id (`clusterctl {} {}`)",
                    running.size(), given, runs_text(running), command, command,
                    running.front()->id));
  }
  // None running: the newest run, unless the newest two cannot be told apart (records of an
  // older clusterctl hold their start only to the second).
  if (named[0]->started_us == named[1]->started_us) {
    std::vector<const JobRecord*> tied;
    for (const JobRecord* j : named) {
      if (j->started_us == named[0]->started_us) tied.push_back(j);
    }
    return util::error(
        util::ExitCode::kUsage,
        fmt::format("{} runs of job '{}' started in the same second, so which is the newest "
                    "is not known: {}; give the id of the one you mean (`clusterctl {} {}`)",
                    tied.size(), given, runs_text(tied), command, tied.front()->id));
  }
  return *named.front();
}

util::Result<JobRecord> find_job(const std::string& given, NameUse use, std::string_view command) {
  auto listed = list_jobs();
  if (!listed) return listed.error();
  return resolve_job(*listed, given, use, command);
}

}  // namespace cc::launch
