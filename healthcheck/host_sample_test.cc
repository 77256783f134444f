#include "healthcheck/host_sample.h"

#include <doctest/doctest.h>

#include "remote/quote.h"

namespace cc::healthcheck {
namespace {

using discovery::ProbeCommand;
using discovery::RawOutput;

TEST_CASE("host sample: parsers") {
  CHECK(parse_clock("1764547200.250000000\n") == doctest::Approx(1764547200.25));
  CHECK(parse_clock("1764547200\n") == doctest::Approx(1764547200.0));
  CHECK_FALSE(parse_clock("1764547200.N\n"));  // BSD date without %N
  CHECK_FALSE(parse_clock(""));

  CHECK(parse_mem_available("MemTotal: 16000000 kB\nMemFree: 100 kB\nMemAvailable:  8000000 kB\n") ==
        std::uint64_t{8000000} * 1024);
  CHECK_FALSE(parse_mem_available("MemTotal: 16000000 kB\n"));

  const char* vm_stat =
      "Mach Virtual Memory Statistics: (page size of 16384 bytes)\n"
      "Pages free:                               10000.\n"
      "Pages active:                            500000.\n"
      "Pages inactive:                           20000.\n"
      "Pages speculative:                         3000.\n"
      "Pages throttled:                              0.\n"
      "Pages wired down:                        100000.\n"
      "Pages purgeable:                            700.\n";
  CHECK(parse_vm_stat_available(vm_stat) == std::uint64_t{33700} * 16384);
  CHECK_FALSE(parse_vm_stat_available("Pages free: 10.\n"));  // no page size

  auto df = parse_df("Filesystem     1024-blocks     Used Available Capacity Mounted on\n"
                     "/dev/sda1        102400000 50000000  52400000      49% /\n");
  REQUIRE(df);
  CHECK(df->first == std::uint64_t{52400000} * 1024);
  CHECK(df->second == "/");
  // macOS: a file system name with a space still parses (fields counted from the end).
  auto mac = parse_df("Filesystem 1024-blocks Used Available Capacity Mounted on\n"
                      "map auto_home 0 0 0 100% /System/Volumes/Data/home\n");
  REQUIRE(mac);
  CHECK(mac->first == 0);
  CHECK_FALSE(parse_df("df: .: No such file or directory\n"));

  CHECK(parse_clusterctl_version("clusterctl 0.1.0\n") == "0.1.0");
  CHECK_FALSE(parse_clusterctl_version("bash: clusterctl: command not found\n"));
}

TEST_CASE("host sample: the extras are framed commands that keep clear of the probe's keys") {
  auto e = health_extras("/opt/cc/bin/clusterctl");
  REQUIRE(e.first.size() == 1);
  REQUIRE(e.last.size() == 1);
  CHECK(e.first[0].key() != e.last[0].key());
  CHECK(e.on_linux.back().argv == std::vector<std::string>{"/opt/cc/bin/clusterctl", "--version"});
  CHECK(e.on_macos.front().argv == std::vector<std::string>{"pmset", "-g"});
  const std::string script = discovery::probe_script("0123456789abcdef", {}, false, true, e);
  // Both clock commands run in the one script, around the OS's own commands.
  const auto first = script.find(e.first[0].key());
  const auto ip = script.find("ip_-j_-d_addr");
  const auto last = script.rfind(e.last[0].key());  // the Linux block comes last
  REQUIRE(first != std::string::npos);
  REQUIRE(ip != std::string::npos);
  REQUIRE(last != std::string::npos);
  CHECK(first < ip);
  CHECK(ip < last);
  CHECK(script.find(remote::shell_quote({"/opt/cc/bin/clusterctl", "--version"})) !=
        std::string::npos);
}

discovery::ProbeOutputs linux_outputs(const discovery::ProbeExtras& e, const std::string& r1,
                                      const std::string& r2, const RawOutput& version) {
  discovery::ProbeOutputs o;
  o.by_key[discovery::uname_command().key()] = RawOutput{"Linux\n", "", 0};
  o.by_key[ProbeCommand{"", {"cat", "/etc/os-release"}}.key()] =
      RawOutput{"NAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\n", "", 0};
  o.by_key[ProbeCommand{"", {"cat", "/proc/meminfo"}}.key()] =
      RawOutput{"MemTotal: 16000000 kB\nMemAvailable: 4194304 kB\n", "", 0};
  o.by_key[ProbeCommand{"", {"ip", "-j", "-d", "addr", "show"}}.key()] = RawOutput{"[]\n", "", 0};
  o.by_key[e.first[0].key()] = RawOutput{r1, "", 0};
  o.by_key[e.last[0].key()] = RawOutput{r2, "", 0};
  o.by_key[e.on_linux[0].key()] = RawOutput{
      "Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/x 100 50 2097152 50% /\n",
      "", 0};
  o.by_key[e.on_linux[1].key()] = version;
  return o;
}

TEST_CASE("host sample: clock offset and uncertainty, memory, disk and version") {
  auto e = health_extras("clusterctl");
  // Local round trip 100.0 .. 102.0; the script itself took 0.5 s by the remote clock.
  auto o = linux_outputs(e, "1100.5\n", "1101.0\n", RawOutput{"clusterctl 0.1.0\n", "", 0});
  auto s = sample_from_probe("h1", o, "10.0.0.1", "clusterctl", 100.0, 102.0);
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
  REQUIRE(s->clock_offset_s);
  CHECK(*s->clock_offset_s == doctest::Approx(999.75));
  CHECK(s->clock_uncertainty_s == doctest::Approx(0.75));
  CHECK(s->probe_s == doctest::Approx(2.0));
  CHECK(s->memory_available_bytes == std::uint64_t{4194304} * 1024);
  CHECK(s->disk_free_bytes == std::uint64_t{2097152} * 1024);
  CHECK(s->disk_path == "/");
  CHECK(s->clusterctl_version == "0.1.0");
  CHECK(s->facts.os.version == "12");
}

TEST_CASE("host sample: a missing clusterctl and an unreadable clock") {
  auto e = health_extras("clusterctl");
  auto o = linux_outputs(e, "N\n", "N\n", RawOutput{"", "sh: clusterctl: not found\n", 127});
  auto s = sample_from_probe("h2", o, "", "clusterctl", 100.0, 101.0);
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
  CHECK_FALSE(s->clock_offset_s);
  CHECK_FALSE(s->clusterctl_version);
  CHECK(s->clusterctl_problem == "`clusterctl --version` exited 127 (not found on the remote PATH)");
}

}  // namespace
}  // namespace cc::healthcheck
