#include "util/json_text.h"

#include <doctest/doctest.h>

TEST_CASE("json_text: bytes that are not UTF-8 become U+FFFD instead of throwing") {
  const nlohmann::json j = {{"host", "caf\xe9"}, {"ok", "h\xc3\xa9"}};
  CHECK_THROWS(j.dump());  // what every JSON output did before: nlohmann's type_error 316
  CHECK(cc::util::json_text(j) == "{\"host\":\"caf\xef\xbf\xbd\",\"ok\":\"h\xc3\xa9\"}");
  nlohmann::ordered_json o;
  o["z"] = 1;
  o["a"] = "\xff";
  CHECK(cc::util::json_text(o, 2) == "{\n  \"z\": 1,\n  \"a\": \"\xef\xbf\xbd\"\n}");  // order kept
}
