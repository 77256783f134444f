#include "push/hash.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <vector>

#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace cc::push {

std::uint64_t chunk_hash(const void* data, std::size_t bytes) { return XXH3_64bits(data, bytes); }

struct FileDigest::State {
  XXH3_state_t st;
};

FileDigest::FileDigest() : s_(std::make_unique<State>()) { XXH3_128bits_reset(&s_->st); }
FileDigest::~FileDigest() = default;

void FileDigest::update(const void* data, std::size_t bytes) {
  XXH3_128bits_update(&s_->st, data, bytes);
}

std::string FileDigest::hex() const {
  const XXH128_hash_t h = XXH3_128bits_digest(&s_->st);
  char out[33];
  std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return out;
}

bool digest_fd(int fd, std::uint64_t bytes, FileDigest& d) {
  std::vector<unsigned char> buf(std::size_t{1} << 20);
  std::uint64_t off = 0;
  while (off < bytes) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), bytes - off));
    const ssize_t got = ::pread(fd, buf.data(), want, static_cast<off_t>(off));
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (got == 0) {
      errno = EIO;
      return false;
    }
    d.update(buf.data(), static_cast<std::size_t>(got));
    off += static_cast<std::uint64_t>(got);
  }
  return true;
}

}  // namespace cc::push
