#include "lab/data.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "lab/files.h"
#include "lab/plan.h"
#include "util/text.h"

namespace cc::lab {
namespace {

using util::ExitCode;

struct SizeUnit {
  char letter;
  unsigned shift;
};
constexpr std::array<SizeUnit, 4> kSizeUnits{{{'T', 40}, {'G', 30}, {'M', 20}, {'K', 10}}};

util::Error bad_data_size(std::string_view text, std::string_view why) {
  return util::error(ExitCode::kUsage,
                     fmt::format("--data-size {}: {}; give bytes or a whole number with K, M, G "
                                 "or T (powers of 1024), e.g. --data-size 512M or --data-size 8G",
                                 util::excerpt(text), why));
}

// The shift of the unit `suffix` names ("" for bytes, "M", "m", "MiB"), or -1.
int unit_shift(std::string_view suffix) {
  if (suffix.empty()) return 0;
  if (suffix.size() != 1 && !(suffix.size() == 3 && suffix.substr(1) == "iB")) return -1;
  const char c = static_cast<char>(suffix[0] & ~0x20);  // upper case
  for (const auto& u : kSizeUnits) {
    if (u.letter == c) return static_cast<int>(u.shift);
  }
  return -1;
}

bool octal_digit(char c) {
  return c >= '0' && c <= '7';
}

// Mountinfo writes space, tab, newline and backslash as \ooo (three octal digits).
std::string unescape_mount_field(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && octal_digit(s[i + 1]) && octal_digit(s[i + 2]) &&
        octal_digit(s[i + 3])) {
      out +=
          static_cast<char>(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

util::Result<std::uint64_t> parse_data_size(std::string_view text) {
  if (text.empty()) return bad_data_size(text, "empty");
  const std::size_t digits_end = text.find_first_not_of("0123456789");
  const std::string_view digits = text.substr(0, digits_end);
  const std::string_view suffix = text.substr(digits.size());
  if (digits.empty()) return bad_data_size(text, "not a number");
  if (!suffix.empty() && (suffix[0] == '.' || suffix[0] == ',')) {
    return bad_data_size(text, "not a whole number (1.5G is 1536M)");
  }
  const int shift = unit_shift(suffix);
  if (shift < 0) return bad_data_size(text, fmt::format("unknown unit {}", util::excerpt(suffix)));
  const std::optional<std::uint64_t> value = util::parse_u64(digits);
  if (!value || *value > (std::numeric_limits<std::uint64_t>::max() >> shift)) {
    return bad_data_size(text, "too large");
  }
  const std::uint64_t bytes = *value << shift;
  if (bytes < kMinDataSize) {
    return bad_data_size(text, "below the minimum, 1M (tmpfs would take 0 as no limit)");
  }
  return bytes;
}

std::string format_data_size(std::uint64_t bytes) {
  for (const auto& u : kSizeUnits) {
    const std::uint64_t unit = 1ull << u.shift;
    if (bytes != 0 && bytes % unit == 0) return fmt::format("{}{}", bytes / unit, u.letter);
  }
  return std::to_string(bytes);
}

std::vector<MountEntry> parse_mountinfo(std::string_view text) {
  // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
  std::vector<MountEntry> out;
  for (const auto& line : util::split_lines(text)) {
    const std::vector<std::string_view> f = util::split_words(line);
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 6 || dash - f.begin() < 6 || f.end() - dash < 3) continue;
    out.push_back({unescape_mount_field(f[4]), unescape_mount_field(*(dash + 1)),
                   unescape_mount_field(*(dash + 2))});
  }
  return out;
}

std::vector<fs::path> lab_data_mounts(const std::vector<MountEntry>& mounts,
                                      std::string_view name) {
  std::vector<std::string> sources;
  std::vector<fs::path> points;
  for (int i = kMinHosts; i <= kMaxHosts; ++i) {
    const std::string host = fmt::format("h{}", i);
    sources.push_back(data_mount_source(name, host));
    points.push_back(host_data_dir(name, host));
  }
  std::vector<fs::path> out;
  for (auto it = mounts.rbegin(); it != mounts.rend(); ++it) {
    const bool ours = (it->fstype == "tmpfs" &&
                       std::find(sources.begin(), sources.end(), it->source) != sources.end()) ||
                      std::find(points.begin(), points.end(), it->mount_point) != points.end();
    if (ours) out.push_back(it->mount_point);
  }
  return out;
}

std::vector<MountEntry> mounts_below(const std::vector<MountEntry>& mounts, const fs::path& dir) {
  std::vector<MountEntry> out;
  const std::string prefix = dir.string() + "/";
  for (const auto& m : mounts) {
    if (m.mount_point == dir || m.mount_point.string().rfind(prefix, 0) == 0) out.push_back(m);
  }
  return out;
}

}  // namespace cc::lab
