#include "healthcheck/xml_writer.h"

#include <stdexcept>

namespace cc::healthcheck {
namespace {

std::string escape(std::string_view s, bool attribute) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\t':
        out += attribute ? "&#9;" : "\t";
        break;
      case '\n':
        out += attribute ? "&#10;" : "\n";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += '?';
        } else {
          out += ch;
        }
    }
  }
  return out;
}

}  // namespace

std::string xml_escape_text(std::string_view s) {
  return escape(s, false);
}

std::string xml_escape_attribute(std::string_view s) {
  return escape(s, true);
}

XmlWriter::XmlWriter() : out_("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n") {}

void XmlWriter::finish_start_tag() {
  if (start_tag_open_) out_ += ">";
  start_tag_open_ = false;
}

void XmlWriter::open(std::string_view name,
                     const std::vector<std::pair<std::string, std::string>>& attributes) {
  finish_start_tag();
  if (!open_.empty() && (out_.empty() || out_.back() == '>')) {
    out_ += "\n" + std::string(open_.size() * 2, ' ');
  }
  out_ += "<";
  out_ += name;
  for (const auto& [k, v] : attributes) out_ += " " + k + "=\"" + xml_escape_attribute(v) + "\"";
  open_.emplace_back(name);
  start_tag_open_ = true;
}

void XmlWriter::text(std::string_view s) {
  finish_start_tag();
  out_ += xml_escape_text(s);
}

void XmlWriter::close() {
  if (open_.empty()) throw std::logic_error("XmlWriter::close with no open element");
  const std::string name = open_.back();
  open_.pop_back();
  if (start_tag_open_) {
    out_ += "/>";
    start_tag_open_ = false;
  } else {
    if (out_.back() == '>') out_ += "\n" + std::string(open_.size() * 2, ' ');
    out_ += "</" + name + ">";
  }
}

void XmlWriter::leaf(std::string_view name,
                     const std::vector<std::pair<std::string, std::string>>& attributes,
                     std::string_view content) {
  open(name, attributes);
  if (!content.empty()) text(content);
  close();
}

std::string XmlWriter::finish() {
  while (!open_.empty()) close();
  return out_ + "\n";
}

}  // namespace cc::healthcheck
