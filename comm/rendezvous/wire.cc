#include "comm/rendezvous/wire.h"

#include "comm/error.h"

namespace cc::comm {

WireWriter& WireWriter::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
  return *this;
}

WireWriter& WireWriter::u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
  return *this;
}

WireWriter& WireWriter::str(std::string_view s) {
  u32(static_cast<uint32_t>(s.size()));
  buf_.append(s);
  return *this;
}

void WireReader::need(size_t n) const {
  if (data_.size() - pos_ < n) throw Error(ErrorKind::kProtocol, "truncated bootstrap message");
}

uint32_t WireReader::u32() {
  need(4);
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
  }
  pos_ += 4;
  return v;
}

uint64_t WireReader::u64() {
  need(8);
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
  }
  pos_ += 8;
  return v;
}

std::string WireReader::str() {
  const uint32_t n = u32();
  need(n);
  std::string s(data_.substr(pos_, n));
  pos_ += n;
  return s;
}

}  // namespace cc::comm
