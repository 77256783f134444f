#include "util/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <istream>
#include <optional>
#include <streambuf>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (moved there in fmt 11)

#include "util/address.h"
#include "util/interrupt.h"
#include "util/number.h"
#include "util/suggest.h"
#include "util/yaml_syntax.h"

namespace cc::util {
namespace {

using util::ExitCode;

std::string child_path(const Field& parent, std::string_view key) {
  return parent.path.empty() ? std::string(key) : fmt::format("{}.{}", parent.path, key);
}

}  // namespace

std::string YamlReader::where(const Field& f) const {
  return f.path.empty() ? document_ : fmt::format("'{}'", f.path);
}

Field YamlReader::root(const YAML::Node& doc) {
  return Field{"", "", doc.Mark(), doc};
}

std::vector<util::Error> YamlReader::in_file_order(std::vector<util::Error> errors) const {
  auto at = [&](const util::Error& e) {
    std::pair<long, long> lc{0, 0};
    std::string_view m(e.message);
    if (!m.starts_with(file_ + ":")) return lc;
    m.remove_prefix(file_.size() + 1);
    auto [p1, ec1] = std::from_chars(m.data(), m.data() + m.size(), lc.first);
    if (ec1 == std::errc() && p1 < m.data() + m.size() && *p1 == ':') {
      std::from_chars(p1 + 1, m.data() + m.size(), lc.second);
    }
    return lc;
  };
  std::stable_sort(errors.begin(), errors.end(),
                   [&](const util::Error& a, const util::Error& b) { return at(a) < at(b); });
  return errors;
}

util::Error YamlReader::all(const std::vector<util::Error>& errors) {
  std::string text;
  for (const auto& e : errors) text += (text.empty() ? "" : "\n") + e.message;
  return util::error(ExitCode::kUsage, std::move(text));
}

YAML::Mark Field::mark() const {
  if (!value.IsDefined() || value.IsNull() || value.Mark().line < 0) return key_mark;
  return value.Mark();
}

util::Error YamlReader::error(const YAML::Mark& m, std::string_view what) const {
  if (m.line < 0) return util::error(ExitCode::kUsage, fmt::format("{}: {}", file_, what));
  return util::error(ExitCode::kUsage,
                     fmt::format("{}:{}:{}: {}", file_, m.line + 1, m.column + 1, what));
}

namespace {

// yaml-cpp's syntax messages (its ErrorMsg texts) say what the parser missed, not what the
// writer did: the usual cause, said after them.
std::string syntax_hint(const std::string& msg) {
  if (msg == "end of map not found" || msg == "end of sequence not found" ||
      msg == "block sequence entries are not allowed in this context") {
    return msg + ": check the indentation of this line and the ones above it (YAML nests by "
                 "indentation: the keys of one mapping and the '- ' entries of one list start "
                 "in the same column, indented with spaces, never tabs)";
  }
  if (msg == "illegal map value") {
    return msg + ": a value that ends with ':' or holds ': ' needs quotes (\"lab:x\"), or this "
                 "line's indentation is off";
  }
  if (msg == "end of sequence flow not found") return msg + ": a list written [a, b] needs its ']'";
  if (msg == "end of map flow not found") return msg + ": a mapping written {a: 1} needs its '}'";
  return msg;
}

// `text` for yaml-cpp, which reads a stream, in slices, and nothing more once SIGINT or SIGTERM
// arrived: a file of millions of entries (tens of seconds of parsing) then ends where it was,
// as at its end, and load() says it was interrupted (exit 130), not what yaml-cpp made of the
// cut text. yaml-cpp only reads (its putback gives back what it read): the buffer is never
// written.
class InterruptibleText final : public std::streambuf {
 public:
  explicit InterruptibleText(std::string_view text) : text_(text) {}

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (at_ >= text_.size() || util::interrupted()) return traits_type::eof();
    const std::size_t n = std::min(kSlice, text_.size() - at_);
    char* begin = const_cast<char*>(text_.data() + at_);
    setg(begin, begin, begin + n);
    at_ += n;
    return traits_type::to_int_type(*gptr());
  }

