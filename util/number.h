// Decimal floating-point numbers from text, the same on every platform and in every locale.
// std::from_chars for double is missing from LLVM's libc++ before version 20 (every Mac's
// C++ library), and std::strtod reads the decimal separator of the current locale; use this.
#pragma once

#include <optional>
#include <string_view>

namespace cc::util {

/// Parses the whole of `text` as a finite decimal number: an optional '-', digits with an
/// optional '.' and fraction (at least one digit in all), and an optional exponent
/// ('e' or 'E', an optional sign, digits): "5", "-0.5", ".5", "1e3", "2.5E-3". The decimal
/// separator is always '.', whatever the locale. Returns nullopt for anything else: empty
/// text, spaces, a leading '+', hexadecimal, "inf", "nan", trailing characters, or a value
/// a double cannot hold (too large, or so small it would round to 0 or a denormal: 1e-400).
std::optional<double> parse_double(std::string_view text);

}  // namespace cc::util
