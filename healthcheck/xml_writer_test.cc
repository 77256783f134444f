#include "healthcheck/xml_writer.h"

#include <stdexcept>

#include <doctest/doctest.h>

namespace cc::healthcheck {
namespace {

TEST_CASE("xml: text and attributes are escaped") {
  CHECK(xml_escape_text("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&apos;");
  CHECK(xml_escape_text("line1\nline2\ttab") == "line1\nline2\ttab");
  CHECK(xml_escape_attribute("a\nb\tc\rd") == "a&#10;b&#9;c&#13;d");
  // Control characters XML 1.0 forbids, even as references, become '?'.
  CHECK(xml_escape_text(std::string("bell\x07 nul", 9) + std::string(1, '\0')) == "bell? nul?");
  CHECK(xml_escape_text("\x1b[31mred\x1b[0m") == "?[31mred?[0m");
  // UTF-8 passes through.
  CHECK(xml_escape_text("µs ±") == "µs ±");
  // An injected closing tag stays text.
  CHECK(xml_escape_attribute("\"/><evil x=\"") == "&quot;/&gt;&lt;evil x=&quot;");
}

TEST_CASE("xml: a document with nested, empty and text elements") {
  XmlWriter w;
  w.open("a", {{"n", "1 & 2"}});
  w.leaf("b", {{"x", "<"}});
  w.open("c");
  w.text("t>");
  w.close();
  w.leaf("d", {}, "x");
  CHECK(w.finish() ==
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<a n=\"1 &amp; 2\">\n  <b x=\"&lt;\"/>\n  <c>t&gt;</c>\n  <d>x</d>\n</a>\n");
}

TEST_CASE("xml: closing with nothing open is a bug") {
  XmlWriter w;
  CHECK_THROWS_AS(w.close(), std::logic_error);
}

}  // namespace
}  // namespace cc::healthcheck
