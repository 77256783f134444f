#include "remote/quote.h"

namespace cc::remote {
namespace {

bool is_safe(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '_':
    case '@':
    case '%':
    case '+':
    case '=':
    case ':':
    case ',':
    case '.':
    case '/':
    case '-':
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string shell_quote_arg(std::string_view arg) {
  if (arg.empty()) return "''";
  bool safe = true;
  for (char c : arg) safe = safe && is_safe(c);
  if (safe) return std::string(arg);
  std::string out;
  out.reserve(arg.size() + 2);
  out += '\'';
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";  // close the quote, an escaped quote, reopen
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string shell_quote(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) {
    if (!line.empty()) line += ' ';
    line += shell_quote_arg(a);
  }
  return line;
}

}  // namespace cc::remote
