#include <mach-o/dyld.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <system_error>

#include "util/self_exe.h"

namespace cc::util {

std::filesystem::path executable_path() {
  std::uint32_t size = 0;
  ::_NSGetExecutablePath(nullptr, &size);  // -1, and the size needed (with the NUL)
  if (size == 0) return {};
  std::string buf(size, '\0');
  if (::_NSGetExecutablePath(buf.data(), &size) != 0) return {};
  buf.resize(std::strlen(buf.c_str()));
  // The path the program was started by: it may hold symbolic links and "..".
  std::error_code ec;
  std::filesystem::path p = std::filesystem::canonical(buf, ec);
  return ec ? std::filesystem::path() : p;
}

}  // namespace cc::util
