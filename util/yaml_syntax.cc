#include "util/yaml_syntax.h"

#include <algorithm>
#include <cstddef>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "util/text.h"

namespace cc::util {
namespace {

// A collection yaml-cpp started and had not ended when it stopped.
struct OpenCollection {
  YAML::Mark mark;  // its first character: '[' or '{' for a flow one
  bool flow = false;
  bool sequence = false;
};

// Replays the events yaml-cpp emits up to its error: what is still open, and the last event.
class OpenCollections final : public YAML::EventHandler {
 public:
  std::vector<OpenCollection> open;
  YAML::Mark last = YAML::Mark::null_mark();
  std::vector<int> scalars;  // where each scalar starts (its quote, for a quoted one)

  void OnDocumentStart(const YAML::Mark& m) override { last = m; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { seen(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { seen(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    seen(m);
    scalars.push_back(m.pos);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value style) override {
    start(m, style, true);
  }
  void OnSequenceEnd() override { end(); }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value style) override {
    start(m, style, false);
  }
  void OnMapEnd() override { end(); }

  /// The innermost open flow collection, or nullptr.
  const OpenCollection* innermost_flow() const {
    for (auto it = open.rbegin(); it != open.rend(); ++it) {
      if (it->flow) return &*it;
    }
    return nullptr;
  }

 private:
  void seen(const YAML::Mark& m) {
    if (m.pos >= 0) last = m;
  }
  void start(const YAML::Mark& m, YAML::EmitterStyle::value style, bool sequence) {
    open.push_back({m, style == YAML::EmitterStyle::Flow, sequence});
    seen(m);
  }
  void end() {
    if (!open.empty()) open.pop_back();
  }
};

// The 0-based byte column of the first tab among the blanks that indent `line` (those before
// its content, and after a "- " entry's dash, which nests too); -1 when there is none, or the
// line is blank or a comment (a tab there changes nothing).
int tab_in_indentation(std::string_view line) {
  int tab = -1;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\t') {
      if (tab < 0) tab = static_cast<int>(i);
    } else if (c == '-' && i + 1 < line.size() && (line[i + 1] == ' ' || line[i + 1] == '\t')) {
      continue;
    } else if (c != ' ' && c != '\r') {
      return c == '#' ? -1 : tab;
    }
  }
  return -1;
}

// Where `line`'s content starts: after its indentation and any "- " dashes.
std::size_t content_start(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t') {
      ++i;
    } else if (line[i] == '-' && i + 1 < line.size() &&
               (line[i + 1] == ' ' || line[i + 1] == '\t')) {
      i += 2;
    } else {
      break;
    }
  }
  return i;
}

bool word_char(char c) {
  return is_ascii_alnum(c) || c == '_' || c == '-' || c == '.';
}

// The byte offset in `s` of the ':' of a WORD:VALUE with no blank after the ':' (a key and
// its value run together), or npos.
std::size_t glued_colon(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && word_char(s[i])) ++i;
  if (i == 0 || i + 1 >= s.size() || s[i] != ':') return std::string_view::npos;
  const char after = s[i + 1];
  // "http://", "a::b" and "key:  value" are not it; a '#' after ':' starts no comment.
  if (after == ' ' || after == '\t' || after == '\r' || after == '/' || after == ':') {
    return std::string_view::npos;
  }
  return i;
}

// The byte offset of the quote that closes the quoted value opened at `open`, across lines
// ("\"" inside "...", '' inside '...' do not close it); npos when the text ends first.
std::size_t closing_quote(std::string_view text, std::size_t open) {
  const char q = text[open];
  for (std::size_t j = open + 1; j < text.size(); ++j) {
    if (q == '"' && text[j] == '\\') {
      ++j;
    } else if (q == '\'' && text[j] == '\'' && j + 1 < text.size() && text[j + 1] == '\'') {
      ++j;
    } else if (text[j] == q) {
      return j;
    }
  }
  return std::string_view::npos;
}

// The byte offset of the first quote that opens a value (after the
// indentation, a "- ", ':', '[', '{', ',' or '?') and is never closed before the end of `text`;
// npos when there is none. Comments are skipped; a closed value is skipped whole.
std::size_t never_closed_quote(std::string_view text) {
  char before = '\n';  // the last non-blank character on the line so far ('\n': none)
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      before = '\n';
    } else if (c == ' ' || c == '\t' || c == '\r') {
      continue;
    } else if (c == '#' &&
               (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n')) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;  // a comment
    } else if ((c == '"' || c == '\'') &&
               (before == '\n' || before == ':' || before == '-' || before == '[' ||
                before == '{' || before == ',' || before == '?')) {
      const std::size_t close = closing_quote(text, i);
      if (close == std::string_view::npos) return i;
      i = close;
      before = c;
    } else {
      before = c;
    }
  }
  return std::string_view::npos;
}

// LINE and COLUMN (1-based) of byte offset `pos` in `text`.
SyntaxCause at(std::string_view text, std::size_t pos, std::string what) {
  const std::string_view head = text.substr(0, pos);
  const std::size_t nl = head.rfind('\n');
  int line = 1;
  for (char c : head) line += c == '\n' ? 1 : 0;
  const std::size_t column = nl == std::string_view::npos ? pos : pos - nl - 1;
  return {line, static_cast<int>(column) + 1, std::move(what)};
}

