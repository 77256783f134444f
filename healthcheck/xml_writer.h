// A minimal XML writer for the JUnit report (no XML library is approved): elements, attributes
// and text, always well-formed. Escaping: & < > " ' as entities; in attribute values also tab,
// newline and carriage return as character references (so they survive attribute-value
// normalisation); other control characters, which XML 1.0 forbids even as references, become
// '?'; bytes >= 0x80 pass through (the input is UTF-8).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cc::healthcheck {

/// Text content escaped for XML 1.0.
std::string xml_escape_text(std::string_view s);
/// An attribute value escaped for XML 1.0 (to be written between double quotes).
std::string xml_escape_attribute(std::string_view s);

class XmlWriter {
 public:
  XmlWriter();  // starts with the XML declaration (version 1.0, UTF-8)
  /// Opens <name attr="value" ...>. Names are the caller's constants, not escaped.
  void open(std::string_view name,
            const std::vector<std::pair<std::string, std::string>>& attributes = {});
  /// Writes escaped text inside the current element.
  void text(std::string_view s);
  /// Closes the innermost open element. Calling it with none open is a bug (throws).
  void close();
  /// <name attrs/> or, with text, <name attrs>text</name>.
  void leaf(std::string_view name, const std::vector<std::pair<std::string, std::string>>& attributes,
            std::string_view content = {});
  /// The document; every open element is closed first.
  std::string finish();

 private:
  void finish_start_tag();
  std::string out_;
  std::vector<std::string> open_;
  bool start_tag_open_ = false;
};

}  // namespace cc::healthcheck
