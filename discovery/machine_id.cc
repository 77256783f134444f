#include "discovery/machine_id.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "discovery/text.h"

namespace cc::discovery {
namespace {

bool is_hex(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) != 0;
}

std::string with_case(std::string_view s, bool upper) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [upper](char c) {
    auto u = static_cast<unsigned char>(c);
    return static_cast<char>(upper ? std::toupper(u) : std::tolower(u));
  });
  return out;
}

// 8-4-4-4-12 hex digits.
bool is_uuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !is_hex(s[i])) return false;
  }
  return true;
}

}  // namespace

util::Result<std::string> parse_machine_id(std::string_view out, std::string_view command) {
  auto lines = split_lines(out);
  std::string_view id = lines.empty() ? std::string_view() : trim(lines.front());
  if (id.empty()) return parse_error(command, "empty: the machine has no machine ID yet");
  if (id == "uninitialized") {
    return parse_error(command,
                       "\"uninitialized\": the machine ID is set at the end of the "
                       "first boot (run `systemd-machine-id-setup`)");
  }
  if (id.size() != 32 || !std::all_of(id.begin(), id.end(), is_hex)) {
    return parse_error(command, fmt::format("{} is not a machine ID (32 hex digits)", excerpt(id)));
  }
  if (std::all_of(id.begin(), id.end(), [](char c) { return c == '0'; })) {
    return parse_error(command, "all zeros, the null ID (run `systemd-machine-id-setup`)");
  }
  return with_case(id, false);
}

util::Result<std::string> parse_ioreg_platform_uuid(std::string_view out) {
  constexpr std::string_view kKey = "\"IOPlatformUUID\"";
  for (std::string_view line : split_lines(out)) {
    line = trim(line);
    if (!line.starts_with(kKey)) continue;
    std::string_view rest = trim(line.substr(kKey.size()));
    if (!rest.starts_with('=')) continue;
    rest = trim(rest.substr(1));
    if (rest.size() < 2 || rest.front() != '"' || rest.back() != '"') {
      return parse_error(kIoregPlatformCommand,
                         fmt::format("IOPlatformUUID {} is not a quoted string", excerpt(rest)));
    }
    std::string_view value = rest.substr(1, rest.size() - 2);
    if (!is_uuid(value)) {
      return parse_error(kIoregPlatformCommand,
                         fmt::format("IOPlatformUUID {} is not a UUID", excerpt(value)));
    }
    return with_case(value, true);
  }
  return parse_error(kIoregPlatformCommand, "no \"IOPlatformUUID\" = \"...\" line");
}

}  // namespace cc::discovery