 private:
  static constexpr std::size_t kSlice = 64 * 1024;
  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace

util::Result<YAML::Node> YamlReader::load(std::string_view text) const {
  // A UTF-8 byte order mark (Windows editors write one): yaml-cpp skips it too, and without it
  // the byte offsets of the diagnosis below are those of yaml-cpp's marks.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  const auto at_cause = [&](const SyntaxCause& c) {
    return util::error(ExitCode::kUsage,
                       fmt::format("{}:{}:{}: {}", file_, c.line, c.column, c.what));
  };
  const auto interrupted = [&] {
    return util::interrupted_error(fmt::format(" while reading {}", file_));
  };
  try {
    InterruptibleText buffer(text);
    std::istream in(&buffer);
    YAML::Node doc = YAML::Load(in);
    if (util::interrupted()) return interrupted();
    if (auto quote = unclosed_quote(text)) return at_cause(*quote);
    return doc;
  } catch (const YAML::ParserException& e) {
    // A signal ends the text early: what yaml-cpp says of the rest is no mistake of the file.
    if (util::interrupted()) return interrupted();
    // Where the writer erred (a tab, an unclosed '[' or quote), when that can be told.
    if (auto cause = syntax_cause(text, e)) return at_cause(*cause);
    return error(e.mark, syntax_hint(e.msg));
  }
}

std::string_view YamlReader::kind(const YAML::Node& node) {
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  if (node.IsScalar()) return "a single value";
  return "nothing";
}

util::Result<std::vector<Field>> YamlReader::entries(const Field& f,
                                                     const std::vector<std::string>* known,
                                                     std::vector<util::Error>* errors) const {
  if (!f.value.IsMap()) {
    return error(f.mark(), fmt::format("{}: expected a mapping (key: value lines), got {}{}",
                                       where(f), kind(f.value),
                                       f.value.IsScalar() ? missing_space_hint(f.value.Scalar())
                                                          : std::string()));
  }
  std::vector<Field> out;
  // Each key's first line, for "appears twice": a lookup, not a walk over the keys before it
  // (a job's env of 1.5 million entries took that walk for over 10 minutes).
  std::unordered_map<std::string, int> first_line;
  std::size_t n = 0;
  for (auto it = f.value.begin(); it != f.value.end(); ++it) {
    // A mapping of millions of entries takes seconds: a SIGINT or SIGTERM ends it (exit 130).
    if (++n % kInterruptCheckEvery == 0 && util::interrupted()) {
      return util::interrupted_error(fmt::format(" while reading {}", file_));
    }
    const YAML::Node k = it->first;  // a copy: `it->first` lives in a temporary proxy
    std::optional<util::Error> bad;
    std::string key;
    if (!k.IsScalar()) {
      bad = error(k.Mark(),
                  fmt::format("a key in {} must be a plain word, not {}", where(f), kind(k)));
    } else {
      key = k.Scalar();
    }
    if (!bad && known != nullptr && std::find(known->begin(), known->end(), key) == known->end()) {
      std::string hint = util::did_you_mean(key, *known);
      if (hint.empty()) hint = missing_space_hint(key);
      if (hint.empty()) hint = fmt::format("; known keys: {}", fmt::join(*known, ", "));
      bad = error(k.Mark(), fmt::format("unknown key '{}' in {}{}", key, where(f), hint));
    }
    if (!bad) {
      const auto [seen, fresh] = first_line.emplace(key, k.Mark().line);
      if (!fresh) {
        bad = error(k.Mark(), fmt::format("'{}' appears twice (first at line {})",
                                          child_path(f, key), seen->second + 1));
      }
    }
    if (bad) {
      if (errors == nullptr) return *bad;
      errors->push_back(std::move(*bad));
      continue;
    }
    out.push_back(Field{key, child_path(f, key), k.Mark(), it->second});
  }
  return out;
}

util::Result<std::vector<Field>> YamlReader::mapping(const Field& f,
                                                     const std::vector<std::string>& known) const {
  return entries(f, &known);
}

util::Result<std::vector<Field>> YamlReader::mapping(const Field& f,
                                                     const std::vector<std::string>& known,
                                                     std::vector<util::Error>& errors) const {
  return entries(f, &known, &errors);
}

util::Result<std::vector<Field>> YamlReader::any_mapping(const Field& f) const {
  return entries(f, nullptr);
}

util::Result<std::string> YamlReader::string(const Field& f) const {
  if (f.value.IsNull()) {
    // `~`, `null` and an empty value are all YAML's null, not text: `[echo, ~]` said "got
    // nothing" of a `~` that was plainly written.
    return error(f.mark(),
                 fmt::format("'{}': expected a single value (a string), got YAML's null: an "
                             "empty value, `~` and `null` all mean nothing in YAML; give a "
                             "value, or, for that text itself, quote it (\"~\" or '~')",
                             f.path));
  }
  if (!f.value.IsScalar()) {
    return error(f.mark(), fmt::format("'{}': expected a single value (a string), got {}", f.path,
                                       kind(f.value)));
  }
  const std::string& text = f.value.Scalar();
  if (text.find('\0') != std::string::npos) {
    return error(f.mark(), fmt::format("'{}' holds a NUL byte (\\0), which no environment "
                                       "variable, argument or path can carry: remove it",
                                       f.path));
  }
  return text;
}

util::Result<std::string> YamlReader::nonempty_string(const Field& f) const {
  auto s = string(f);
  if (s.ok() && s->empty()) return error(f.mark(), fmt::format("'{}' is empty", f.path));
  return s;
}

util::Result<std::string> YamlReader::address(const Field& f) const {
  auto s = string(f);
  if (!s) return s;
  if (auto why = address_problem(*s)) {
    return error(f.mark(), fmt::format("'{}': '{}' {}", f.path, *s, *why));
  }
  return s;
}

util::Result<std::int64_t> YamlReader::integer(const Field& f, std::int64_t min, std::int64_t max,
                                               std::string_view what) const {
  if (!f.value.IsScalar()) {
    return error(f.mark(), fmt::format("'{}': expected {}, got {}", f.path, what, kind(f.value)));
  }
  const std::string& text = f.value.Scalar();
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || text.empty() || v < min || v > max) {
    return error(f.mark(), fmt::format("'{}': expected {} from {} to {}, got '{}'", f.path, what,
                                       min, max, text));
  }
  return v;
}

