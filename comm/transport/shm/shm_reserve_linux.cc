// Linux: allocate the shared memory now, so a full /dev/shm (a tmpfs) fails at start-up with
// ENOSPC instead of a SIGBUS at the first touch of a page it cannot back. Zeros are written
// with pwrite (a write to a full tmpfs is an error code); posix_fallocate would do too, but
// macOS lacks it and tests/libcxx/gnu_only.h poisons it in every comm/ file.
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "comm/transport/shm/shm_segment.h"

namespace cc::comm::shm {

int reserve_shared_memory(int fd, size_t bytes) {
  static const char zeros[64 * 1024] = {};
  size_t done = 0;
  while (done < bytes) {
    const size_t n = std::min(sizeof zeros, bytes - done);
    const ssize_t w = ::pwrite(fd, zeros, n, static_cast<off_t>(done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : ENOSPC;
    done += static_cast<size_t>(w);
  }
  return 0;
}

}  // namespace cc::comm::shm
