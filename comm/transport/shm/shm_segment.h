// The shared-memory segment of the ranks on one host (POSIX shm: shm_open + mmap, as on Linux
// and macOS alike), and the single-producer/single-consumer byte rings inside it.
//
// Layout: an 8192-byte header {magic, version, ranks k, ring bytes C, 16-byte nonce, the abort
// word, a WaitBoard per rank: heartbeat, last movement, whom it waits on; a Reach per rank: its
// pid, where its nonce is, whose memory it may read (single copy)}, then k(k-1) rings, one
// per ordered pair of local ranks (i -> j), each a 256-byte control block (head, tail and the two
// sleep flags on cache lines of their own) and C data bytes. head and tail count bytes ever written
// and consumed, so the ring holds head - tail bytes and never needs a "full" flag; C is a power of
// two, so a position is a mask away.
//
// Memory order: the producer fills data, then stores head (release); the consumer loads head
// (acquire), reads the data, then stores tail (release); the producer loads tail (acquire)
// before reusing the space. A reader about to sleep sets reader_sleeping and loads head again
// (both seq_cst); a writer, after storing head, fences (seq_cst) and loads reader_sleeping:
// one of the two sees the other, so a wake-up is never lost (shm_transport.h sends it).
//
// The name goes as soon as every local rank has mapped the segment: the rank whose open makes
// the count of mapped ranks k unlinks it (so a creator killed after its offer leaves nothing),
// and the creator unlinks it too once every rank has answered or given up (shm_setup.h); a rank
// told the name whose setup then fails (the creator died) unlinks it as well. So nothing is
// left in /dev/shm after the job, even after kill -9; the memory goes when the last rank unmaps
// it. What can still leave a name: the creator killed in the microseconds between creating the
// segment and sending its offer, or every rank that was told the name killed as well; then
// `rm /dev/shm/ccshm-<pid>-*` of a pid that is gone is safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "comm/transport/transport.h"

namespace cc::comm::shm {

inline constexpr uint64_t kSegmentMagic = 0x434353484d534731ull;  // "CCSHMSG1"
// 3: moved_ns; 4: the WaitBoard (waiting_on); 5: messages padded to 16 bytes (shm_transport.h);
// 6: single copy (SegmentHeader::reach, the ring's by-reference messages). Carried in the
// rendezvous join (bootstrap.cc, wire protocol 4 on): a rank whose build differs here fails the
// job at start-up, so bump it with any change to the layout below.
inline constexpr uint32_t kSegmentVersion = 6;
inline constexpr size_t kHeaderBytes = 8192;
/// Ranks one segment serves (one heartbeat slot each); a host with more runs them on TCP.
inline constexpr int kMaxLocalRanks = 64;
inline constexpr size_t kRingCtlBytes = 256;

static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory rings need lock-free "
                                                           "64-bit atomics");
static_assert(std::atomic<uint32_t>::is_always_lock_free);

struct RingCtl {
  alignas(64) std::atomic<uint64_t> head;  // bytes written by the producer, ever
  alignas(64) std::atomic<uint64_t> tail;  // bytes consumed by the consumer, ever
  alignas(64) std::atomic<uint32_t> reader_sleeping;  // 1: the consumer blocks, wake it
  alignas(64) std::atomic<uint32_t> writer_sleeping;  // 1: the producer blocks on a full ring
};
static_assert(sizeof(RingCtl) == kRingCtlBytes);

