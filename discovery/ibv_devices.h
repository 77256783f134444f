// Parser for `ibv_devices` (rdma-core; also the macOS build in librdma). Layout:
//       device          	   node GUID            [type]
//       ------          	----------------        [----]
//       rdma_en2        	8096a9d9edbaac05
// Columns are separated by tabs or spaces; rows come unsorted (M3 Ultra fixture); with RDMA
// disabled on macOS only the two header lines are printed
// (docs/platform.md#rdma-devices-and-port-states).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace cc::discovery {

inline constexpr std::string_view kIbvDevicesCommand = "ibv_devices";

struct IbvDevice {
  std::string name;       // "rdma_en2", "mlx4_0"
  std::string node_guid;  // 16 hex digits as printed
};

/// Devices in natural order of name (rdma_en2 < rdma_en10); header only -> empty list.
/// Lines before the header (a shell prompt) are ignored. Errors (parse_error): empty output,
/// no header line, a device row without a node GUID.
util::Result<std::vector<IbvDevice>> parse_ibv_devices(std::string_view out);

}  // namespace cc::discovery
