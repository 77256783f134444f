// "Did you mean ...?" for names typed by the operator (host names, YAML keys, lab names, file
// names): every suggestion the tool makes comes from here.
#pragma once

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace cc::util {

/// Edit distance counting insertions, deletions, substitutions and swaps of two adjacent
/// bytes ("nmae" -> "name" is 1), i.e. optimal string alignment; case-sensitive.
/// Cost O(|a| * |b|) time, O(|b|) memory.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t m = b.size();
  std::vector<std::size_t> before(m + 1), prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      std::size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], before[j - 2] + 1);
      }
    }
    before.swap(prev);
    prev.swap(cur);
  }
  return prev[m];
}

/// How many edits apart `typed` and `candidate` may be for one to be a likely typo of the
/// other: a third of the longer name's length, and at least 1.
inline std::size_t typo_limit(std::string_view typed, std::string_view candidate) {
  return std::max<std::size_t>(1, std::max(typed.size(), candidate.size()) / 3);
}

/// The candidate closest to `typed`, if it is close enough to be a likely typo (typo_limit).
/// Empty when nothing is that close; ties go to the earliest candidate.
inline std::string closest_match(std::string_view typed,
                                 const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = 0;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(typed, c);
    if (d <= typo_limit(typed, c) && (best.empty() || d < best_distance)) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

/// " (did you mean 'x'?)" or "" : ready to append to an error message.
inline std::string did_you_mean(std::string_view typed,
                                const std::vector<std::string>& candidates) {
  std::string m = closest_match(typed, candidates);
  return m.empty() ? std::string() : " (did you mean '" + m + "'?)";
}

/// closest_match for file names: when `typed` and a name end in the same extension (".yaml"),
/// the names before it are compared, since an extension every file beside it may share is no
/// sign of a typo ("nothere.yaml" is not close to "noexec.yaml"; "hostfle.json" is to
/// "hostfile.json"); otherwise the whole names ("cluster.jsn" -> "cluster.json"). Before any of
/// those, a name that differs only in its extension ("job.yml" -> "job.yaml", else "job.json"; the
/// closest extension first), however far the extensions are apart.
std::string closest_file_name(std::string_view typed, const std::vector<std::string>& names);

/// What a path the operator names must be: a file (a regular one, for did_you_mean_file's
/// candidates) or a directory (`discover --from BUNDLE`, `--replay BUNDLE`).
enum class PathKind { kFile, kDirectory };

/// For a file the operator named that is not there: " (did you mean 'P'?)", P being `shown` (the
/// path as the message shows it) with its last component replaced by the regular file (for
/// PathKind::kDirectory: the directory) in `path`'s directory whose whole name (extension
/// included: "cluster.jsn" -> "cluster.json") is closest to `path`'s (closest_file_name). "" when
/// `path` exists, its directory cannot be listed, or no name is that close. Reads the directory
/// (cost: one listing).
std::string did_you_mean_file(const std::filesystem::path& path, const std::filesystem::path& shown,
                              PathKind kind = PathKind::kFile);
/// The same, showing `path` as it is.
inline std::string did_you_mean_file(const std::filesystem::path& path) {
  return did_you_mean_file(path, path);
}

}  // namespace cc::util
