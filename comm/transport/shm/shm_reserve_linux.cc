// Linux: allocate the shared memory now (tmpfs), so a full /dev/shm fails at start-up.
#include <fcntl.h>

#include "comm/transport/shm/shm_segment.h"

namespace cc::comm::shm {

int reserve_shared_memory(int fd, size_t bytes) {
  return ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
}

}  // namespace cc::comm::shm
