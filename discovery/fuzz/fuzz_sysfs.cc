// libFuzzer target: the sysfs dump parsers (parse_sysfs_thunderbolt, parse_sysfs_infiniband),
// each given the same input.
#include <cstddef>
#include <cstdint>

#include "discovery/fuzz/fuzz_check.h"
#include "discovery/linux_sysfs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cc::discovery;
  auto t = fuzz::text(data, size);
  fuzz::check(parse_sysfs_thunderbolt(t), kSysfsThunderboltCommand);
  fuzz::check(parse_sysfs_infiniband(t), kSysfsInfinibandCommand);
  return 0;
}
