// Parsers for Linux host files: /etc/os-release (os-release(5): KEY=VALUE lines, values
// optionally quoted with " or ' and backslash escapes inside double quotes) and /proc/meminfo
// ("MemTotal:       24683652 kB").
#pragma once

#include <cstdint>
#include <string_view>

#include "discovery/host_facts.h"
#include "util/result.h"

namespace cc::discovery {

inline constexpr std::string_view kOsReleaseCommand = "cat /etc/os-release";
inline constexpr std::string_view kMeminfoCommand = "cat /proc/meminfo";

/// name = NAME (or ID), version = VERSION_ID (or "" on rolling releases), build = "".
/// Errors (parse_error): empty output, neither NAME nor ID.
util::Result<OsInfo> parse_os_release(std::string_view out);

/// MemTotal in bytes (the file's "kB" is KiB: x 1024). Errors (parse_error): no MemTotal line,
/// a value that is not a number, a unit other than kB, overflow.
util::Result<std::uint64_t> parse_meminfo_total(std::string_view out);

}  // namespace cc::discovery
