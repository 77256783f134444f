#include "discovery/linux_sysfs.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "discovery/test_fixtures.h"
#include "discovery/text.h"

using namespace cc::discovery;
using cc::discovery::testing::fixture;

namespace {

const std::string kTb = "/sys/bus/thunderbolt/devices/";
const std::string kIb = "/sys/class/infiniband/";

// The kernel admin-guide listing ("  PATH<TAB>- VALUE") as the probe's grep would print it:
// only the files the command dumps, as PATH:VALUE.
std::string listing_as_dump(const std::string& listing) {
  std::string dump;
  for (std::string_view line : split_lines(listing)) {
    line = trim(line);
    std::size_t tab = line.find('\t');
    if (!line.starts_with("/sys/") || tab == std::string_view::npos) continue;
    std::string_view path = line.substr(0, tab);
    std::string_view value = trim(trim(line.substr(tab)).substr(1));  // after "- "
    for (std::string_view file : {"/unique_id", "/device_name", "/vendor_name", "/generation"}) {
      if (path.ends_with(file) && !value.empty()) {
        dump += std::string(path) + ":" + std::string(value) + "\n";
      }
    }
  }
  return dump;
}

std::string error_of(const cc::util::Result<LinuxThunderbolt>& r) {
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

std::string error_of(const cc::util::Result<std::vector<RdmaDevice>>& r) {
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

std::string tb_prefix() {
  return "`" + std::string(kSysfsThunderboltCommand) + "` output: ";
}

std::string ib_prefix() {
  return "`" + std::string(kSysfsInfinibandCommand) + "` output: ";
}

}  // namespace

TEST_CASE("sysfs thunderbolt: two domains, a Mac and a Linux host as XDomains, a dock") {
  auto r = parse_sysfs_thunderbolt(fixture("linux/sysfs-thunderbolt-xdomain.txt"));
  REQUIRE(r.ok());
  CHECK(r->host_uuids ==
        std::vector<std::pair<int, std::string>>{{0, "d2010000-0072-740e-0312-0da2b0e8a103"},
                                                 {1, "d2010000-0072-740e-0312-0da2b0e8a104"}});
  REQUIRE(r->xdomains.size() == 2);  // 0-3 (the AKiTiO box) has a generation: a device router
  const ThunderboltXDomain& mac = r->xdomains[0];
  CHECK(mac.device == "0-1");
  CHECK(mac.domain == 0);
  CHECK(mac.unique_id == "8a3c7c1e-5d2b-4f7a-9c41-2b6e0d9f1a01");
  CHECK(mac.device_name == "MacBook Pro");
  CHECK(mac.vendor_name == "Apple Inc.");
  CHECK(mac.link_speed_gbps == 80);  // "40.0 Gb/s" x 2 lanes
  CHECK(mac.generation == 5);
  CHECK(mac.interface == "thunderbolt0");
  const ThunderboltXDomain& linux_peer = r->xdomains[1];
  CHECK(linux_peer.device == "1-1");
  CHECK(linux_peer.domain == 1);
  CHECK(linux_peer.unique_id == "3f9e2b7c-1a4d-4c8e-b5f0-6d2a9e7c3b02");
  CHECK(linux_peer.device_name == "node2");
  CHECK(linux_peer.vendor_name == "Linux");
  CHECK(linux_peer.link_speed_gbps == 40);  // "20.0 Gb/s" x 2 lanes on a USB4 host router
  CHECK(linux_peer.generation == 4);
  CHECK(linux_peer.interface == "thunderbolt1");
}

TEST_CASE("sysfs thunderbolt: the admin-guide peripherals are devices, not hosts") {
  std::string dump = listing_as_dump(fixture("linux/sysfs-thunderbolt-device.txt"));
  CHECK(dump == kTb + "0-1/device_name:Thunderbolt to FireWire Adapter\n" + kTb +
                    "0-1/vendor_name:Apple, Inc.\n" + kTb +
                    "0-1/unique_id:e0376f00-0300-0100-ffff-ffffffffffff\n" + kTb +
                    "0-3/device_name:AKiTiO Thunder3 PCIe Box\n" + kTb +
                    "0-3/vendor_name:inXtron\n" + kTb +
                    "0-3/unique_id:dc010000-0000-8508-a22d-32ca6421cb16\n");
  auto r = parse_sysfs_thunderbolt(dump);
  REQUIRE(r.ok());
  CHECK(r->host_uuids.empty());  // the listing has no unique_id for 0-0
  CHECK(r->xdomains.empty());    // identity files only (a 4.13-era kernel): no evidence of a host

  // The same adapter on a current kernel: a generation and link files; still a device.
  auto modern = parse_sysfs_thunderbolt(dump + kTb + "0-1/rx_speed:10.0 Gb/s\n" + kTb +
                                        "0-1/rx_lanes:1\n" + kTb + "0-1/generation:1\n");
  REQUIRE(modern.ok());
  CHECK(modern->xdomains.empty());
}

TEST_CASE("sysfs thunderbolt: how an XDomain is told from a device router") {
  std::string host = kTb + "0-0/unique_id:host-uuid\n" + kTb + "0-0/generation:4\n";
  SUBCASE("a service key, no thunderbolt-net netdev: an XDomain without interface") {
    auto r = parse_sysfs_thunderbolt(host + kTb + "0-1/unique_id:peer\n" + kTb +
                                     "0-1/rx_speed:20.0 Gb/s\n" + kTb + "0-1/rx_lanes:2\n" + kTb +
                                     "0-1.0/key:network\n");
    REQUIRE(r.ok());
    REQUIRE(r->xdomains.size() == 1);
    CHECK(r->xdomains[0].device == "0-1");
    CHECK(r->xdomains[0].unique_id == "peer");
    CHECK(r->xdomains[0].interface == "");
    CHECK(r->xdomains[0].link_speed_gbps == 40);
    CHECK(r->xdomains[0].generation == 4);
  }
  SUBCASE("link files and no generation, no service at all: an XDomain (Linux >= 5.11)") {
    auto r = parse_sysfs_thunderbolt(host + kTb + "0-1/unique_id:peer\n" + kTb +
                                     "0-1/tx_speed:40.0 Gb/s\n" + kTb + "0-1/tx_lanes:2\n");
    REQUIRE(r.ok());
    REQUIRE(r->xdomains.size() == 1);
    CHECK(r->xdomains[0].link_speed_gbps == 80);  // tx_* when rx_* is missing
    CHECK(r->xdomains[0].generation == 5);
    CHECK(r->xdomains[0].device_name == "");
    CHECK(r->xdomains[0].vendor_name == "");
  }
  SUBCASE("a netdev wins over a generation line (services belong to XDomains only)") {
    auto r =
        parse_sysfs_thunderbolt(host + kTb + "0-1/unique_id:peer\n" + kTb + "0-1/generation:4\n" +
                                kTb + "0-1.0/net/thunderbolt0/ifindex:7\n");
    REQUIRE(r.ok());
    REQUIRE(r->xdomains.size() == 1);
    CHECK(r->xdomains[0].interface == "thunderbolt0");
    CHECK(r->xdomains[0].link_speed_gbps == 0);  // no link files: unknown
    CHECK(r->xdomains[0].generation == 0);
  }
  SUBCASE("a generation and link files, no service: a device router (dock)") {
    auto r = parse_sysfs_thunderbolt(host + kTb + "0-1/unique_id:dock\n" + kTb +
                                     "0-1/rx_speed:40.0 Gb/s\n" + kTb + "0-1/rx_lanes:2\n" + kTb +
                                     "0-1/generation:4\n");
    REQUIRE(r.ok());
    CHECK(r->xdomains.empty());
  }
  SUBCASE("an XDomain without unique_id is not listed") {
    auto r = parse_sysfs_thunderbolt(host + kTb + "0-1.0/net/thunderbolt0/ifindex:7\n");
    REQUIRE(r.ok());
    CHECK(r->xdomains.empty());
    CHECK(r->host_uuids == std::vector<std::pair<int, std::string>>{{0, "host-uuid"}});
  }
}

TEST_CASE("sysfs thunderbolt: link speed and generation") {
  auto one = [](const std::string& host_gen, const std::string& speed, const std::string& lanes) {
    std::string dump =
        kTb + "0-0/unique_id:h\n" + kTb + "0-1/unique_id:p\n" + kTb + "0-1.0/key:network\n";
    if (!host_gen.empty()) dump += kTb + "0-0/generation:" + host_gen + "\n";
    if (!speed.empty()) dump += kTb + "0-1/rx_speed:" + speed + "\n";
    if (!lanes.empty()) dump += kTb + "0-1/rx_lanes:" + lanes + "\n";
    auto r = parse_sysfs_thunderbolt(dump);
    REQUIRE(r.ok());
    REQUIRE(r->xdomains.size() == 1);
    return std::pair{r->xdomains[0].link_speed_gbps, r->xdomains[0].generation};
  };
  // Thunderbolt 3 host-to-host: "20.0 Gb/s" x 2 lanes = 40, generation capped at the host's 3.
  CHECK(one("3", "20.0 Gb/s", "2") == std::pair{40, 3});
  CHECK(one("4", "20.0 Gb/s", "2") == std::pair{40, 4});  // USB4 / Thunderbolt 4
  CHECK(one("4", "40.0 Gb/s", "2") == std::pair{80, 5});  // USB4 v2 host router says 4
  CHECK(one("", "40.0 Gb/s", "2") == std::pair{80, 5});
  CHECK(one("4", "40.0 Gb/s", "3") == std::pair{120, 5});  // asymmetric, receiving side
  CHECK(one("4", "20.0 Gb/s", "1") == std::pair{20, 3});
  CHECK(one("2", "10.0 Gb/s", "2") == std::pair{20, 2});  // Falcon Ridge host
  CHECK(one("4", "10.5 Gb/s", "2") == std::pair{21, 3});  // tenths count
  // Missing or unreadable files: unknown.
  CHECK(one("4", "40.0 Gb/s", "") == std::pair{0, 0});
  CHECK(one("4", "", "2") == std::pair{0, 0});
  CHECK(one("4", "fast", "2") == std::pair{0, 0});
  CHECK(one("4", "40.0 Mb/s", "2") == std::pair{0, 0});
  CHECK(one("4", "40. Gb/s", "2") == std::pair{0, 0});
  CHECK(one("4", "40.0 Gb/s", "two") == std::pair{0, 0});
  CHECK(one("4", "99999999999999999999 Gb/s", "2") == std::pair{0, 0});
  CHECK(one("4", "40.0 Gb/s", "99999999999") == std::pair{0, 0});
}

TEST_CASE("sysfs thunderbolt: several domains, natural order, first line of a file") {
  auto r = parse_sysfs_thunderbolt(
      kTb + "10-0/unique_id:uuid-10\n" + kTb + "2-0/unique_id:uuid-2\n" + kTb +
      "2-0/unique_id:second line ignored\n" + kTb + "10-1/unique_id:peer-10-1\n" + kTb +
      "2-301/unique_id:peer-2-301\n" + kTb + "2-3/unique_id:peer-2-3\n" + kTb +
      "10-1.0/key:network\n" + kTb + "2-301.0/key:network\n" + kTb + "2-3.0/key:network\n" + kTb +
      "2-3.0/net/thunderbolt2/ifindex:9\n" + kTb + "2-3.1/net/thunderbolt3/ifindex:10\n" + kTb +
      "domain2/security:user\n" +                  // not a router: ignored
      kTb + "2-3/authorized:1\n" +                 // a file the parser does not use: ignored
      kTb + "2-3/net/x/y/z:1\n" +                  // unexpected depth: ignored
      kTb + "2-1A/unique_id:upper-case-route\n" +  // not a kernel name: ignored
      "\n   \n" + kTb + "0-0/device_name:  Spaced  Name  \r\n");
  REQUIRE(r.ok());
  CHECK(r->host_uuids == std::vector<std::pair<int, std::string>>{{2, "uuid-2"}, {10, "uuid-10"}});
  REQUIRE(r->xdomains.size() == 3);
  CHECK(r->xdomains[0].device == "2-3");
  CHECK(r->xdomains[0].domain == 2);
  CHECK(r->xdomains[0].interface == "thunderbolt2");  // its first service's netdev
  CHECK(r->xdomains[1].device == "2-301");
  CHECK(r->xdomains[1].interface == "");
  CHECK(r->xdomains[2].device == "10-1");
  CHECK(r->xdomains[2].domain == 10);
  CHECK(r->xdomains[2].unique_id == "peer-10-1");
}

TEST_CASE("sysfs thunderbolt: empty dump is no Thunderbolt, malformed lines are errors") {
  auto empty = parse_sysfs_thunderbolt("");
  REQUIRE(empty.ok());
  CHECK(empty->host_uuids.empty());
  CHECK(empty->xdomains.empty());
  CHECK(parse_sysfs_thunderbolt("\n\n")->xdomains.empty());

  CHECK(error_of(parse_sysfs_thunderbolt(kTb + "0-0/unique_id:u\n" + kTb + "0-1/unique_id\n")) ==
        tb_prefix() + "line 2: no ':' after the path in \"" + kTb + "0-1/unique_id\"");
  CHECK(error_of(parse_sysfs_thunderbolt("grep: /sys/bus: Permission denied\n")) ==
        tb_prefix() + "line 1: path \"grep\" is outside /sys/bus/thunderbolt/devices/");
  CHECK(error_of(parse_sysfs_thunderbolt("/sys/class/net/eth0/ifindex:2\n")) ==
        tb_prefix() +
            "line 1: path \"/sys/class/net/eth0/ifindex\" is outside "
            "/sys/bus/thunderbolt/devices/");
  CHECK(error_of(parse_sysfs_thunderbolt(kTb + "0-1:x\n")) ==
        tb_prefix() + "line 1: path \"" + kTb +
            "0-1\" is not a file of a device in /sys/bus/thunderbolt/devices/");
  CHECK(error_of(parse_sysfs_thunderbolt(kTb + "0-1//unique_id:x\n")).starts_with(tb_prefix()));
  CHECK(error_of(parse_sysfs_thunderbolt(kTb + "../0-1/unique_id:x\n")).starts_with(tb_prefix()));
}

TEST_CASE("sysfs infiniband: ConnectX RoCE host (the sysfs form of rdma-link-show.txt)") {
  auto r = parse_sysfs_infiniband(fixture("linux/sysfs-infiniband-roce.txt"));
  REQUIRE(r.ok());
  REQUIRE(r->size() == 2);
  const RdmaDevice& a = (*r)[0];
  CHECK(a.name == "mlx5_0");
  CHECK(a.node_guid == "98f2:b3ff:ffd2:d4e2");
  CHECK(a.transport == "InfiniBand (0)");
  CHECK(a.netdev == "p1p1");
  REQUIRE(a.ports.size() == 1);
  CHECK(a.ports[0].port == 1);
  CHECK(a.ports[0].state == "ACTIVE");
  CHECK(a.ports[0].active);
  CHECK(a.ports[0].active_mtu == 0);
  CHECK(a.ports[0].link_layer == "Ethernet");
  REQUIRE(a.ports[0].gids.size() == 4);  // 4..11 are the unused all-zero entries
  CHECK(a.ports[0].gids[0].index == 0);
  CHECK(a.ports[0].gids[0].gid == "fe80::9af2:b3ff:fed2:d4e2");
  CHECK(a.ports[0].gids[1].index == 1);
  CHECK(a.ports[0].gids[1].gid == "fe80::9af2:b3ff:fed2:d4e2");
  CHECK(a.ports[0].gids[2].index == 2);
  CHECK(a.ports[0].gids[2].gid == "::ffff:10.0.0.1");
  CHECK(a.ports[0].gids[3].index == 3);
  CHECK(a.ports[0].gids[3].gid == "::ffff:10.0.0.1");
  const RdmaDevice& b = (*r)[1];
  CHECK(b.name == "mlx5_1");
  CHECK(b.netdev == "p1p2");
  REQUIRE(b.ports.size() == 1);
  CHECK(b.ports[0].state == "DOWN");
  CHECK_FALSE(b.ports[0].active);
  REQUIRE(b.ports[0].gids.size() == 2);
  CHECK(b.ports[0].gids[1].gid == "fe80::9af2:b3ff:fed2:d4e3");
}

TEST_CASE("sysfs infiniband: Soft-RoCE lab devices in natural order, GIDs by index") {
  std::string dump;
  for (std::string dev : {"rxe_tb1", "rxe_tb10", "rxe_tb2"}) {
    std::string p = kIb + dev + "/";
    dump += p + "node_guid:0200:00ff:fe00:0001\n" + p + "node_type:1: CA\n" + p +
            "ports/1/state:4: ACTIVE\n" + p + "ports/1/phys_state:5: LinkUp\n" + p +
            "ports/1/rate:10 Gb/sec (1X QDR)\n" + p + "ports/1/link_layer:Ethernet\n";
    // The glob sorts 0, 1, 10, 2: indexes are numbers.
    dump += p + "ports/1/gids/0:fe80:0000:0000:0000:0200:00ff:fe00:0001\n";
    dump += p + "ports/1/gids/1:FE80:0000:0000:0000:0200:00FF:FE00:0001\n";
    dump += p + "ports/1/gids/10:0000:0000:0000:0000:0000:ffff:0a00:0001\n";
    dump += p + "ports/1/gids/2:0000:0000:0000:0000:0000:0000:0000:0000\n";
    dump += p + "ports/1/gid_attrs/ndevs/1:" + dev.substr(4) + "\n";
    dump += p + "ports/1/gid_attrs/ndevs/10:other\n";
  }
  auto r = parse_sysfs_infiniband(dump);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 3);
  CHECK((*r)[0].name == "rxe_tb1");
  CHECK((*r)[1].name == "rxe_tb2");
  CHECK((*r)[2].name == "rxe_tb10");
  CHECK((*r)[2].netdev == "tb10");  // GID 1 is the first with an ndev
  const auto& gids = (*r)[0].ports.at(0).gids;
  REQUIRE(gids.size() == 3);
  CHECK(gids[0].index == 0);
  CHECK(gids[0].gid == "fe80::200:ff:fe00:1");
  CHECK(gids[1].index == 1);
  CHECK(gids[1].gid == "fe80::200:ff:fe00:1");
  CHECK(gids[2].index == 10);
  CHECK(gids[2].gid == "::ffff:10.0.0.1");
}

TEST_CASE("sysfs infiniband: InfiniBand ports, iWARP, multi-port, missing files, garbage") {
  std::string dump =
      kIb + "mlx4_0/node_guid:0002:c903:00a1:b2c3\n" + kIb + "mlx4_0/node_type:1: CA\n" + kIb +
      "mlx4_0/ports/2/state:1: DOWN\n" + kIb + "mlx4_0/ports/1/state:4: ACTIVE\n" + kIb +
      "mlx4_0/ports/1/link_layer:InfiniBand\n" + kIb + "mlx4_0/ports/2/link_layer:Ethernet\n" +
      kIb + "mlx4_0/ports/1/gids/0:fe80:0000:0000:0000:0002:c903:00a1:b2c4\n" + kIb +
      "mlx4_0/ports/1/gids/1:not a gid\n" +  // skipped
      kIb + "mlx4_0/ports/2/gids/0:fe80:0000:0000:0000:0202:c9ff:fea1:b2c5\n" + kIb +
      "mlx4_0/ports/2/gid_attrs/ndevs/0:eth2\n" + kIb +
      "mlx4_0/ports/2/gid_attrs/types/0:RoCE v2\n" + kIb +
      "mlx4_0/ports/2/lid:0x0\n" +  // a file the parser does not use
      kIb + "iwp0s1/node_type:4: RNIC\n" + kIb + "iwp0s1/ports/1/state:ACTIVE\n" + kIb +
      "odd0/node_type:9: <unknown>\n" + kIb + "odd0/node_type:1: CA\n";
  auto r = parse_sysfs_infiniband(dump);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 3);
  const RdmaDevice& iw = (*r)[0];
  CHECK(iw.name == "iwp0s1");
  CHECK(iw.transport == "iWARP (1)");
  CHECK(iw.node_guid == "");
  CHECK_FALSE(iw.netdev.has_value());
  REQUIRE(iw.ports.size() == 1);
  CHECK(iw.ports[0].state == "ACTIVE");  // no "N: " prefix: kept as is
  CHECK(iw.ports[0].active);
  CHECK(iw.ports[0].link_layer == "");
  CHECK(iw.ports[0].gids.empty());
  const RdmaDevice& mlx = (*r)[1];
  CHECK(mlx.name == "mlx4_0");
  CHECK(mlx.netdev == "eth2");  // port 1 (InfiniBand) has no ndev
  REQUIRE(mlx.ports.size() == 2);
  CHECK(mlx.ports[0].port == 1);
  CHECK(mlx.ports[0].link_layer == "InfiniBand");
  REQUIRE(mlx.ports[0].gids.size() == 1);
  CHECK(mlx.ports[0].gids[0].gid == "fe80::2:c903:a1:b2c4");
  CHECK(mlx.ports[1].port == 2);
  CHECK(mlx.ports[1].state == "DOWN");
  CHECK_FALSE(mlx.ports[1].active);
  CHECK(mlx.ports[1].gids.at(0).gid == "fe80::202:c9ff:fea1:b2c5");
  const RdmaDevice& odd = (*r)[2];
  CHECK(odd.transport == "");  // first line of node_type wins; type 9 is unknown
  CHECK(odd.ports.empty());
}