// The events of `text` up to its end or its first error.
OpenCollections replay(std::string_view text) {
  OpenCollections events;
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    // The first document only, as YAML::Load reads: on some inputs (`," n`, found by
    // fuzz_job_plan) yaml-cpp 0.7 reports a next document forever.
    (void)parser.HandleNextDocument(events);
  } catch (const YAML::Exception&) {
    // the error load() saw, again: `events` holds what came before it
  }
  return events;
}

// A quote that opens a value and is never closed, confirmed by yaml-cpp: a scalar starts there
// (or, when `failed`, yaml-cpp stopped at or after it, before emitting it).
std::optional<SyntaxCause> quote_cause(std::string_view text, const OpenCollections& events,
                                       bool failed) {
  const std::size_t q = never_closed_quote(text);
  if (q == std::string_view::npos) return std::nullopt;
  const int pos = static_cast<int>(q);
  const bool scalar =
      std::find(events.scalars.begin(), events.scalars.end(), pos) != events.scalars.end();
  if (!scalar && !(failed && events.last.pos <= pos)) return std::nullopt;
  const std::string_view quote = text[q] == '"' ? "'\"'" : "\"'\"";
  return at(text, q,
            fmt::format("this {0} is never closed: end the value with another {0}", quote));
}

}  // namespace

std::string missing_space_hint(std::string_view scalar) {
  const std::size_t colon = glued_colon(scalar);
  if (colon == std::string_view::npos) return "";
  return fmt::format("; '{}' has no space after ':' (write '{}: {}')", scalar,
                     scalar.substr(0, colon), scalar.substr(colon + 1));
}

std::optional<SyntaxCause> syntax_cause(std::string_view text, const YAML::ParserException& e) {
  const OpenCollections events = replay(text);
  const std::vector<std::string_view> lines = split_lines(text);
  const int last_line = static_cast<int>(lines.size()) - 1;
  const int fail_line = e.mark.line >= 0 ? std::min(e.mark.line, last_line) : last_line;
  const std::string noticed = e.mark.line >= 0 ? fmt::format(" (yaml-cpp noticed it at {}:{})",
                                                             e.mark.line + 1, e.mark.column + 1)
                                               : std::string();
  const auto cause = [&](int line, int column, std::string what) {
    SyntaxCause c{line + 1, column + 1, std::move(what)};
    if (c.line != e.mark.line + 1 || c.column != e.mark.column + 1) c.what += noticed;
    return c;
  };
  const OpenCollection* flow = events.innermost_flow();
  const auto never_closed = [&](const OpenCollection& o) {
    return cause(o.mark.line, o.mark.column,
                 o.sequence ? "this '[' is never closed: a list written [a, b] ends with ']'"
                            : "this '{' is never closed: a mapping written {a: 1} ends with '}'");
  };

  // A quote never closed eats the rest of the file, its ']' and '}' with it: first.
  if (auto q = quote_cause(text, events, true)) {
    q->what += noticed;
    return q;
  }
  if (flow != nullptr &&
      (e.msg == YAML::ErrorMsg::END_OF_SEQ_FLOW || e.msg == YAML::ErrorMsg::END_OF_MAP_FLOW)) {
    return never_closed(*flow);
  }
  for (int l = fail_line; l >= 0; --l) {
    if (const int tab = tab_in_indentation(lines[static_cast<std::size_t>(l)]); tab >= 0) {
      return cause(l, tab, "a tab in the indentation: YAML allows spaces only; indent with spaces");
    }
  }
  if (flow != nullptr && flow->mark.line < e.mark.line) return never_closed(*flow);
  for (int l = fail_line, n = 0; l >= 0 && n < 2; --l) {  // the failing line and the one before
    const std::string_view line = lines[static_cast<std::size_t>(l)];
    if (blank(line)) continue;
    ++n;
    const std::size_t start = content_start(line);
    const std::string_view content = trim(line.substr(start));
    // `-name: h3`: meant as a list entry, read as a key "-name" beside the entries.
    if (content.size() > 1 && content[0] == '-' && content[1] != ' ' && content[1] != '-') {
      return cause(l, static_cast<int>(start),
                   fmt::format("a list item needs a space after '-': YAML does not read '{}' "
                               "as an entry of the list; write '- {}'",
                               content, content.substr(1)));
    }
    const std::size_t colon = glued_colon(content);
    if (colon == std::string_view::npos) continue;
    return cause(l, static_cast<int>(start + colon),
                 fmt::format("no space after this ':': YAML reads '{}' as one word, not a key "
                             "and its value; write '{}: {}'",
                             content, content.substr(0, colon), content.substr(colon + 1)));
  }
  return std::nullopt;
}

std::optional<SyntaxCause> unclosed_quote(std::string_view text) {
  if (never_closed_quote(text) == std::string_view::npos) return std::nullopt;  // the usual
  return quote_cause(text, replay(text), false);
}

}  // namespace cc::util
