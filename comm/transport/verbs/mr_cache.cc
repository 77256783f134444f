#include "comm/transport/verbs/mr_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iterator>

namespace cc::comm::verbs {

MrCache::MrCache(std::unique_ptr<MrRegistrar> registrar, std::string where, size_t cap, bool keep)
    : reg_(std::move(registrar)), where_(std::move(where)), cap_(cap == 0 ? 1 : cap), keep_(keep) {
  const long p = ::sysconf(_SC_PAGESIZE);
  page_ = p > 0 ? static_cast<uintptr_t>(p) : 4096;
}

MrCache::~MrCache() {
  for (Entry& e : entries_) reg_->dereg(e.handle);
  for (Entry& e : retired_) reg_->dereg(e.handle);
}

bool MrCache::evict_one() {
  for (auto it = entries_.end(); it != entries_.begin();) {
    --it;
    if (it->refs == 0) {
      reg_->dereg(it->handle);
      entries_.erase(it);
      ++stats_.evictions;
      return true;
    }
  }
  return false;
}

bool MrCache::acquire(const void* data, size_t bytes, Lease& out) {
  if (data == nullptr || bytes == 0) return false;
  const auto a = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = a & ~(page_ - 1);
  const uintptr_t end = (a + bytes + page_ - 1) & ~(page_ - 1);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->begin <= begin && it->end >= end) {
      entries_.splice(entries_.begin(), entries_, it);
      ++it->refs;
      ++stats_.hits;
      out = Lease{it->lkey, &*it};
      return true;
    }
  }
  if (entries_.size() >= cap_ && !evict_one()) {
    ++stats_.all_in_use;
    return false;
  }
  uint32_t lkey = 0;
  int err = 0;
  void* h = reg_->reg(reinterpret_cast<void*>(begin), end - begin, lkey, err);
  if (h == nullptr && evict_one()) h = reg_->reg(reinterpret_cast<void*>(begin), end - begin, lkey, err);
  if (h == nullptr) {
    ++stats_.failures;
    if (!warned_) {
      warned_ = true;
      const std::string msg =
          "clustercomm: " + where_ + ": warning: cannot register a buffer of " +
          std::to_string(end - begin) + " bytes for a zero-copy send (" + std::strerror(err) +
          ", errno " + std::to_string(err) +
          "): such sends on this device copy instead. Raise the locked-memory limit (ulimit -l) "
          "or set CLUSTERCOMM_IBV_ZERO_COPY=0 to stop trying";
      if (warn_) {
        warn_(msg);
      } else {
        std::fprintf(stderr, "%s\n", msg.c_str());
      }
    }
    return false;
  }
  ++stats_.registrations;
  entries_.push_front(Entry{begin, end, h, lkey, 1, false});
  out = Lease{lkey, &entries_.front()};
  return true;
}

void MrCache::release(Lease& lease) {
  auto* e = static_cast<Entry*>(lease.entry);
  lease.entry = nullptr;
  if (e == nullptr || e->refs == 0) return;
  if (--e->refs > 0) return;
  if (!e->dropped) {
    if (keep_) return;
    // Per-message mode: nothing outlives the sends that needed it.
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (&*it == e) {
        reg_->dereg(it->handle);
        entries_.erase(it);
        return;
      }
    }
    return;
  }
  for (auto it = retired_.begin(); it != retired_.end(); ++it) {
    if (&*it == e) {
      reg_->dereg(it->handle);
      retired_.erase(it);
      return;
    }
  }
}

size_t MrCache::drop(const void* data, size_t bytes) {
  const auto a = reinterpret_cast<uintptr_t>(data);
  const uintptr_t end = a + (bytes == 0 ? 1 : bytes);
  size_t n = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto next = std::next(it);
    if (it->begin < end && a < it->end) {
      ++n;
      ++stats_.dropped;
      if (it->refs == 0) {
        reg_->dereg(it->handle);
        entries_.erase(it);
      } else {
        it->dropped = true;
        retired_.splice(retired_.end(), entries_, it);
      }
    }
    it = next;
  }
  return n;
}

}  // namespace cc::comm::verbs
