#include "discovery/json_util.h"

#include <limits>

#include <fmt/format.h>

#include "discovery/text.h"
#include "util/interrupt.h"
#include "util/json_error.h"

namespace cc::discovery {

using nlohmann::json;

std::string json_error_text(const json::exception& e) {
  std::string_view s = e.what();
  if (!s.empty() && s.front() == '[') {
    std::size_t close = s.find("] ");
    if (close != std::string_view::npos) s.remove_prefix(close + 2);
  }
  return std::string(s);
}

namespace {
// Deepest nesting of arrays and objects, counted without recursion (bounded stack for any input).
std::size_t nesting_depth(std::string_view text) {
  std::size_t depth = 0;
  std::size_t deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
      if (depth > deepest) deepest = depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}
constexpr std::size_t kMaxDepth = 64;

// `text` as JSON, or why not ("empty", the syntax error, too deep) given to `fail`.
template <class Fail>
util::Result<json> parse_json(std::string_view text, std::string_view source, const char* empty,
                              Fail fail) {
  if (blank(text)) return fail(empty);
  if (nesting_depth(text) > kMaxDepth) {
    return fail(fmt::format("JSON nested deeper than {} levels", kMaxDepth));
  }
  // A file near the 64 MiB cap takes seconds to parse: Ctrl-C or SIGTERM ends it (exit 130),
  // looked at every 64 Ki of the parser's events.
  struct Interrupted {};
  std::size_t events = 0;
  const json::parser_callback_t check = [&events](int, json::parse_event_t, json&) {
    if (++events % 65536 == 0 && util::interrupted()) throw Interrupted{};
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const Interrupted&) {
    return util::interrupted_error(fmt::format(" while reading {}", source));
  } catch (const json::parse_error& e) {
    const util::JsonSyntaxError at = util::json_syntax_error(text, e);
    return fail(
        fmt::format("not valid JSON at line {}, column {}: {}", at.line, at.column, at.problem));
  } catch (const json::exception& e) {
    return fail(fmt::format("not valid JSON: {}", json_error_text(e)));
  }
}
}  // namespace

util::Result<json> parse_json_output(std::string_view command, std::string_view text) {
  return parse_json(text, fmt::format("the output of {}", command), "empty output (expected JSON)",
                    [&](std::string_view why) { return parse_error(command, why); });
}

util::Result<json> parse_json_file(std::string_view path, std::string_view text) {
  return parse_json(text, path, "empty file (expected JSON)", [&](std::string_view why) {
    return util::error(util::ExitCode::kUsage, fmt::format("{}: {}", path, why));
  });
}

std::optional<std::string> get_string(const json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return std::nullopt;
  return it->get_ref<const std::string&>();
}

std::optional<int> get_int(const json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  if (it->is_number_unsigned()) {
    auto v = it->get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) return std::nullopt;
    return static_cast<int>(v);
  }
  if (it->is_number_integer()) {
    auto v = it->get<std::int64_t>();
    if (v < 0 || v > std::numeric_limits<int>::max()) return std::nullopt;
    return static_cast<int>(v);
  }
  if (it->is_string()) return parse_int(trim(it->get_ref<const std::string&>()));
  return std::nullopt;
}

const json* get_object(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? &*it : nullptr;
}

const json* get_array(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it != obj.end() && it->is_array() ? &*it : nullptr;
}

}  // namespace cc::discovery