TEST_CASE("sysfs infiniband: empty dump is no devices, malformed lines are errors") {
  auto empty = parse_sysfs_infiniband("");
  REQUIRE(empty.ok());
  CHECK(empty->empty());
  CHECK(error_of(parse_sysfs_infiniband(kIb + "mlx5_0/node_guid\n")) ==
        ib_prefix() + "line 1: no ':' after the path in \"" + kIb + "mlx5_0/node_guid\"");
  CHECK(error_of(parse_sysfs_infiniband(kIb + "mlx5_0/node_type:1: CA\n" +
                                        "/sys/bus/thunderbolt/devices/0-1/unique_id:x\n")) ==
        ib_prefix() +
            "line 2: path \"/sys/bus/thunderbolt/devices/0-1/unique_id\" is outside "
            "/sys/class/infiniband/");
  CHECK(error_of(parse_sysfs_infiniband(kIb + "mlx5_0:x\n")) ==
        ib_prefix() + "line 1: path \"" + kIb +
            "mlx5_0\" is not a file of a device in /sys/class/infiniband/");
  CHECK(error_of(parse_sysfs_infiniband(kIb + "mlx5_0/ports/one/state:4: ACTIVE\n")) ==
        ib_prefix() + "line 1: port \"one\" is not a number");
  CHECK(error_of(parse_sysfs_infiniband(kIb + "mlx5_0/ports/1/gids/x:fe80::1\n")) ==
        ib_prefix() + "line 1: GID index \"x\" is not a number");
  CHECK(error_of(parse_sysfs_infiniband(kIb + "mlx5_0/ports/1/gid_attrs/ndevs/-1:eth0\n")) ==
        ib_prefix() + "line 1: GID index \"-1\" is not a number");
}

