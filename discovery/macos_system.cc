#include "discovery/macos_system.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "discovery/text.h"

namespace cc::discovery {

util::Result<RdmaState> parse_rdma_ctl_status(std::string_view out) {
  std::string s(trim(out));
  if (s.empty()) return parse_error(kRdmaCtlCommand, "empty output (expected enabled or disabled)");
  std::transform(s.begin(), s.end(), s.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  if (s == "enabled") return RdmaState::kEnabled;
  if (s == "disabled") return RdmaState::kDisabled;
  return parse_error(kRdmaCtlCommand, fmt::format("expected \"enabled\" or \"disabled\", got {}",
                                                  excerpt(trim(out))));
}

util::Result<OsInfo> parse_sw_vers(std::string_view out) {
  if (blank(out)) return parse_error(kSwVersCommand, "empty output");
  OsInfo os;
  for (std::string_view line : split_lines(out)) {
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = trim(line.substr(0, colon));
    std::string value(trim(line.substr(colon + 1)));
    if (key == "ProductName") os.name = value;
    if (key == "ProductVersion") os.version = value;
    if (key == "BuildVersion") os.build = value;
  }
  if (os.name.empty() || os.version.empty()) {
    return parse_error(kSwVersCommand,
                       fmt::format("no ProductName or ProductVersion in {}", excerpt(trim(out))));
  }
  return os;
}

util::Result<MacHardware> parse_sysctl_hw(std::string_view out) {
  std::vector<std::string_view> lines;
  for (std::string_view l : split_lines(out)) {
    if (!blank(l)) lines.push_back(trim(l));
  }
  if (lines.size() < 2) {
    return parse_error(
        kSysctlCommand,
        fmt::format("expected hw.model and hw.memsize on two lines, got {}", excerpt(trim(out))));
  }
  MacHardware hw;
  hw.model = std::string(lines[0]);
  auto mem = parse_u64(lines[1]);
  if (!mem || *mem == 0) {
    return parse_error(kSysctlCommand,
                       fmt::format("hw.memsize {} is not a positive integer", excerpt(lines[1])));
  }
  hw.memory_bytes = *mem;
  if (lines.size() >= 3) hw.cpu = std::string(lines[2]);
  return hw;
}

}  // namespace cc::discovery
