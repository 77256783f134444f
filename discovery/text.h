// Small text helpers shared by the probe-output parsers in this folder: line splitting,
// trimming, strict integer parsing, and the one way a parser reports a bad output.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace cc::discovery {

/// The error every parser returns for an output it cannot use: the message names the command
/// as the operator would type it and what was wrong, e.g.
///   "`ibv_devinfo -v` output: line 7: port number \"x\" is not an integer".
/// The probe prefixes the host name. Exit code: ExitCode::kCheckFailed (the tool ran; a host
/// answered with something it cannot use).
util::Error parse_error(std::string_view command, std::string_view what);

/// `s` without leading and trailing spaces, tabs, CR and LF.
std::string_view trim(std::string_view s);

/// The lines of `s` (split on '\n'; a trailing CR is dropped; no final empty line).
std::vector<std::string_view> split_lines(std::string_view s);

/// Whitespace-separated words of `s`.
std::vector<std::string_view> split_words(std::string_view s);

/// `s` as a non-negative decimal integer (digits only, no sign, no overflow); nullopt otherwise.
std::optional<std::uint64_t> parse_u64(std::string_view s);

/// Like parse_u64, limited to int's range.
std::optional<int> parse_int(std::string_view s);

/// At most `max` bytes of `s` for an error message, quoted, with "..." when cut.
std::string excerpt(std::string_view s, std::size_t max = 60);

/// True when `s` is blank (only whitespace).
bool blank(std::string_view s);

}  // namespace cc::discovery
