// Option checks shared by the subcommands, with messages an operator can act on.
#pragma once

#include <charconv>
#include <cmath>
#include <string>

#include <CLI/CLI.hpp>

namespace cc::cli {

/// Accepts a number of seconds greater than 0 (fractions allowed, at most a day).
inline CLI::Validator seconds_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        const char* end = text.data() + text.size();
        auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc() || ptr != end || !std::isfinite(v)) {
          return "'" + text + "' is not a number of seconds (e.g. 5 or 0.5)";
        }
        if (v <= 0 || v > 86400) {
          return "'" + text + "' seconds is out of range: give more than 0 and at most 86400";
        }
        return {};
      },
      "SECONDS");
}

}  // namespace cc::cli
