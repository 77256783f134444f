// Natural ordering of interface and device names: runs of digits compare by value, so
// en2 < en10 and rdma_en9 < rdma_en10, as people read them
// (docs/platform.md#discovering-cables-on-macos). Cost: O(len) per comparison.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cc::discovery {

/// Strict weak order: digit runs by numeric value (leading zeros ignored, then fewer zeros
/// first to stay strict), everything else byte by byte.
bool natural_less(std::string_view a, std::string_view b);

/// Sorts `names` with natural_less (stable).
void natural_sort(std::vector<std::string>& names);

}  // namespace cc::discovery
