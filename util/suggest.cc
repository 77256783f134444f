#include "util/suggest.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace cc::util {

std::string closest_file_name(std::string_view typed, const std::vector<std::string>& names) {
  // "nothere.yaml" and "noexec.yaml" are 4 edits apart, within a third of 12 bytes, but their
  // shared ".yaml" is no evidence of a typo: every file beside them may have it. With one
  // extension, the names before it are judged; else the whole names ("cluster.jsn").
  const auto dot = [](std::string_view n) {
    const std::size_t at = n.rfind('.');
    return at == std::string_view::npos || at == 0 ? n.size() : at;
  };
  const std::size_t typed_dot = dot(typed);
  std::string best;
  std::size_t best_distance = 0;
  // A name that differs from the typed one only in its extension ("job.yml" beside "job.yaml",
  // "job.json") is the file meant, whatever other name is as close: the closest extension wins.
  if (typed_dot < typed.size()) {
    for (const auto& c : names) {
      const std::string_view name = c;
      const std::size_t c_dot = dot(name);
      if (c_dot == name.size() || name.substr(0, c_dot) != typed.substr(0, typed_dot)) continue;
      const std::size_t d = edit_distance(typed.substr(typed_dot), name.substr(c_dot));
      if (best.empty() || d < best_distance) {
        best = c;
        best_distance = d;
      }
    }
    if (!best.empty()) return best;
  }
  for (const auto& c : names) {
    const std::size_t c_dot = dot(c);
    const std::string_view name = c;
    const bool same_ext =
        typed_dot < typed.size() && typed.substr(typed_dot) == name.substr(c_dot);
    const std::string_view a = same_ext ? typed.substr(0, typed_dot) : typed;
    const std::string_view b = same_ext ? name.substr(0, c_dot) : name;
    const std::size_t d = edit_distance(a, b);
    if (d <= typo_limit(a, b) && (best.empty() || d < best_distance)) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string did_you_mean_file(const std::filesystem::path& given,
                              const std::filesystem::path& shown_as_given, PathKind kind) {
  namespace fs = std::filesystem;
  // "bundl/" names the directory "bundl".
  const auto strip = [](const fs::path& p) {
    return p.filename().empty() && p.has_parent_path() ? p.parent_path() : p;
  };
  const fs::path path = strip(given);
  const fs::path shown = strip(shown_as_given);
  std::error_code ec;
  if (path.filename().empty() || fs::exists(path, ec) || ec) return "";
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::error_code bad;
    const bool fits = kind == PathKind::kDirectory ? e.is_directory(bad) : e.is_regular_file(bad);
    if (fits && !bad) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());  // ties go to the first: the same one every time
  const std::string close = closest_file_name(path.filename().string(), names);
  if (close.empty()) return "";
  return " (did you mean '" + (shown.parent_path() / close).string() + "'?)";
}

}  // namespace cc::util
