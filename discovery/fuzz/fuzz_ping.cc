// libFuzzer target: parse_ping_replies (Linux ping -6 / macOS ping6 output). It never fails,
// and every address it returns is a canonical IPv6 address without %scope.
#include <arpa/inet.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "discovery/fuzz/fuzz_check.h"
#include "discovery/ping.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cc::discovery;
  auto r = parse_ping_replies(fuzz::text(data, size));
  if (!r.ok()) {
    std::fprintf(stderr, "parse_ping_replies failed: %s\n", r.error().message.c_str());
    std::abort();
  }
  for (const std::string& a : *r) {
    std::array<unsigned char, 16> raw{};
    std::array<char, INET6_ADDRSTRLEN> back{};
    if (inet_pton(AF_INET6, a.c_str(), raw.data()) != 1 ||
        inet_ntop(AF_INET6, raw.data(), back.data(), back.size()) == nullptr || a != back.data()) {
      std::fprintf(stderr, "not a canonical IPv6 address: %s\n", a.c_str());
      std::abort();
    }
  }
  return 0;
}
