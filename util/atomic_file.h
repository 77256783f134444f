// Atomic file writes: every file clusterctl writes goes through here, so a crash or Ctrl-C
// never leaves a half-written state file, key or inventory behind.
#pragma once

#include <filesystem>
#include <string_view>

#include "util/result.h"

namespace cc::util {

/// Writes `content` to `path` atomically: a temporary file in the same directory, fsync, chmod
/// to `mode`, rename over `path`, fsync of the directory. Creates missing parent directories
/// (mode 0700). Errors: ExitCode::kUsage with the path and the OS error (e.g. "permission
/// denied"); the temporary file is removed on failure.
Status write_file_atomic(const std::filesystem::path& path, std::string_view content,
                         unsigned mode = 0644);

/// Reads a whole file. Errors: ExitCode::kUsage naming the path and the OS error.
Result<std::string> read_file(const std::filesystem::path& path);

}  // namespace cc::util
