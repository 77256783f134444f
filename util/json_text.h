// JSON text that never throws: nlohmann's dump() throws type_error 316 on a string that is not
// UTF-8, and such strings arrive from hosts (a hostname, a model name, a file name in Latin-1)
// and from files. Every JSON clusterctl prints or writes goes through json_text, which puts
// U+FFFD in place of each byte that is not UTF-8. Header-only: nlohmann/json is header-only.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace cc::util {

/// `j` (a nlohmann::json or ordered_json) as text; indent -1: one line, else pretty-printed with
/// that many spaces.
template <class Json>
std::string json_text(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace cc::util