struct SegmentHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t ranks;       // local ranks k
  uint64_t ring_bytes;  // C, a power of two
  unsigned char nonce[16];
  /// 0, or ((local index of the rank that aborted first) + 1) << 32 | (the world rank it gave
  /// up on) + 1: read by spinning peers so they stop at once, before the ABORT record on the
  /// socket arrives. One word, so the two halves are always seen together.
  std::atomic<uint64_t> abort_word;
  /// Local ranks that have mapped the segment (the creator counts itself): the open that
  /// brings it to k unlinks the name.
  std::atomic<uint32_t> mapped_ranks;
  /// Per local rank, what it publishes about its waits (Transport's WaitBoard, written by that
  /// rank only): beat_ns, when it last ran a wait loop, its own or its cable transport's (a
  /// waiting rank refreshes it at least every 100 ms, so one that is seconds old belongs to a
  /// rank that is stopped or busy outside the library); moved_ns, when it last saw data move on
  /// any of its connections, the cables included (0: never): a rank waiting on it counts that as
  /// movement, so a rank waiting on its host's leader while the leader exchanges data with
  /// other hosts is not cut off by the stall timeout; waiting_on, the world rank + 1 its latest
  /// wait is on, so a timeout names what a waited-on rank of this host waits for itself.
  struct alignas(64) Beat {
    WaitBoard board;
  };
  Beat beats[kMaxLocalRanks];
  /// Per local rank, for single copy (shm_transport.h, "Single copy"): its pid, and the
  /// address of its own mapping of `nonce` in its address space (a peer proves that it may
  /// read this rank's memory by reading the nonce there), stored before the pid; then the local
  /// ranks whose memory it has proven it can read (bit i: local index i). Written by that rank
  /// only; 0 until it publishes.
  struct Reach {
    std::atomic<int64_t> pid;
    std::atomic<uint64_t> nonce_at;
    std::atomic<uint64_t> reads_from;
  };
  Reach reach[kMaxLocalRanks];
};
static_assert(sizeof(SegmentHeader) <= kHeaderBytes);

/// The segment's size for k local ranks and rings of ring_bytes each.
size_t segment_bytes(int ranks, size_t ring_bytes);

/// A mapped segment. Movable, not copyable; unmaps (and, when this process created it and has
/// not unlinked it yet, unlinks the name) on destruction.
class Segment {
 public:
  /// Creates a new segment named "/ccshm-<pid>-<random>" (O_EXCL, mode 0600: only this user),
  /// reserves its memory (Linux: writes it, so a full /dev/shm is an error here and not a
  /// SIGBUS later), maps it and writes the header with a fresh random nonce.
  /// Throws Error(kSystem) naming the name and the call that failed.
  static Segment create(int ranks, size_t ring_bytes);
  /// Opens and maps `name`; checks the size, magic, version, rank count, ring size and nonce,
  /// then counts itself in mapped_ranks and, when it is the last of the k, unlinks the name.
  /// Throws Error(kSystem) on a failed call, Error(kProtocol) on a segment that is not the one
  /// described.
  static Segment open(const std::string& name, int ranks, size_t ring_bytes,
                      const unsigned char (&nonce)[16]);

  Segment() = default;
  Segment(Segment&& o) noexcept;
  Segment& operator=(Segment&& o) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment();

  /// Removes the name (the memory stays mapped). Idempotent; only for the creator.
  void unlink() noexcept;

  bool mapped() const { return base_ != nullptr; }
  const std::string& name() const { return name_; }
  SegmentHeader& header() const { return *static_cast<SegmentHeader*>(base_); }
  size_t ring_bytes() const { return header().ring_bytes; }
  /// The ring carrying local rank `from`'s messages to local rank `to` (from != to).
  RingCtl& ctl(int from, int to) const;
  unsigned char* data(int from, int to) const;

 private:
  void reset() noexcept;
  size_t ring_offset(int from, int to) const;

  void* base_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
  bool owner_ = false;  // created here and not unlinked yet
};

/// Reserves `bytes` of the shared memory object behind `fd` so that touching them later
/// cannot fail. Linux: writes zeros with pwrite (tmpfs allocates the pages now: ENOSPC when
/// /dev/shm is too small, e.g. a container's 64 MiB default). Elsewhere nothing: macOS shared
/// memory is not a file system that can fill up. Returns 0 or an errno value.
int reserve_shared_memory(int fd, size_t bytes);

/// Single copy: copies `bytes` at address `src` of process `pid` (a rank of this host) into
/// `dst`. Linux: process_vm_readv (cross memory attach, Linux 3.2; allowed where ptrace would be:
/// same user, and Yama's kernel.yama.ptrace_scope at 0, or 1 for a parent reading its child;
/// containers may refuse it - see docs/platform.md), looping over short reads. Returns 0 or an
/// errno value: ESRCH when the process is gone, EPERM where reading it is not allowed, EFAULT
/// when the range is not mapped there. Elsewhere (macOS has no such call) ENOSYS, and
/// peer_memory_readable() is false: the rings carry everything.
int read_peer_memory(int64_t pid, void* dst, uint64_t src, size_t bytes);
bool peer_memory_readable();

}  // namespace cc::comm::shm
