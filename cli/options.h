// Option checks shared by the subcommands, with messages an operator can act on.
#pragma once

#include <algorithm>
#include <charconv>
#include <concepts>
#include <filesystem>
#include <string>
#include <type_traits>
#include <system_error>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "util/number.h"
#include "util/suggest.h"
#include "util/text.h"

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

/// Accepts a whole number (decimal digits, an optional '-') from `min` to `max`, in place of
/// CLI11's Range, which says "Value abc not in range 1 to 4096" of a word that is no number at
/// all: that is said as "'abc' is not a number", and a number outside as out of range, each
/// with the numbers allowed (tests/cli_basics.sh checks that no command uses Range, and gives
/// every numeric option of every subcommand a word). A refusal is a usage error: exit 2, before
/// anything runs.
template <typename T>
  requires std::is_integral_v<T>
inline CLI::Validator whole_number(T min, T max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        const std::string allowed =
            "give a whole number from " + std::to_string(min) + " to " + std::to_string(max);
        T v{};
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        const bool digits = !text.empty() && std::all_of(text.begin() + (text[0] == '-' ? 1 : 0),
                                                         text.end(), util::is_ascii_digit);
        if (!digits || text == "-") return "'" + text + "' is not a number: " + allowed;
        if (ec != std::errc() || ptr != end || v < min || v > max) {
          return "'" + text + "' is out of range: " + allowed;
        }
        return {};
      },
      std::to_string(min) + ".." + std::to_string(max));  // help: "N:1..4096"
}

/// The same for a decimal number with an optional fraction (util::parse_double: "5", "0.5",
/// "1e3") from `min` to `max`.
inline CLI::Validator decimal_number(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        const std::string allowed = fmt::format("give a number from {} to {}", min, max);
        const auto v = util::parse_double(text);
        if (!v) return "'" + text + "' is not a number (e.g. 5 or 0.5): " + allowed;
        if (*v < min || *v > max) return "'" + text + "' is out of range: " + allowed;
        return {};
      },
      fmt::format("{}..{}", min, max));
}

/// Accepts the path of a file that is there (anything but a directory, as CLI11's ExistingFile:
/// `-F /dev/null` too; what is read is checked again when it is read, util::read_file), or for
/// PathKind::kDirectory of a directory. A path that is not there is named with "did you mean" the
/// file (or directory) of a close name beside it, util::did_you_mean_file ("hello.yml: no such
/// file (did you mean 'hello.yaml'?)"), as every file clusterctl reads is (README, "job.yaml").
/// The one check of every argument and option that names a file to read, in place of CLI11's
/// ExistingFile and ExistingDirectory, which suggest nothing (tests/cli_basics.sh checks that no
/// command uses those). A refusal is a usage error: exit 2, before anything runs.
inline CLI::Validator existing_path(util::PathKind kind = util::PathKind::kFile) {
  const bool want_dir = kind == util::PathKind::kDirectory;
  return CLI::Validator(
      [kind, want_dir](std::string& text) -> std::string {
        namespace fs = std::filesystem;
        std::error_code ec;
        const fs::file_status st = fs::status(text, ec);
        if (st.type() == fs::file_type::not_found) {
          return text + (want_dir ? ": no such directory" : ": no such file") +
                 util::did_you_mean_file(text, text, kind);
        }
        if (ec) return text + ": cannot be read: " + ec.message();
        if (want_dir && !fs::is_directory(st)) return text + ": is not a directory";
        if (!want_dir && fs::is_directory(st)) return text + ": is a directory, not a file";
        return {};
      },
      want_dir ? "DIR" : "FILE", want_dir ? "existing directory" : "existing file");
}

/// What `one_of` takes besides its words.
enum class OrFile { kNo, kYes };

/// Accepts one of `words` (exactly as written), and with OrFile::kYes also the path of a file
/// that is there (`lab up --topology mesh|ring|FILE`). Anything else is refused naming every
/// allowed value and the closest one, util::did_you_mean ("rign: not one of mesh, ring (did you
/// mean 'ring'?)"); with OrFile::kYes a path with no close word gets the file of a close name
/// beside it, util::did_you_mean_file. The one check of every option that takes one of a fixed
/// set of words, in place of CLI11's IsMember and CheckedTransformer, which suggest nothing
/// (tests/cli_basics.sh checks that no command uses those, and tries a typo of the first word
/// of every option whose --help shows "{word,...}"). Help shows "TEXT:{mesh,ring}" ("... or
/// FILE"). A refusal is a usage error: exit 2, before anything runs.
inline CLI::Validator one_of(std::vector<std::string> words, OrFile file = OrFile::kNo) {
  std::string listed, braced;
  for (const auto& w : words) {
    listed += (listed.empty() ? "" : ", ") + w;
    braced += (braced.empty() ? "" : ",") + w;
  }
  const bool or_file = file == OrFile::kYes;
  std::string desc = "{" + braced + "}" + (or_file ? " or FILE" : "");
  return CLI::Validator(
      [words = std::move(words), listed, or_file](std::string& text) -> std::string {
        for (const auto& w : words) {
          if (text == w) return {};
        }
        std::string hint = util::did_you_mean(text, words);
        if (or_file) {
          namespace fs = std::filesystem;
          std::error_code ec;
          const fs::file_status st = fs::status(text, ec);
          if (fs::exists(st) && !fs::is_directory(st)) return {};
          if (hint.empty() && st.type() == fs::file_type::not_found) {
            hint = util::did_you_mean_file(text);
          }
          return text + ": not one of " + listed + ", nor a file" +
                 (fs::is_directory(st) ? " (it is a directory)" : "") + hint;
        }
        return text + ": not one of " + listed + hint;
      },
      std::move(desc));
}

}  // namespace cc::cli
