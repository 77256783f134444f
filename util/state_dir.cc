#include "util/state_dir.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "util/atomic_file.h"

namespace cc::util {
namespace {

std::filesystem::path home_dir() {
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return home;
  const passwd* pw = ::getpwuid(::getuid());
  return pw != nullptr && pw->pw_dir != nullptr ? std::filesystem::path(pw->pw_dir) : "/";
}

}  // namespace

std::filesystem::path state_dir() {
  // The specification: a relative XDG_STATE_HOME is invalid and ignored.
  const char* xdg = std::getenv("XDG_STATE_HOME");
  std::filesystem::path base = xdg != nullptr && xdg[0] == '/' ? std::filesystem::path(xdg)
                                                               : home_dir() / ".local" / "state";
  return base / "clusterctl";
}

Result<std::filesystem::path> private_state_dir(const std::filesystem::path& sub) {
  std::filesystem::path dir = state_dir() / sub;
  if (auto st = ensure_private_dir(dir, home_dir()); !st) return st.error();
  return dir;
}

}  // namespace cc::util
