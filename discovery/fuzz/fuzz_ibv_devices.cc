// libFuzzer target: parse_ibv_devices (ibv_devices).
#include <cstddef>
#include <cstdint>

#include "discovery/fuzz/fuzz_check.h"
#include "discovery/ibv_devices.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cc::discovery;
  fuzz::check(parse_ibv_devices(fuzz::text(data, size)), kIbvDevicesCommand);
  return 0;
}
