#include "comm/transport/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <random>
#include <utility>

#include "comm/error.h"

namespace cc::comm::shm {
namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

Error sys_error(const std::string& what, const std::string& name, int err) {
  return Error(ErrorKind::kSystem, what + " of shared memory " + name + " failed: " +
                                       errno_text(err));
}

// Closes an fd on every path out of create/open.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

// Maps the whole segment with its page tables filled now: otherwise each 4 KiB page costs a
// page fault in every process on first touch, and a ring walks into new pages for its whole
// first lap (n=2 all_reduce, 1000 calls, medians of 9 runs: 512 B took 0.69 us a call, 0.38
// with the pages mapped ahead; 128 B 0.44 and 0.28: the faults, not the copies). Linux:
// MAP_POPULATE; elsewhere a read of every page.
void* map_populated(int fd, size_t bytes) {
#ifdef MAP_POPULATE
  return ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
#else
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p != MAP_FAILED) {
    const long page = ::sysconf(_SC_PAGESIZE);
    const size_t step = page > 0 ? static_cast<size_t>(page) : 4096;
    const volatile unsigned char* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < bytes; i += step) (void)b[i];
  }
  return p;
#endif
}

}  // namespace

size_t segment_bytes(int ranks, size_t ring_bytes) {
  const auto k = static_cast<size_t>(ranks);
  return kHeaderBytes + k * (k - 1) * (kRingCtlBytes + ring_bytes);
}

Segment Segment::create(int ranks, size_t ring_bytes) {
  std::random_device rd;
  char name[32];
  // macOS allows 31 characters (PSHMNAMLEN); this is at most 1 + 5 + 10 + 1 + 8 = 25.
  std::snprintf(name, sizeof name, "/ccshm-%d-%08x", static_cast<int>(::getpid()),
                static_cast<unsigned>(rd()));
  const size_t bytes = segment_bytes(ranks, ring_bytes);
  FdGuard fd{::shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600)};
  if (fd.fd < 0) throw sys_error("shm_open (create)", name, errno);
  Segment s;
  s.name_ = name;
  s.owner_ = true;  // from here on, the destructor unlinks the name
  if (::ftruncate(fd.fd, static_cast<off_t>(bytes)) != 0) {
    throw sys_error("ftruncate to " + std::to_string(bytes) + " bytes", name, errno);
  }
  if (const int err = reserve_shared_memory(fd.fd, bytes); err != 0) {
    throw Error(ErrorKind::kSystem,
                "reserving " + std::to_string(bytes) + " bytes of shared memory (" + name +
                    ") failed: " + errno_text(err) +
                    (err == ENOSPC ? " (/dev/shm is too small: a container needs --shm-size, or "
                                     "set CLUSTERCOMM_TRANSPORT=tcp)"
                                   : ""));
  }
  void* p = map_populated(fd.fd, bytes);
  if (p == MAP_FAILED) throw sys_error("mmap", name, errno);
  s.base_ = p;
  s.bytes_ = bytes;
  // Fresh memory reads as zero: the atomics start at 0, which is their initial state.
  auto* h = new (p) SegmentHeader{};
  h->magic = kSegmentMagic;
  h->version = kSegmentVersion;
  h->ranks = static_cast<uint32_t>(ranks);
  h->ring_bytes = ring_bytes;
  for (auto& b : h->nonce) b = static_cast<unsigned char>(rd());
  h->abort_word.store(0);
  h->mapped_ranks.store(1);
  for (int i = 0; i < ranks; ++i) {
    for (int j = 0; j < ranks; ++j) {
      if (i != j) new (&s.ctl(i, j)) RingCtl{};
    }
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return s;
}

Segment Segment::open(const std::string& name, int ranks, size_t ring_bytes,
                      const unsigned char (&nonce)[16]) {
  FdGuard fd{::shm_open(name.c_str(), O_RDWR, 0)};
  if (fd.fd < 0) throw sys_error("shm_open", name, errno);
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) throw sys_error("fstat", name, errno);
  const size_t bytes = segment_bytes(ranks, ring_bytes);
  if (st.st_size < 0 || static_cast<size_t>(st.st_size) < bytes) {
    throw Error(ErrorKind::kProtocol, "shared memory " + name + " has " +
                                          std::to_string(st.st_size) + " bytes, not " +
                                          std::to_string(bytes));
  }
  void* p = map_populated(fd.fd, bytes);
  if (p == MAP_FAILED) throw sys_error("mmap", name, errno);
  Segment s;
  s.base_ = p;
  s.bytes_ = bytes;
  s.name_ = name;
  const SegmentHeader& h = s.header();
  if (h.magic != kSegmentMagic || h.version != kSegmentVersion ||
      h.ranks != static_cast<uint32_t>(ranks) || h.ring_bytes != ring_bytes ||
      std::memcmp(h.nonce, nonce, sizeof nonce) != 0) {
    throw Error(ErrorKind::kProtocol,
                "shared memory " + name + " is not the segment this host's lowest rank created "
                                          "(another process's, or another machine's /dev/shm)");
  }
  // The last of the k to map it removes the name: even a creator killed from here on leaves
  // nothing behind. (The creator's own unlink later finds it gone; the name holds the
  // creator's pid, which is alive until then, so no other segment can have taken it.)
  if (s.header().mapped_ranks.fetch_add(1) + 1 == static_cast<uint32_t>(ranks)) {
    ::shm_unlink(name.c_str());
  }
  return s;
}

Segment::Segment(Segment&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      name_(std::move(o.name_)),
      owner_(std::exchange(o.owner_, false)) {}

Segment& Segment::operator=(Segment&& o) noexcept {
  if (this != &o) {
    reset();
    base_ = std::exchange(o.base_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    name_ = std::move(o.name_);
    owner_ = std::exchange(o.owner_, false);
  }
  return *this;
}

Segment::~Segment() {
  reset();
}

void Segment::reset() noexcept {
  unlink();
  if (base_ != nullptr) ::munmap(base_, bytes_);
  base_ = nullptr;
  bytes_ = 0;
}

void Segment::unlink() noexcept {
  if (!owner_) return;
  owner_ = false;
  ::shm_unlink(name_.c_str());
}

size_t Segment::ring_offset(int from, int to) const {
  const auto k = static_cast<size_t>(header().ranks);
  const auto i = static_cast<size_t>(from), j = static_cast<size_t>(to);
  // Rings in order (0,1), (0,2), ..., (1,0), (1,2), ...: k - 1 per producer.
  const size_t index = i * (k - 1) + (j < i ? j : j - 1);
  return kHeaderBytes + index * (kRingCtlBytes + header().ring_bytes);
}

RingCtl& Segment::ctl(int from, int to) const {
  void* at = static_cast<unsigned char*>(base_) + ring_offset(from, to);
  return *static_cast<RingCtl*>(at);  // 64-byte aligned: the offsets are multiples of 64
}

unsigned char* Segment::data(int from, int to) const {
  return static_cast<unsigned char*>(base_) + ring_offset(from, to) + kRingCtlBytes;
}

}  // namespace cc::comm::shm
