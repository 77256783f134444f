// libFuzzer target: the small parsers (sw_vers, sysctl, rdma_ctl status, /etc/os-release,
// /proc/meminfo, /etc/machine-id, ioreg's IOPlatformUUID), each given the same input.
#include <cstddef>
#include <cstdint>

#include "discovery/fuzz/fuzz_check.h"
#include "discovery/linux_system.h"
#include "discovery/machine_id.h"
#include "discovery/macos_system.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cc::discovery;
  auto t = fuzz::text(data, size);
  fuzz::check(parse_sw_vers(t), kSwVersCommand);
  fuzz::check(parse_sysctl_hw(t), kSysctlCommand);
  fuzz::check(parse_rdma_ctl_status(t), kRdmaCtlCommand);
  fuzz::check(parse_os_release(t), kOsReleaseCommand);
  fuzz::check(parse_meminfo_total(t), kMeminfoCommand);
  fuzz::check(parse_machine_id(t), kMachineIdCommand);
  fuzz::check(parse_ioreg_platform_uuid(t), kIoregPlatformCommand);
  return 0;
}
