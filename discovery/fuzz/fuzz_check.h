// Shared by the libFuzzer targets in this folder (one per parser, built with clang when
// CLUSTERCTL_FUZZ is ON). The property fuzzed: a parser returns, a value or an Error whose
// message names the command; it never throws, crashes or trips a sanitizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace cc::discovery::fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};  // NOLINT: bytes as text
}

/// Reports a broken property (what, then the detail) and aborts: a finding for libFuzzer.
[[noreturn]] inline void fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "%s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

/// Aborts (a finding for libFuzzer) when `r` is an error whose message does not name
/// `command` as "`COMMAND` output: ...".
template <class R>
void check(const R& r, std::string_view command) {
  if (r.ok()) return;
  std::string_view m = r.error().message;
  if (m.size() < command.size() + 2 || m[0] != '`' || m.substr(1, command.size()) != command) {
    std::fprintf(stderr, "error does not name `%.*s`: %.*s\n", static_cast<int>(command.size()),
                 command.data(), static_cast<int>(m.size()), m.data());
    std::abort();
  }
}

}  // namespace cc::discovery::fuzz
