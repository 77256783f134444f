// libFuzzer target: parse_ifconfig (ifconfig -a).
#include <cstddef>
#include <cstdint>

#include "discovery/fuzz/fuzz_check.h"
#include "discovery/macos_ifconfig.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cc::discovery;
  fuzz::check(parse_ifconfig(fuzz::text(data, size)), kIfconfigCommand);
  return 0;
}
