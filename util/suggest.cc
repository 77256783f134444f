#include "util/suggest.h"

#include <algorithm>
#include <string>
#include <system_error>
#include <vector>

namespace cc::util {

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
  const std::string close = closest_match(path.filename().string(), names);
  if (close.empty()) return "";
  return " (did you mean '" + (shown.parent_path() / close).string() + "'?)";
}

}  // namespace cc::util
