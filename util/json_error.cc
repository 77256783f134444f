#include "util/json_error.h"

#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace cc::util {

JsonSyntaxError json_position(std::string_view text, std::size_t byte) {
  JsonSyntaxError at;
  for (std::size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++at.line;
      at.column = 1;
    } else {
      ++at.column;
    }
  }
  return at;
}

JsonSyntaxError json_syntax_error(std::string_view text, const nlohmann::json::parse_error& e) {
  // The reason: e.what() is "[json.exception.parse_error.101] parse error at line 6, column 1:
  // syntax error while parsing ..." (or "parse error: ..." without a position).
  std::string_view why = e.what();
  if (const std::size_t at = why.find("parse error"); at != std::string_view::npos) {
    why.remove_prefix(at);
    if (const std::size_t colon = why.find(": "); colon != std::string_view::npos) {
      why.remove_prefix(colon + 2);
    }
  }
  JsonSyntaxError place = json_position(text, e.byte);
  place.problem = std::string(why);
  // A trailing comma: the token refused is a '}' or ']' and the last byte before it, blanks
  // aside, is a ','. JSON's blanks are space, tab, CR and LF (RFC 8259, section 2).
  if (e.byte == 0 || e.byte > text.size()) return place;
  const char closing = text[e.byte - 1];
  if (closing != '}' && closing != ']') return place;
  std::size_t i = e.byte - 1;
  while (i > 0 && (text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n' ||
                   text[i - 1] == '\r')) {
    --i;
  }
  if (i == 0 || text[i - 1] != ',') return place;
  JsonSyntaxError comma = json_position(text, i);
  comma.problem = fmt::format(
      "trailing comma after the last entry (before the '{}' at line {}, column {}): JSON allows "
      "none; remove it",
      closing, place.line, place.column);
  return comma;
}

}  // namespace cc::util
