#include "util/self_exe.h"

#include <system_error>

namespace cc::util {

std::filesystem::path executable_path() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : p;
}

}  // namespace cc::util