TEST_CASE("sysfs: truncated and mutated dumps give a value or an error naming the command") {
  std::uint32_t seed = 4242;
  auto next = [&seed] {
    seed = seed * 1103515245U + 12345U;
    return seed >> 8;
  };
  const char specials[] = {'\0', '\n', ':', '/', '.', '-', ' ', '0', '9', 'a', '\xff'};
  auto mutate = [&](const std::string& text) {
    std::vector<std::string> out{text};
    for (std::size_t cut = 0; cut < text.size(); cut += 1 + text.size() / 30) {
      out.push_back(text.substr(0, cut));
    }
    for (int k = 0; k < 200; ++k) {
      std::string m = text;
      for (int n = 0; n < 1 + k % 5; ++n)
        m[next() % m.size()] = specials[next() % sizeof(specials)];
      out.push_back(m);
    }
    return out;
  };
  for (const std::string& text : mutate(fixture("linux/sysfs-thunderbolt-xdomain.txt"))) {
    auto r = parse_sysfs_thunderbolt(text);
    if (!r.ok()) CHECK(r.error().message.starts_with(tb_prefix()));
  }
  for (const std::string& text : mutate(fixture("linux/sysfs-infiniband-roce.txt"))) {
    auto r = parse_sysfs_infiniband(text);
    if (!r.ok()) CHECK(r.error().message.starts_with(ib_prefix()));
  }
}
