#include "discovery/linux_system.h"

#include <string>

#include <doctest/doctest.h>

using namespace cc::discovery;

TEST_CASE("os-release: Debian, quoting, comments, ID fallback") {
  auto os = parse_os_release(
      "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"
      "NAME=\"Debian GNU/Linux\"\n"
      "VERSION_ID=\"12\"\n"
      "# comment\n"
      "ID=debian\n");
  REQUIRE(os.ok());
  CHECK(os->name == "Debian GNU/Linux");
  CHECK(os->version == "12");
  CHECK(os->build.empty());
  auto esc = parse_os_release("NAME='Ubuntu'\nVERSION_ID=\"24.04\\\"x\"\n");
  REQUIRE(esc.ok());
  CHECK(esc->name == "Ubuntu");
  CHECK(esc->version == "24.04\"x");
  auto arch = parse_os_release("ID=arch\n");  // rolling release: no VERSION_ID, no NAME
  REQUIRE(arch.ok());
  CHECK(arch->name == "arch");
  CHECK(arch->version.empty());
  for (const std::string text : {"", "\n", "VERSION_ID=12\n", "garbage"}) {
    CAPTURE(text);
    auto r = parse_os_release(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("`cat /etc/os-release` output: ") == 0);
  }
}

TEST_CASE("meminfo: MemTotal in bytes") {
  auto m = parse_meminfo_total("MemTotal:       24683652 kB\nMemFree:        23595192 kB\n");
  REQUIRE(m.ok());
  CHECK(*m == 24683652ULL * 1024);
  for (const std::string text : {"", "MemFree: 1 kB\n", "MemTotal: lots kB\n", "MemTotal: 5 MB\n",
                                 "MemTotal: 5\n", "MemTotal: 99999999999999999 kB\n"}) {
    CAPTURE(text);
    auto r = parse_meminfo_total(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("`cat /proc/meminfo` output: ") == 0);
  }
}
