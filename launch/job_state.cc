#include "launch/job_state.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/atomic_file.h"

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
  return {{"schema", kSchema},
          {"id", r.id},
          {"name", r.name},
          {"job_file", r.job_file},
          {"pid", r.pid},
          {"state", r.state},
          {"exit_code", r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json()},
          {"started_at", r.started_at},
          {"logs", r.logs},
          {"world_size", r.world_size},
          {"ranks", ranks}};
}

std::optional<JobRecord> from_json(const nlohmann::json& j) {
  try {
    if (j.at("schema") != kSchema) return std::nullopt;
    JobRecord r;
    r.id = j.at("id");
    r.name = j.at("name");
    r.job_file = j.at("job_file");
    r.pid = j.at("pid");
    r.state = j.at("state");
    if (!j.at("exit_code").is_null()) r.exit_code = j.at("exit_code").get<int>();
    r.started_at = j.at("started_at");
    r.logs = j.at("logs");
    r.world_size = j.at("world_size");
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

std::string JobRecord::live_state() const {
  if (state != "running") return state;
  if (pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM)) return state;
  return "lost";
}

std::filesystem::path jobs_dir() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  std::filesystem::path base;
  if (xdg != nullptr && *xdg != '\0') {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    base = std::filesystem::path(home != nullptr ? home : "/") / ".local" / "state";
  }
  return base / "clusterctl" / "jobs";
}

util::Status save_job(const JobRecord& rec) {
  return util::write_file_atomic(jobs_dir() / (rec.id + ".json"), to_json(rec).dump(2) + "\n",
                                 0600);
}

std::vector<JobRecord> list_jobs() {
  std::vector<JobRecord> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(jobs_dir(), ec)) {
    if (e.path().extension() != ".json") continue;
    auto text = util::read_file(e.path());
    if (!text) continue;
    auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) continue;
    if (auto r = from_json(j)) out.push_back(std::move(*r));
  }
  std::sort(out.begin(), out.end(), [](const JobRecord& a, const JobRecord& b) {
    return a.started_at != b.started_at ? a.started_at > b.started_at : a.id > b.id;
  });
  return out;
}

util::Result<JobRecord> find_job(const std::string& id) {
  auto jobs = list_jobs();
  for (const auto& j : jobs) {
    if (j.id == id) return j;
  }
  for (const auto& j : jobs) {
    if (j.name == id) return j;
  }
  std::string known;
  for (size_t i = 0; i < jobs.size() && i < 5; ++i) known += (i ? ", " : "") + jobs[i].id;
  return util::error(
      util::ExitCode::kUsage,
      fmt::format("no job '{}' in {}{}; `clusterctl jobs` lists them", id, jobs_dir().string(),
                  known.empty() ? "" : " (recent: " + known + ")"));
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace cc::launch
