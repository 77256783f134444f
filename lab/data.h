// Each lab host's private data directory (files.h has its paths): a tmpfs per host, mounted in
// the root namespace at /run/clusterctl/labs/NAME/hosts/hN/data, which the host's sshd (and so
// every session) sees at the one common path /run/clusterctl/labs/NAME/data, as separate
// machines each have their own disk at the same path. Here: the size option and finding the
// lab's mounts in /proc/self/mountinfo. Pure (data_test.cc).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace cc::lab {

/// `lab up --data-size` unless given: 8 GiB per host, a limit (tmpfs takes RAM only for what
/// is written).
inline constexpr std::uint64_t kDefaultDataSize = 8ull << 30;
/// The smallest size accepted: 1 MiB (tmpfs would take size=0 as no limit at all).
inline constexpr std::uint64_t kMinDataSize = 1ull << 20;

/// Parses a `--data-size` value: plain bytes ("67108864") or a whole number with K, M, G or T
/// (powers of 1024, either case, "iB" optional: "512M", "8G", "64MiB").
/// Errors (kUsage) name the flag and the value and show the accepted forms: empty, a fraction,
/// another unit, below kMinDataSize, or beyond 64 bits.
util::Result<std::uint64_t> parse_data_size(std::string_view text);

/// The shortest exact form parse_data_size reads back: "8G", "1536M", "1000" (bytes).
std::string format_data_size(std::uint64_t bytes);

/// One line of /proc/PID/mountinfo (proc(5)): where, what kind, from what.
struct MountEntry {
  std::filesystem::path mount_point;  // octal escapes (\040 for a space) decoded
  std::string fstype;                 // "tmpfs", "nsfs", ...
  std::string source;                 // "clusterctl-lab-NAME-h1", "/dev/vda", ...
};

/// Parses /proc/PID/mountinfo text, in its order (a mount stacked on another comes after it).
/// Lines that are not in the kernel's format are skipped.
std::vector<MountEntry> parse_mountinfo(std::string_view text);

/// The mount points of lab `name`'s data mounts among `mounts`: anything at a host's per-host
/// path (host_data_dir), and a tmpfs with a host's source name (data_mount_source, also a bind
/// mount of one) wherever it is; last
/// mounted first, so unmounting in this order takes stacked mounts off from the top.
std::vector<std::filesystem::path> lab_data_mounts(const std::vector<MountEntry>& mounts,
                                                   std::string_view name);

/// The entries whose mount point is `dir` or lies below it.
std::vector<MountEntry> mounts_below(const std::vector<MountEntry>& mounts,
                                     const std::filesystem::path& dir);

}  // namespace cc::lab
