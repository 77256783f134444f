// host_identity() where there is no /proc (macOS): host name and uid (shm_setup.h).
#include <unistd.h>

#include <string>

#include "comm/transport/shm/shm_setup.h"

namespace cc::comm::shm {

std::string host_identity() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return std::string("host ") + name + " uid " + std::to_string(::getuid());
}

}  // namespace cc::comm::shm
