#include "discovery/linux_system.h"

#include <limits>
#include <string>

#include <fmt/format.h>

#include "discovery/text.h"

namespace cc::discovery {

namespace {

std::string unquote(std::string_view v) {
  if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') {
    return std::string(v.substr(1, v.size() - 2));
  }
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
    std::string s;
    v = v.substr(1, v.size() - 2);
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] == '\\' && i + 1 < v.size()) ++i;
      s += v[i];
    }
    return s;
  }
  return std::string(v);
}

}  // namespace

util::Result<OsInfo> parse_os_release(std::string_view out) {
  if (blank(out)) return parse_error(kOsReleaseCommand, "empty output");
  std::string name;
  std::string id;
  OsInfo os;
  for (std::string_view line : split_lines(out)) {
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = line.substr(0, eq);
    std::string value = unquote(line.substr(eq + 1));
    if (key == "NAME") name = value;
    if (key == "ID") id = value;
    if (key == "VERSION_ID") os.version = value;
  }
  os.name = !name.empty() ? name : id;
  if (os.name.empty()) {
    return parse_error(kOsReleaseCommand, fmt::format("no NAME or ID in {}", excerpt(trim(out))));
  }
  return os;
}

util::Result<std::uint64_t> parse_meminfo_total(std::string_view out) {
  for (std::string_view line : split_lines(out)) {
    auto words = split_words(line);
    if (words.empty() || words[0] != "MemTotal:") continue;
    if (words.size() != 3 || words[2] != "kB") {
      return parse_error(kMeminfoCommand,
                         fmt::format("MemTotal line {} is not \"MemTotal: N kB\"", excerpt(line)));
    }
    auto kib = parse_u64(words[1]);
    if (!kib) {
      return parse_error(kMeminfoCommand,
                         fmt::format("MemTotal {} is not a number", excerpt(words[1])));
    }
    if (*kib > std::numeric_limits<std::uint64_t>::max() / 1024) {
      return parse_error(kMeminfoCommand, fmt::format("MemTotal {} kB overflows", *kib));
    }
    return *kib * 1024;
  }
  return parse_error(kMeminfoCommand, "no \"MemTotal:\" line");
}

}  // namespace cc::discovery
