// Option checks shared by the subcommands, with messages an operator can act on.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "util/number.h"

namespace cc::cli {

/// Accepts a number of seconds greater than 0 (fractions allowed, at most a day).
inline CLI::Validator seconds_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto parsed = util::parse_double(text);
        if (!parsed) return "'" + text + "' is not a number of seconds (e.g. 5 or 0.5)";
        const double v = *parsed;
        if (v <= 0 || v > 86400) {
          return "'" + text + "' seconds is out of range: give more than 0 and at most 86400";
        }
        return {};
      },
      "SECONDS");
}

}  // namespace cc::cli