util::Result<std::vector<Field>> YamlReader::list(const Field& f, std::string_view expected) const {
  if (!f.value.IsSequence()) {
    return error(f.mark(),
                 fmt::format("'{}': expected {}, got {}", f.path, expected, kind(f.value)));
  }
  std::vector<Field> out;
  std::size_t i = 0;
  for (const YAML::Node& item : f.value) {
    if ((i + 1) % kInterruptCheckEvery == 0 && util::interrupted()) {
      return util::interrupted_error(fmt::format(" while reading {}", file_));
    }
    YAML::Mark m = item.Mark().line >= 0 ? item.Mark() : f.mark();
    out.push_back(Field{std::to_string(i), fmt::format("{}[{}]", f.path, i), m, item});
    ++i;
  }
  return out;
}

util::Result<std::vector<std::string>> YamlReader::strings(const Field& f) const {
  auto items = list(f, "a list of strings");
  if (!items) return items.error();
  std::vector<std::string> out;
  std::vector<util::Error> errors;  // every bad element, not only the first
  for (const Field& item : *items) {
    auto s = string(item);
    if (!s) {
      errors.push_back(s.error());
      continue;
    }
    out.push_back(std::move(*s));
  }
  if (!errors.empty()) return all(errors);
  return out;
}

util::Result<double> YamlReader::number(const Field& f, double min, double max) const {
  if (!f.value.IsScalar()) {
    return error(f.mark(), fmt::format("'{}': expected a number, got {}", f.path, kind(f.value)));
  }
  const std::string& text = f.value.Scalar();
  const auto v = util::parse_double(text);
  if (!v) return error(f.mark(), fmt::format("'{}': expected a number, got '{}'", f.path, text));
  if (*v < min || *v > max) {
    return error(f.mark(),
                 fmt::format("'{}': {} is out of range ({} to {})", f.path, text, min, max));
  }
  return *v;
}

util::Result<bool> YamlReader::boolean(const Field& f) const {
  if (f.value.IsScalar()) {
    if (f.value.Scalar() == "true") return true;
    if (f.value.Scalar() == "false") return false;
  }
  return error(f.mark(), fmt::format("'{}': expected true or false, got {}", f.path,
                                     f.value.IsScalar() ? fmt::format("'{}'", f.value.Scalar())
                                                        : std::string(kind(f.value))));
}

}  // namespace cc::util
