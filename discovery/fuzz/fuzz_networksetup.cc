// libFuzzer target: parse_networksetup_hardware_ports (networksetup -listallhardwareports).
#include <cstddef>
#include <cstdint>

#include "discovery/fuzz/fuzz_check.h"
#include "discovery/macos_networksetup.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cc::discovery;
  fuzz::check(parse_networksetup_hardware_ports(fuzz::text(data, size)), kNetworksetupCommand);
  return 0;
}
