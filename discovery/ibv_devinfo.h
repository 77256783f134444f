// Parser for `ibv_devinfo` and `ibv_devinfo -v` (rdma-core; macOS librdma). Layout:
//   hca_id:	rdma_en2
//   	transport:			Thunderbolt (100)
//   	node_guid:			0000:0000:0000:0004
//   		port:	1
//   			state:			PORT_DOWN (1)
//   			active_mtu:		4096 (5)
//   			link_layer:		Thunderbolt
//   			GID[  1]:		::ffff:169.254.205.255      (-v only; Linux may add
//   ", RoCE v2")
// Read as "key: value" tokens, not lines, so a copy with lines run together (TN3205's GID
// table in tests/data/fixtures/macos) parses too. On macOS the transport is
// "Thunderbolt (100)", the port is always 1, and a port is PORT_ACTIVE only when the Mac at the
// other end also has RDMA enabled (docs/platform.md#rdma-devices-and-port-states). GID[1] =
// ::ffff:<IPv4 of enX> exists only while enX has an IPv4 address
// (docs/platform.md#gid-table-and-addressing).
#pragma once

#include <string_view>
#include <vector>

#include "discovery/host_facts.h"
#include "util/result.h"

namespace cc::discovery {

inline constexpr std::string_view kIbvDevinfoCommand = "ibv_devinfo -v";

/// Devices in output order with their ports and GID tables (netdev is left unset).
/// "No IB devices found" -> empty list. Errors (parse_error): empty output, text with no
/// "hca_id:" at all, a port or GID before any device / port, a port or GID index that is not
/// a number, a key at the very end without its value.
util::Result<std::vector<RdmaDevice>> parse_ibv_devinfo(std::string_view out);

}  // namespace cc::discovery
