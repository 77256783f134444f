// libFuzzer target: parse_ibv_devinfo (ibv_devinfo -v).
#include <cstddef>
#include <cstdint>

#include "discovery/fuzz/fuzz_check.h"
#include "discovery/ibv_devinfo.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cc::discovery;
  fuzz::check(parse_ibv_devinfo(fuzz::text(data, size)), kIbvDevinfoCommand);
  return 0;
}
