// Where and why a JSON text the operator wrote does not parse, for a message: nlohmann/json's
// parse_error, whose `byte` is the 1-based offset of the last byte it read (the offending
// token's last byte: the '}' after a trailing comma, the closing quote of an unexpected string),
// as a 1-based line and column, and its reason without the library's "[json.exception...]"
// prefix and position. A trailing comma, the mistake most often made by hand, is found and
// reported where it is, not at the '}' or ']' after it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace cc::util {

struct JsonSyntaxError {
  std::size_t line = 1;    // 1-based
  std::size_t column = 1;  // 1-based, in bytes (as nlohmann counts)
  /// What is wrong there: "trailing comma after the last entry (before the '}' at line 6,
  /// column 1): JSON allows none; remove it", else nlohmann's reason ("syntax error while
  /// parsing object - unexpected string literal; expected '}'").
  std::string problem;
};

/// 1-based line and column of the 1-based byte offset `byte` of `text` (nlohmann's
/// parse_error::byte); an offset past the end is the position after the last byte.
JsonSyntaxError json_position(std::string_view text, std::size_t byte);

/// The place and reason of `e`, thrown by parsing `text`. Cost: one pass over `text` up to
/// the error.
JsonSyntaxError json_syntax_error(std::string_view text, const nlohmann::json::parse_error& e);

}  // namespace cc::util
