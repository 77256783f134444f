// libFuzzer target: parse_ip_addr (ip -j addr; parse_ip_link shares its code).
#include <cstddef>
#include <cstdint>

#include "discovery/fuzz/fuzz_check.h"
#include "discovery/linux_ip.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cc::discovery;
  fuzz::check(parse_ip_addr(fuzz::text(data, size)), kIpAddrCommand);
  return 0;
}
