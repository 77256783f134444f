// Parser for iproute2's `rdma -j link` on Linux: an array of
//   {"ifindex": 0, "ifname": "mlx5_0", "port": 1, "state": "ACTIVE",
//    "physical_state": "LINK_UP", "netdev": "p1p1", "netdev_index": 4}
// (the text form, `rdma link show`, is in tests/data/fixtures/linux/rdma-link-show.txt).
// Without an RDMA subsystem, `rdma` prints "Failed to open NETLINK_RDMA socket" on stderr and
// exits 1 (docs/platform.md#thunderbolt-and-rdma-on-linux): that means "no RDMA here", not a
// failure.
#pragma once

#include <string_view>
#include <vector>

#include "discovery/host_facts.h"
#include "util/result.h"

namespace cc::discovery {

inline constexpr std::string_view kRdmaLinkCommand = "rdma -j link";

struct RdmaLinks {
  bool subsystem = true;            // false: no RDMA subsystem in this kernel
  std::vector<RdmaDevice> devices;  // one per device, ports merged, natural order of name;
                                    // netdev = the first port's netdev
};

/// True when `err` is iproute2's "no RDMA subsystem" message.
bool is_no_rdma_subsystem(std::string_view err);

/// Parses the command's outcome. exit 1 with the no-subsystem message -> {subsystem = false}.
/// Empty stdout with exit 0 -> no devices. Errors (parse_error): another non-zero exit
/// (message quotes stderr), invalid JSON, not an array, an entry without "ifname".
util::Result<RdmaLinks> parse_rdma_link(std::string_view out, std::string_view err,
                                        int exit_status);

}  // namespace cc::discovery
