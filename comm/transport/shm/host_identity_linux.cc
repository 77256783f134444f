// host_identity() on Linux: boot ID, mount and network namespace, uid (shm_setup.h).
#include <unistd.h>

#include <fstream>
#include <string>

#include "comm/transport/shm/shm_setup.h"

namespace cc::comm::shm {
namespace {

std::string link_of(const char* path) {
  char buf[256];
  const ssize_t n = ::readlink(path, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("?");
}

}  // namespace

std::string host_identity() {
  std::string boot;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, boot);
  if (boot.empty()) {  // no /proc: fall back to the host name alone
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    boot = name;
  }
  return "linux " + boot + " " + link_of("/proc/self/ns/mnt") + " " +
         link_of("/proc/self/ns/net") + " uid " + std::to_string(::getuid());
}

}  // namespace cc::comm::shm
