// libFuzzer target: parse_system_profiler_thunderbolt (system_profiler SPThunderboltDataType
// -json).
#include <cstddef>
#include <cstdint>

#include "discovery/fuzz/fuzz_check.h"
#include "discovery/macos_thunderbolt.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cc::discovery;
  fuzz::check(parse_system_profiler_thunderbolt(fuzz::text(data, size)), kSystemProfilerCommand);
  return 0;
}
