#include "lab/data.h"

#include <string>

#include <doctest/doctest.h>

#include "lab/files.h"

using namespace cc::lab;

namespace {

// The message of parse_data_size's error for `text` ("" when it parsed).
std::string size_error(const std::string& text) {
  auto r = parse_data_size(text);
  return r ? std::string() : r.error().message;
}

}  // namespace

TEST_CASE("data: --data-size takes bytes or K, M, G, T (powers of 1024)") {
  CHECK(*parse_data_size("8G") == 8ull << 30);
  CHECK(*parse_data_size("512M") == 512ull << 20);
  CHECK(*parse_data_size("64m") == 64ull << 20);
  CHECK(*parse_data_size("64MiB") == 64ull << 20);
  CHECK(*parse_data_size("2048k") == 2ull << 20);
  CHECK(*parse_data_size("1T") == 1ull << 40);
  CHECK(*parse_data_size("1048576") == 1ull << 20);
  CHECK(*parse_data_size("16777216") == 16ull << 20);
  CHECK(*parse_data_size("1M") == kMinDataSize);
  CHECK(kDefaultDataSize == 8ull << 30);
}

TEST_CASE("data: a bad --data-size names the flag, the value and the accepted forms") {
  for (const char* bad : {"", "G", "-1G", "1.5G", "8 G", "8GB", "8Gi", "8X", "0x10M", "1,5G"}) {
    const std::string e = size_error(bad);
    CAPTURE(bad);
    CHECK(e.rfind("--data-size ", 0) == 0);
    CHECK(e.find("e.g. --data-size 512M") != std::string::npos);
    auto r = parse_data_size(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == cc::util::ExitCode::kUsage);
  }
  CHECK(size_error("8GB").find("unknown unit \"GB\"") != std::string::npos);
  CHECK(size_error("1.5G").find("not a whole number") != std::string::npos);
  // 0 would be a tmpfs without limit; anything below 1M is refused with it.
  CHECK(size_error("0").find("below the minimum") != std::string::npos);
  CHECK(size_error("1023K").find("below the minimum") != std::string::npos);
  CHECK(size_error("1048575").find("below the minimum") != std::string::npos);
  // Beyond 64 bits, in the digits or once the unit is applied.
  CHECK(size_error("18446744073709551616").find("too large") != std::string::npos);
  CHECK(size_error("16777216T").find("too large") != std::string::npos);
  CHECK(*parse_data_size("16777215T") == 16777215ull << 40);
}

TEST_CASE("data: sizes print in the shortest form that reads back") {
  CHECK(format_data_size(8ull << 30) == "8G");
  CHECK(format_data_size(1536ull << 20) == "1536M");
  CHECK(format_data_size(1ull << 40) == "1T");
  CHECK(format_data_size(1000) == "1000");
  CHECK(format_data_size(0) == "0");
  for (const char* text : {"64M", "8G", "1536M", "3T", "1048577"}) {
    CHECK(format_data_size(*parse_data_size(text)) == text);
  }
}

TEST_CASE("data: paths and mount source names") {
  CHECK(data_dir("t") == fs::path("/run/clusterctl/labs/t/data"));
  CHECK(host_data_dir("t", "h2") == fs::path("/run/clusterctl/labs/t/hosts/h2/data"));
  CHECK(data_mount_source("t", "h2") == "clusterctl-lab-t-h2");
}

TEST_CASE("data: the mount table, escapes decoded") {
  const std::string text =
      "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
      "90 27 0:50 / /run/clusterctl/labs/t/hosts/h1/data rw,nosuid,nodev shared:40 - tmpfs "
      "clusterctl-lab-t-h1 rw,size=65536k,mode=755\n"
      "91 27 0:4 net:[4026532] /run/clusterctl/labs/t/h1.uts rw - nsfs nsfs rw\n"
      "92 27 0:51 / /mnt/my\\040disk rw - tmpfs my\\134src rw\n"
      "garbage line\n"
      "93 27 0:52 / /x rw no-dash-here\n";
  auto m = parse_mountinfo(text);
  REQUIRE(m.size() == 4);
  CHECK(m[1].mount_point == "/run/clusterctl/labs/t/hosts/h1/data");
  CHECK(m[1].fstype == "tmpfs");
  CHECK(m[1].source == "clusterctl-lab-t-h1");
  CHECK(m[2].fstype == "nsfs");
  CHECK(m[3].mount_point == "/mnt/my disk");
  CHECK(m[3].source == "my\\src");
}

TEST_CASE("data: a lab's data mounts are found by path and by source name") {
  std::vector<MountEntry> m{
      {"/", "ext4", "/dev/vda"},
      {"/run/clusterctl/labs/t/hosts/h1/data", "tmpfs", "clusterctl-lab-t-h1"},
      {"/run/clusterctl/labs/t/h1.uts", "nsfs", "nsfs"},
      // A crash left h2's tmpfs mounted twice, once where it was moved.
      {"/run/clusterctl/labs/t/hosts/h2/data", "tmpfs", "clusterctl-lab-t-h2"},
      {"/mnt/elsewhere", "tmpfs", "clusterctl-lab-t-h2"},
      {"/run/clusterctl/labs/t/hosts/h2/data", "tmpfs", "clusterctl-lab-t-h2"},
      // Something else at a host's path is in the way all the same.
      {"/run/clusterctl/labs/t/hosts/h16/data", "ext4", "/dev/vdb"},
      // Another lab's ("t-h1", whose names start the same), and a non-tmpfs of that name.
      {"/run/clusterctl/labs/t-h1/hosts/h1/data", "tmpfs", "clusterctl-lab-t-h1-h1"},
      {"/srv", "ext4", "clusterctl-lab-t-h3"},
      {"/run/clusterctl/labs/t/hosts/h17/data", "tmpfs", "other"},
  };
  auto found = lab_data_mounts(m, "t");
  CHECK(found == std::vector<fs::path>{"/run/clusterctl/labs/t/hosts/h16/data",
                                       "/run/clusterctl/labs/t/hosts/h2/data", "/mnt/elsewhere",
                                       "/run/clusterctl/labs/t/hosts/h2/data",
                                       "/run/clusterctl/labs/t/hosts/h1/data"});
  CHECK(lab_data_mounts(m, "t-h1") ==
        std::vector<fs::path>{"/run/clusterctl/labs/t-h1/hosts/h1/data"});
  CHECK(lab_data_mounts(m, "u").empty());

  auto below = mounts_below(m, "/run/clusterctl/labs/t");
  CHECK(below.size() == 6);
  CHECK(mounts_below(m, "/run/clusterctl/labs/t-h1").size() == 1);
  CHECK(mounts_below(m, "/run/clusterctl/labs/t/h1.uts").size() == 1);
}
