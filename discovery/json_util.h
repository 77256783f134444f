// Defensive reading of nlohmann::json values for the JSON probe outputs (system_profiler,
// `ip -j`, `rdma -j`): keys can be missing or of an unexpected type, and none of these helpers
// throws. Also the one place a JSON text is parsed, so a syntax error always reads the same.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace cc::discovery {

/// An nlohmann exception's text without its "[json.exception.parse_error.101] " prefix.
std::string json_error_text(const nlohmann::json::exception& e);

/// Parses `text` as JSON. Errors (parse_error naming `command`): empty output, a syntax error
/// ("not valid JSON at line 5, column 4: trailing comma ...": util::json_syntax_error), nesting
/// deeper than 64 levels.
util::Result<nlohmann::json> parse_json_output(std::string_view command, std::string_view text);
/// The same for the contents of a file the operator gave: errors name it as a file ("PATH:
/// empty file (expected JSON)", "PATH: not valid JSON: ..."), not as a command's output.
util::Result<nlohmann::json> parse_json_file(std::string_view path, std::string_view text);

/// obj[key] when obj is an object holding key with a string value; nullopt otherwise.
std::optional<std::string> get_string(const nlohmann::json& obj, const char* key);

/// obj[key] as an integer: a JSON integer >= 0 in int range, or a string of digits.
std::optional<int> get_int(const nlohmann::json& obj, const char* key);

/// obj[key] when it is an object / an array; nullptr otherwise.
const nlohmann::json* get_object(const nlohmann::json& obj, const char* key);
const nlohmann::json* get_array(const nlohmann::json& obj, const char* key);

}  // namespace cc::discovery
