// Parsers of the two Linux sysfs dumps the probe takes with `grep -s -H . FILES...` (through
// `sh -c`, for the globs): one line per line of each readable, non-empty file,
//   /sys/bus/thunderbolt/devices/0-1/rx_speed:40.0 Gb/s
//   /sys/class/infiniband/rxe_tb1/ports/1/gids/0:fe80:0000:0000:0000:0000:00ff:fe00:0001
// PATH never holds ':' (none of the globs can match a USB4 retimer, "0-0:1.1"), so the first
// ':' ends it; VALUE may hold more (GIDs, GUIDs). A file of several lines gives several lines
// with the same path (the first one is used); missing, unreadable and empty files are simply
// absent. grep's exit status says nothing useful (2 as soon as one glob matches nothing), so
// callers read stdout whatever it is. Formats: the kernel's sysfs ABI
// (Documentation/ABI/testing/sysfs-bus-thunderbolt, sysfs-class-infiniband) and
// docs/platform.md#thunderbolt-and-rdma-on-linux; the recorded-by-hand dumps are
// tests/data/fixtures/linux/sysfs-*.txt.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "discovery/host_facts.h"
#include "util/result.h"

namespace cc::discovery {

/// The Thunderbolt dump. Besides the identity and link files of every router and XDomain, it
/// lists the netdev of each XDomain service (thunderbolt-net: N-M.S/net/IF) and each service's
/// protocol key (N-M.S/key: "network"), which is what tells an XDomain from a device router
/// (see parse_sysfs_thunderbolt).
inline constexpr std::string_view kSysfsThunderboltCommand =
    "grep -s -H . /sys/bus/thunderbolt/devices/*/unique_id "
    "/sys/bus/thunderbolt/devices/*/device_name /sys/bus/thunderbolt/devices/*/vendor_name "
    "/sys/bus/thunderbolt/devices/*/rx_speed /sys/bus/thunderbolt/devices/*/tx_speed "
    "/sys/bus/thunderbolt/devices/*/rx_lanes /sys/bus/thunderbolt/devices/*/tx_lanes "
    "/sys/bus/thunderbolt/devices/*/generation /sys/bus/thunderbolt/devices/*/net/*/ifindex "
    "/sys/bus/thunderbolt/devices/*.*/key";

/// The RDMA dump: per device its node GUID and type, per port its state, physical state, rate
/// and link layer, its GID table and the netdev of each GID (RoCE). GID types
/// (gid_attrs/types) are left out: HostFacts has no place for them.
inline constexpr std::string_view kSysfsInfinibandCommand =
    "grep -s -H . /sys/class/infiniband/*/node_guid /sys/class/infiniband/*/node_type "
    "/sys/class/infiniband/*/ports/*/state /sys/class/infiniband/*/ports/*/phys_state "
    "/sys/class/infiniband/*/ports/*/rate /sys/class/infiniband/*/ports/*/link_layer "
    "/sys/class/infiniband/*/ports/*/gids/* /sys/class/infiniband/*/ports/*/gid_attrs/ndevs/*";

/// A remote host on a Thunderbolt cable (an XDomain, sysfs name "N-M").
struct ThunderboltXDomain {
  std::string device;       // "0-1": domain 0, route 1 (hexadecimal route string)
  int domain = 0;           // N of "N-M"
  std::string unique_id;    // remote host's UUID (docs/platform.md#thunderbolt-and-rdma-on-linux)
  std::string device_name;  // as the remote host advertises it ("" when absent)
  std::string vendor_name;  // "" when absent
  int link_speed_gbps = 0;  // per direction: rx_speed per lane x rx_lanes ("40.0 Gb/s" x 2 =
                            // 80; tx_* when rx_* is missing); 0 unknown (before Linux 5.11)
  int generation = 0;       // of the link: 5 (80 Gb/s and up), 4 (40 Gb/s), 3 (below); capped
                            // at the domain's host router generation when that is 1..3
                            // (Thunderbolt 1-3 controller); 0 unknown (no link speed)
  std::string interface;    // "thunderbolt0": the thunderbolt-net netdev of its service
                            // (N-M.S/net/IF), "" if none
};

struct LinuxThunderbolt {
  std::vector<std::pair<int, std::string>> host_uuids;  // (domain, unique_id of the host router
                                                        // N-0), by domain
  std::vector<ThunderboltXDomain> xdomains;  // remote peers N-M (M != 0) that have a unique_id,
                                             // natural order of device
};

/// Parses the kSysfsThunderboltCommand dump. Empty dump (no Thunderbolt, or the driver is not
/// loaded) -> no host routers, no XDomains.
///
/// Telling entries apart (sysfs lists host routers, device routers and XDomains all as
/// "N-M", route M in hex; services as "N-M.S"):
///   - N-0 is the host router of domain N;
///   - N-M with a service child N-M.S in the dump (its key or its netdev) is an XDomain: only
///     XDomains have services (sysfs-bus-thunderbolt, "<xdomain>.<service>");
///   - otherwise N-M with a `generation` is a device router (dock, adapter, drive): routers
///     have it since Linux 5.5, XDomains never do (drivers/thunderbolt/xdomain.c lists no
///     such attribute);
///   - otherwise N-M with link files (rx/tx speed or lanes) is an XDomain: XDomains have them
///     since Linux 5.11, by when a router would have shown its generation;
///   - otherwise (identity files only: a kernel before 5.5, or a router in safe mode) it is
///     taken for a device: a remote host is only claimed on evidence.
/// Unknown files and names that are neither N-M nor N-M.S (domainN) are ignored; unparsable
/// speeds or lanes make the speed 0 (unknown).
/// Errors (parse_error naming the command): a non-blank line without ':' after its path, a
/// path outside /sys/bus/thunderbolt/devices/ or with no file below the device.
util::Result<LinuxThunderbolt> parse_sysfs_thunderbolt(std::string_view dump);

/// Parses the kSysfsInfinibandCommand dump into devices (natural order of name) with:
///   name (the directory), node_guid as printed ("0002:c903:00a1:b2c3"), transport from
///   node_type as ibv_devinfo prints it ("1: CA" -> "InfiniBand (0)", "4: RNIC" -> "iWARP (1)";
///   "" when unknown), netdev = the ndev of the first GID (ports in order, then GID index)
///   that has one;
///   ports in port order: state from "4: ACTIVE" -> "ACTIVE" (as `rdma link` prints it),
///   active (state "ACTIVE"), link_layer ("InfiniBand", "Ethernet"), gids in index order
///   without the unused all-zero entries, each in compressed IPv6 form ("fe80::200:ff:fe00:1",
///   IPv4-mapped "::ffff:10.0.0.1"); a GID that is not an IPv6 address is skipped. active_mtu
///   stays 0 (sysfs has no such file).
/// Empty dump (no RDMA subsystem, no devices) -> no devices.
/// Errors (parse_error naming the command): a non-blank line without ':' after its path, a
/// path outside /sys/class/infiniband/ or with no file below the device, a port or GID index
/// that is not a number.
util::Result<std::vector<RdmaDevice>> parse_sysfs_infiniband(std::string_view dump);

}  // namespace cc::discovery
