#include "discovery/ibv_devices.h"

#include <algorithm>

#include <fmt/format.h>

#include "discovery/natural_sort.h"
#include "discovery/text.h"

namespace cc::discovery {

util::Result<std::vector<IbvDevice>> parse_ibv_devices(std::string_view out) {
  if (blank(out)) return parse_error(kIbvDevicesCommand, "empty output");
  std::vector<IbvDevice> devices;
  bool header = false;
  auto lines = split_lines(out);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto words = split_words(lines[i]);
    if (words.empty()) continue;
    if (words[0] == "device" && words.size() >= 2 && words[1] == "node") {
      header = true;  // rdma-core prints one table per call; a second header is harmless
      continue;
    }
    if (!header) continue;
    if (words[0].find_first_not_of('-') == std::string_view::npos) continue;  // "------"
    if (words.size() < 2) {
      return parse_error(kIbvDevicesCommand, fmt::format("line {}: device {} has no node GUID",
                                                         i + 1, excerpt(words[0])));
    }
    devices.push_back(IbvDevice{std::string(words[0]), std::string(words[1])});
  }
  if (!header) {
    return parse_error(kIbvDevicesCommand,
                       fmt::format("no \"device  node GUID\" header in {}", excerpt(trim(out))));
  }
  std::stable_sort(devices.begin(), devices.end(), [](const IbvDevice& a, const IbvDevice& b) {
    return natural_less(a.name, b.name);
  });
  return devices;
}

}  // namespace cc::discovery
