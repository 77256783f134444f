// Option checks shared by the subcommands, with messages an operator can act on.
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

#include <CLI/CLI.hpp>

#include "util/number.h"
#include "util/suggest.h"

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

}  // namespace cc::cli
