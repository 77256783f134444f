// Where this program's own executable is, to find files installed beside it.
// One platform file per OS: self_exe_linux.cc (/proc/self/exe), self_exe_macos.cc
// (_NSGetExecutablePath from <mach-o/dyld.h>).
#pragma once

#include <filesystem>

namespace cc::util {

/// The absolute path of the running executable, symbolic links resolved; an empty path when
/// the system cannot say (callers then fall back to PATH lookups).
std::filesystem::path executable_path();

}  // namespace cc::util
