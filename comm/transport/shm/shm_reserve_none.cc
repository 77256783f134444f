// Where shared memory is not a file system that fills up (macOS): nothing to reserve.
#include "comm/transport/shm/shm_segment.h"

namespace cc::comm::shm {

int reserve_shared_memory(int /*fd*/, size_t /*bytes*/) {
  return 0;
}

}  // namespace cc::comm::shm
