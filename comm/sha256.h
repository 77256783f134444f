// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for the job-token challenge of the
// bootstrap (rendezvous/handshake.h). Small and dependency-free on purpose: comm/ links
// nothing but the C++ standard library and POSIX.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cc::comm {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t bytes);
  void update(std::string_view s) { update(s.data(), s.size()); }
  Digest finish();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

Digest sha256(std::string_view data);
Digest hmac_sha256(std::string_view key, std::string_view message);

/// Compares in time independent of where the inputs differ.
bool equal_constant_time(const Digest& a, const Digest& b);

}  // namespace cc::comm
