#include "util/number.h"

#include <cmath>
#include <cstddef>
#include <locale>
#include <sstream>
#include <string>
#include <version>

#include "util/text.h"

#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
#include <charconv>
#include <system_error>
#endif

namespace cc::util {
namespace {

// The grammar of parse_double (number.h), checked before converting, so that the conversion
// (from_chars or a C-locale stream) only ever sees text both read the same way.
bool well_formed(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  std::size_t digits = 0;
  while (i < s.size() && is_ascii_digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_ascii_digit(s[i])) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    std::size_t exp_digits = 0;
    while (i < s.size() && is_ascii_digit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

}  // namespace

std::optional<double> parse_double(std::string_view text) {
  if (!well_formed(text)) return std::nullopt;
  double v = 0;
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
#else
  // libc++ before 20: a stream in the classic ("C") locale, whatever the global locale is.
  std::istringstream in{std::string(text)};
  in.imbue(std::locale::classic());
  in >> v;
  if (in.fail()) return std::nullopt;  // failbit: out of range (over- or underflow)
  if (!in.eof() && in.peek() != std::char_traits<char>::eof()) return std::nullopt;
#endif
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace cc::util
