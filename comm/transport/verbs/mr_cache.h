// MrCache: registrations of user buffers for zero-copy sends (Config::ibv_zero_copy), one
// cache per device (protection domain), shared by every link on it. No verbs calls here: they
// are behind MrRegistrar (verbs_link.cc registers with ibv_reg_mr on the device's PD; the unit
// tests use a fake, tests/fake_link.h), so this builds and is tested everywhere.
//
// Keys: a send of [data, data + bytes) needs a registration covering the page-aligned range
// [floor(data), ceil(data + bytes)) (pages of sysconf(_SC_PAGESIZE): 4 KiB on Linux x86,
// 16 KiB on Apple silicon). Any live entry that covers it serves (a hit); otherwise exactly
// that range is registered, for local access only (a send reads it; nothing remote). A range
// is never widened beyond what a send asked for: pages next to a buffer may belong to memory
// the caller frees without telling us.
//
// Capacity and eviction: at most `cap` registrations (kMrCacheCapPerDevice by default). A
// miss on a full cache deregisters the least recently used entry that no send holds; when
// every entry is held, acquire() says no and that message is copied (never an error).
// Leases: acquire() takes a reference, release() drops it once the send completion covering
// the message's last frame has arrived; an entry with references is never deregistered.
//
// Failure: a refused registration (ENOMEM past RLIMIT_MEMLOCK, EFAULT on memory that is not
// mapped, the provider's MR limit) is retried once after evicting an unused entry, then the
// message is copied; the first failure prints one warning per device (stderr, or the sink the
// owner installs) naming the rank, the device and the errno. Never throws for it.
//
// Two modes (Config::ibv_zero_copy):
// - Per message (`keep` false; the default on Linux): an entry lives only while sends hold it.
//   The last release() deregisters it, so every message registers its buffer afresh (sends
//   in flight at once from the same pages share one entry). Nothing outlives the send that
//   needed it: no stale registration is possible and the caller owes nothing. Cost: a
//   registration and a deregistration per message part (system calls and page pinning).
// - Cached (`keep` true; CLUSTERCOMM_IBV_ZERO_COPY=1): entries stay after their last release,
//   up to `cap`, and a later send from the same pages reuses one (a hit). Staleness is then the
//   caller's contract: a registration pins the physical pages that were mapped at
//   registration; if the caller frees a buffer and new memory appears at the same address, a
//   cached entry would send the old pages' bytes, silently. Nothing here hooks free() or
//   munmap(), so a caller that chooses this mode must call drop()
//   (Communicator::release_buffer) on a range before freeing it. drop() removes every entry
//   overlapping the range: unused ones are deregistered at once, held ones when their last
//   send completes (they serve no new send meanwhile).
//
// Single-threaded: the transport drives it from the one thread that uses the communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>

namespace cc::comm::verbs {

/// Registrations per device the cache may hold. Apple's provider allows about 100 memory
/// regions per device [MLX-3162] (docs/platform.md#transport-profile-and-limits), and each link
/// registers 2 for its frame rings (<= 20 with the 10 QPs a device allows): 64 + 20 = 84
/// leaves room for the rest of the process.
inline constexpr size_t kMrCacheCapPerDevice = 64;

/// A message part (one cable's share of a message) at least this long is sent zero-copy when
/// Config::ibv_zero_copy is on; shorter ones are copied (a registration costs a system call
/// and page pinning; a copy of a few frames is cheaper). Measured in the emulated Soft-RoCE
/// guest (comm/README.md, "Zero-copy sends"): per-message zero-copy beats copying from 1 MiB
/// and is on par at 256 KiB; hardware with DMA remains to be measured.
inline constexpr size_t kZeroCopyMinBytes = size_t{256} * 1024;

/// What the cache registers with: ibv_reg_mr / ibv_dereg_mr on a protection domain, or a fake.
class MrRegistrar {
 public:
  virtual ~MrRegistrar() = default;
  /// Registers [addr, addr + bytes) for local access; returns a handle and sets `lkey`, or
  /// returns nullptr and sets `err` to the errno.
  virtual void* reg(void* addr, size_t bytes, uint32_t& lkey, int& err) = 0;
  virtual void dereg(void* handle) = 0;
};

class MrCache {
 public:
  /// A registration held by one message part; valid from acquire() to release().
  struct Lease {
    uint32_t lkey = 0;
    void* entry = nullptr;
  };
  struct Stats {
    uint64_t hits = 0, registrations = 0, evictions = 0, failures = 0, all_in_use = 0,
             dropped = 0;
  };

  /// `where` names the rank and device in the warning: "rank 0: rxe0_1 port 1". `keep`:
  /// cached mode (entries outlive their sends); false: per-message mode (see the modes above).
  MrCache(std::unique_ptr<MrRegistrar> registrar, std::string where,
          size_t cap = kMrCacheCapPerDevice, bool keep = true);
  ~MrCache();  // deregisters everything (the owner destroys the QPs first)
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  /// A registration covering [data, data + bytes) (bytes > 0), with a reference taken, or
  /// false: then the caller copies (cache full of held entries, or registration refused).
  bool acquire(const void* data, size_t bytes, Lease& out);
  /// Drops the reference a lease holds; deregisters an entry whose last one it was when it was
  /// dropped or the cache is in per-message mode.
  void release(Lease& lease);
  /// Forgets every registration overlapping [data, data + bytes) (Communicator::release_buffer);
  /// returns how many.
  size_t drop(const void* data, size_t bytes);

  size_t size() const { return entries_.size(); }  // live entries (not dropped ones still held)
  size_t cap() const { return cap_; }
  bool keeps() const { return keep_; }
  const Stats& stats() const { return stats_; }
  /// Where the one warning goes (default: a line on stderr).
  void set_warning_sink(std::function<void(const std::string&)> sink) { warn_ = std::move(sink); }

 private:
  struct Entry {
    uintptr_t begin, end;
    void* handle;
    uint32_t lkey;
    uint32_t refs;
    bool dropped;
  };
  bool evict_one();

  std::unique_ptr<MrRegistrar> reg_;
  std::string where_;
  size_t cap_;
  bool keep_;
  uintptr_t page_;
  std::list<Entry> entries_;  // most recently used first
  std::list<Entry> retired_;  // dropped while held: deregistered at their last release
  Stats stats_;
  bool warned_ = false;
  std::function<void(const std::string&)> warn_;
};

}  // namespace cc::comm::verbs
