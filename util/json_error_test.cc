#include "util/json_error.h"

#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

namespace {

cc::util::JsonSyntaxError syntax_error(const std::string& text) {
  try {
    const nlohmann::json parsed = nlohmann::json::parse(text);
    FAIL("parsed: " << parsed.dump());
  } catch (const nlohmann::json::parse_error& e) {
    return cc::util::json_syntax_error(text, e);
  }
  return {};
}

}  // namespace

TEST_CASE("json_syntax_error: a trailing comma is reported where it is, not at the next line") {
  // The comma ends line 5; the library stops at the '}' of line 6, column 1.
  const std::string text = "{\n  \"a\": 1,\n  \"b\": [\n    2\n  ],\n}\n";
  const auto e = syntax_error(text);
  CHECK(e.line == 5);
  CHECK(e.column == 4);
  CHECK(e.problem ==
        "trailing comma after the last entry (before the '}' at line 6, column 1): JSON allows "
        "none; remove it");
  const auto list = syntax_error("[1, 2,\r\n\t ]");
  CHECK(list.line == 1);
  CHECK(list.column == 6);
  CHECK(
      list.problem.starts_with("trailing comma after the last entry (before the ']' at line 2, "
                               "column 3)"));
}

TEST_CASE("json_syntax_error: other mistakes keep the library's place and reason") {
  // The offending token's last byte: the closing quote of "b".
  const auto missing = syntax_error("{\"a\": 1 \"b\": 2}");
  CHECK(missing.line == 1);
  CHECK(missing.column == 11);
  CHECK(missing.problem ==
        "syntax error while parsing object - unexpected string literal; expected '}'");
  // An empty entry is not a trailing comma.
  const auto empty = syntax_error("[1,,2]");
  CHECK(empty.column == 4);
  CHECK(empty.problem.find("trailing") == std::string::npos);
  // The end of the text: the position after its last byte.
  const auto cut = syntax_error("{\"hosts\": [\n");
  CHECK(cut.line == 2);
  CHECK(cut.column == 1);
  CHECK(cut.problem.find("unexpected end of input") != std::string::npos);
}
