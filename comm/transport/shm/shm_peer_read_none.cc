// Where no process may read another's memory by address (macOS has no process_vm_readv; its
// mach_vm_read needs the task port, which only root or a debugger gets): no single copy, the
// rings carry everything.
#include <cerrno>

#include "comm/transport/shm/shm_segment.h"

namespace cc::comm::shm {

int read_peer_memory(int64_t /*pid*/, void* /*dst*/, uint64_t /*src*/, size_t /*bytes*/) {
  return ENOSYS;
}

bool peer_memory_readable() {
  return false;
}

}  // namespace cc::comm::shm
