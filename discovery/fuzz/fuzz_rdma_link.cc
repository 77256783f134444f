// libFuzzer target: parse_rdma_link (rdma -j link).
#include <cstddef>
#include <cstdint>

#include "discovery/fuzz/fuzz_check.h"
#include "discovery/linux_rdma.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cc::discovery;
  fuzz::check(parse_rdma_link(fuzz::text(data, size), "", 0), kRdmaLinkCommand);
  return 0;
}
