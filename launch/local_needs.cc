#include "launch/local_needs.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <tuple>

#include <fmt/format.h>
#include <unistd.h>

#include "util/atomic_file.h"

namespace cc::launch {
namespace {

using util::ExitCode;

struct Found {
  int line = 0, column = 0;
  util::Error error;
};

std::string at(const JobSpec& spec, int line, int column) {
  return fmt::format("{}:{}:{}", spec.source.string(), line, column);
}

// Why `src` cannot be uploaded; "" when it can.
std::string upload_problem(const std::filesystem::path& src) {
  std::error_code ec;
  const auto st = std::filesystem::status(src, ec);
  if (!std::filesystem::exists(st)) return "no such file";
  if (!std::filesystem::is_regular_file(st)) return "not a regular file";
  if (::access(src.c_str(), R_OK) != 0) return "not readable";
  return "";
}

}  // namespace

std::vector<util::Error> local_problems(const JobSpec& spec) {
  std::vector<Found> found;
  for (const auto& up : spec.upload) {
    const std::string problem = upload_problem(up.src);
    if (problem.empty()) continue;
    found.push_back({up.line, up.column,
                     util::Error{ExitCode::kUnreachable,
                                 fmt::format("{}: upload src {}: {}: nothing was started; build "
                                             "or copy the file there, or fix `src` (relative "
                                             "paths are from the job file's directory)",
                                             at(spec, up.line, up.column), up.src.string(),
                                             problem)}});
  }
  for (const auto& [name, src] : spec.secret_env) {
    if (src.kind == SecretSource::Kind::kEnv) {
      if (std::getenv(src.value.c_str()) != nullptr) continue;
      found.push_back({src.line, src.column,
                       util::Error{ExitCode::kUsage,
                                   fmt::format("{}: secret_env {}: the variable {} is not set in "
                                               "your environment; export it before launching",
                                               at(spec, src.line, src.column), name, src.value)}});
    } else if (auto text = util::read_file(src.value); !text) {
      // read_file's message names the file and why (missing, permission, a FIFO...).
      found.push_back({src.line, src.column,
                       util::Error{ExitCode::kUsage,
                                   fmt::format("{}: secret_env {}: cannot read the secret file: "
                                               "{}; create it, make it readable, or fix "
                                               "`from_file` (relative paths are from the job "
                                               "file's directory)",
                                               at(spec, src.line, src.column), name,
                                               text.error().message)}});
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  std::vector<util::Error> out;
  for (auto& f : found) out.push_back(std::move(f.error));
  return out;
}

util::ExitCode local_problems_code(const std::vector<util::Error>& problems) {
  const bool usage = std::any_of(problems.begin(), problems.end(), [](const util::Error& e) {
    return e.code == ExitCode::kUsage;
  });
  return usage ? ExitCode::kUsage : ExitCode::kUnreachable;
}

}  // namespace cc::launch
