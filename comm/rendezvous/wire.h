// A tiny binary encoding for bootstrap messages: little-endian integers and length-prefixed
// strings. Readers check every length, so a hostile peer can only cause a kProtocol error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cc::comm {

class WireWriter {
 public:
  WireWriter& u32(uint32_t v);
  WireWriter& u64(uint64_t v);
  WireWriter& str(std::string_view s);
  const std::string& data() const { return buf_; }

 private:
  std::string buf_;
};

class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}
  uint32_t u32();
  uint64_t u64();
  std::string str();
  bool at_end() const { return pos_ == data_.size(); }

 private:
  void need(size_t n) const;
  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace cc::comm
