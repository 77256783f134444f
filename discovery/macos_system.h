// Parsers for the small macOS probes: `rdma_ctl status`, `sw_vers`, and
// `sysctl -n hw.model hw.memsize [machdep.cpu.brand_string]`. Each is a few lines of text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "discovery/host_facts.h"
#include "util/result.h"

namespace cc::discovery {

inline constexpr std::string_view kRdmaCtlCommand = "rdma_ctl status";
inline constexpr std::string_view kSwVersCommand = "sw_vers";
inline constexpr std::string_view kSysctlCommand =
    "sysctl -n hw.model hw.memsize machdep.cpu.brand_string";

/// `rdma_ctl status` prints "enabled" or "disabled" (docs/platform.md#enabling-rdma-on-a-mac;
/// case and surrounding blanks ignored) -> kEnabled / kDisabled. Errors (parse_error): empty
/// output, anything else.
/// rdma_ctl missing (older macOS: exit 127) is the caller's to map to kUnsupported.
util::Result<RdmaState> parse_rdma_ctl_status(std::string_view out);

/// `sw_vers`: "ProductName:\tmacOS", "ProductVersion:\t26.2", "BuildVersion:\t25C56"
/// (older releases say "Mac OS X"). Errors (parse_error): empty output, no ProductName or
/// ProductVersion.
util::Result<OsInfo> parse_sw_vers(std::string_view out);

struct MacHardware {
  std::string model;               // hw.model, "Mac16,9"
  std::uint64_t memory_bytes = 0;  // hw.memsize (bytes)
  std::string cpu;                 // machdep.cpu.brand_string ("Apple M3 Ultra"); "" if absent
};

/// `sysctl -n hw.model hw.memsize [machdep.cpu.brand_string]`: one value per line, in that
/// order; blank lines are skipped. Errors (parse_error): fewer than two values, a memsize that is
/// not a positive integer.
util::Result<MacHardware> parse_sysctl_hw(std::string_view out);

}  // namespace cc::discovery
