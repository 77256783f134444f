// Every parser on truncated and byte-mutated copies of every recorded output: each call must
// return (a value or an Error whose message names the command), never throw or crash. A cheap,
// deterministic stand-in for the per-parser fuzz targets, run under the sanitizer build.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "discovery/ibv_devices.h"
#include "discovery/ibv_devinfo.h"
#include "discovery/linux_ip.h"
#include "discovery/linux_rdma.h"
#include "discovery/linux_system.h"
#include "discovery/machine_id.h"
#include "discovery/macos_ifconfig.h"
#include "discovery/macos_networksetup.h"
#include "discovery/macos_system.h"
#include "discovery/macos_thunderbolt.h"
#include "discovery/test_fixtures.h"

using namespace cc::discovery;

namespace {

// Returns "" when the parser accepted the text, else the error message.
using Parser = std::function<std::string(const std::string&)>;

template <class F>
Parser wrap(F f) {
  return [f](const std::string& s) {
    auto r = f(s);
    return r.ok() ? std::string() : r.error().message;
  };
}

std::vector<std::string> variants(const std::string& text) {
  std::vector<std::string> out{text, ""};
  std::uint32_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 1103515245U + 12345U;
    return seed >> 8;
  };
  for (std::size_t cut = 0; cut < text.size(); cut += 1 + text.size() / 40) {
    out.push_back(text.substr(0, cut));
  }
  const char specials[] = {'\0', '\n', '\t', ' ', ':', '"', '{', '[', ']', '}', ',', '9', '\xff'};
  for (int k = 0; k < 60 && !text.empty(); ++k) {
    std::string m = text;
    for (int n = 0; n < 1 + k % 4; ++n) {
      std::size_t pos = next() % m.size();
      m[pos] = specials[next() % sizeof(specials)];
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace

TEST_CASE("parsers: truncated and mutated recordings give a value or a named error") {
  struct Case {
    const char* fixture;
    const char* command;
    Parser parse;
  };
  std::vector<Case> cases{
      {"macos/pair-a.system_profiler-SPThunderboltDataType.json", "`system_profiler",
       wrap(parse_system_profiler_thunderbolt)},
      {"macos/pair-b.system_profiler-SPThunderboltDataType.json", "`system_profiler",
       wrap(parse_system_profiler_thunderbolt)},
      {"macos/pair.networksetup-listallhardwareports.txt", "`networksetup",
       wrap(parse_networksetup_hardware_ports)},
      {"macos/ifconfig-en2.txt", "`ifconfig", wrap(parse_ifconfig)},
      {"macos/ifconfig-bridge0-default.txt", "`ifconfig", wrap(parse_ifconfig)},
      {"macos/pair-b.ibv_devices.txt", "`ibv_devices", wrap(parse_ibv_devices)},
      {"macos/ibv_devices-m3-ultra.txt", "`ibv_devices", wrap(parse_ibv_devices)},
      {"macos/pair-b.ibv_devinfo.txt", "`ibv_devinfo", wrap(parse_ibv_devinfo)},
      {"macos/ibv_devinfo-v-gid-table.txt", "`ibv_devinfo", wrap(parse_ibv_devinfo)},
      {"linux/ibv_devinfo-connectx.txt", "`ibv_devinfo", wrap(parse_ibv_devinfo)},
      {"linux/ip-j-addr.json", "`ip -j addr",
       wrap([](std::string_view t) { return parse_ip_addr(t); })},
      {"linux/ip-j-link.json", "`ip -j link", wrap(parse_ip_link)},
      {"linux/rdma-j-link.json", "`rdma -j link",
       wrap([](const std::string& s) { return parse_rdma_link(s, "", 0); })},
      {"macos/ioreg-rd1-IOPlatformExpertDevice.txt", "`ioreg -rd1",
       wrap(parse_ioreg_platform_uuid)},
  };
  for (const Case& c : cases) {
    for (const std::string& v : variants(testing::fixture(c.fixture))) {
      std::string err = c.parse(v);
      if (!err.empty() && err.find(c.command) != 0) {
        FAIL_CHECK(c.fixture << ": error does not name the command: " << err);
      }
    }
  }
  for (const std::string& v : variants("Mac16,9\n274877906944\nApple M3 Ultra\n")) {
    (void)parse_sysctl_hw(v);
  }
  for (const std::string& v : variants("ProductName:\tmacOS\nProductVersion:\t26.2\n")) {
    (void)parse_sw_vers(v);
    (void)parse_rdma_ctl_status(v);
  }
  for (const std::string& v : variants("NAME=\"Debian\"\nVERSION_ID=\"12\"\nMemTotal: 1 kB\n")) {
    (void)parse_os_release(v);
    (void)parse_meminfo_total(v);
  }
  for (const std::string& v : variants("3d1219c7c4c5404aaa1f6d2a48adfda4\n")) {
    auto r = parse_machine_id(v);
    if (!r.ok()) CHECK(r.error().message.find("`cat /etc/machine-id` output: ") == 0);
  }
}
