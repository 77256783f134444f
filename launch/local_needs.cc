#include "launch/local_needs.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "remote/quote.h"
#include "util/atomic_file.h"
#include "util/suggest.h"

namespace cc::launch {
namespace {

using util::ExitCode;

struct Found {
  int line = 0, column = 0;
  util::Error error;
};

// Why `src` cannot be uploaded; "" when it can.
std::string upload_problem(const std::filesystem::path& src) {
  std::error_code ec;
  const auto st = std::filesystem::status(src, ec);
  if (!std::filesystem::exists(st)) {
    return "no such file" + util::did_you_mean_file(src, src.filename());
  }
  if (!std::filesystem::is_regular_file(st)) return "not a regular file";
  if (::access(src.c_str(), R_OK) != 0) return "not readable";
  return "";
}

// `cluster:` naming a file that is not there: a typo of a file beside it ("did you mean"), or,
// for a cluster state, one still to be made by discovery. "" when the file exists.
std::string cluster_file_problem(const ClusterRef& c, std::string_view global) {
  namespace fs = std::filesystem;
  const fs::path path = c.value;
  std::error_code ec;
  if (fs::exists(path, ec) || ec) return "";  // there (or unknown: reading it will say)
  const std::string close = util::did_you_mean_file(path, path.filename());
  std::string make;
  if (close.empty() && c.kind == ClusterRef::Kind::kClusterState) {
    make = fmt::format(", or make it with `clusterctl{}{} discover -o {}`",
                       global.empty() ? "" : " ", global, remote::shell_quote_arg(path.string()));
  }
  return fmt::format(
      "cluster: {} {}: no such file{}: fix `cluster:` "
      "(relative paths are from the job file's directory){}",
      to_string(c.kind), path.string(), close, make);
}

}  // namespace

LocalProblems local_problems(const JobSpec& spec, std::string_view global) {
  std::vector<Found> found;
  LocalProblems out;
  if (spec.cluster && spec.cluster->kind != ClusterRef::Kind::kLab) {
    if (std::string problem = cluster_file_problem(*spec.cluster, global); !problem.empty()) {
      out.cluster_missing = true;
      found.push_back(
          {spec.cluster->line, spec.cluster->column,
           util::Error{ExitCode::kUsage,
                       fmt::format("{}: {}",
                                   job_file_at(spec, spec.cluster->line, spec.cluster->column),
                                   problem)}});
    }
  }
  for (const auto& up : spec.upload) {
    const std::string problem = upload_problem(up.src);
    if (problem.empty()) continue;
    found.push_back(
        {up.line, up.column,
         util::Error{ExitCode::kUsage,
                     fmt::format("{}: upload src {}: {}: build or copy the file there, or "
                                 "fix `src` (relative paths are from the job file's "
                                 "directory)",
                                 job_file_at(spec, up.line, up.column), up.src.string(),
                                 problem)}});
  }
  for (const auto& [name, src] : spec.secret_env) {
    if (src.kind == SecretSource::Kind::kEnv) {
      if (std::getenv(src.value.c_str()) != nullptr) continue;
      found.push_back({src.line, src.column,
                       util::Error{ExitCode::kUsage,
                                   fmt::format("{}: secret_env {}: the variable {} is not set in "
                                               "your environment; export it before launching",
                                               job_file_at(spec, src.line, src.column), name,
                                               src.value)}});
    } else if (auto text = util::read_file(src.value); !text) {
      // read_file's message names the file and why (missing, permission, a FIFO...).
      found.push_back({src.line, src.column,
                       util::Error{ExitCode::kUsage,
                                   fmt::format("{}: secret_env {}: cannot read the secret file: "
                                               "{}; create it, make it readable, or fix "
                                               "`from_file` (relative paths are from the job "
                                               "file's directory)",
                                               job_file_at(spec, src.line, src.column), name,
                                               text.error().message)}});
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  for (auto& f : found) out.errors.push_back(std::move(f.error));
  return out;
}

}  // namespace cc::launch
