// Checksums for push, from xxHash (Debian's libxxhash-dev, used header-only with
// XXH_INLINE_ALL so the rank program needs no shared library on the hosts): XXH3-64 for each
// chunk on the wire, XXH3-128 for each whole file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace cc::push {

/// XXH3-64 of `bytes` bytes at `data`.
std::uint64_t chunk_hash(const void* data, std::size_t bytes);

/// A streaming XXH3-128 digest.
class FileDigest {
 public:
  FileDigest();
  ~FileDigest();
  FileDigest(const FileDigest&) = delete;
  FileDigest& operator=(const FileDigest&) = delete;
  void update(const void* data, std::size_t bytes);
  /// 32 lowercase hex digits.
  std::string hex() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

/// The digest of the first `bytes` bytes of open file `fd` (read with pread), added to `d`.
/// Returns false on a read error or a short file (errno set; EIO for short).
bool digest_fd(int fd, std::uint64_t bytes, FileDigest& d);

}  // namespace cc::push
