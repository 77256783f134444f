// Internal to discovery/: reading and writing the fields of our own JSON files (host facts,
// cluster state) with nlohmann::json, where a wrong type must name the field's path
// ("hosts.ports.interface.mtu: type must be number, but is string"). Not for probe outputs:
// those go through json_util.h, which never throws.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "discovery/json_util.h"

namespace cc::discovery::detail {

/// A field that has the right JSON type but a value outside its domain (an enum string), or
/// any field error re-thrown with its path.
struct BadField : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

/// Reads j[key] into out when present and not null. Errors throw BadField naming the path.
template <class T>
void read(const nlohmann::json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // nlohmann converts any number with a plain cast: a fraction, or a value out of T's range
    // (undefined behaviour for a float), would be read silently wrong.
    bool fits = false;
    if (it->is_number_unsigned()) {
      fits = it->template get<std::uint64_t>() <=
             static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    } else if (it->is_number_integer()) {
      auto v = it->template get<std::int64_t>();
      fits = std::is_signed_v<T> ? v >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
                                       v <= static_cast<std::int64_t>(std::numeric_limits<T>::max())
                                 : v >= 0;
    }
    if (it->is_number() && !fits) {
      throw BadField(fmt::format("{}: {} is not an integer in range", key, it->dump()));
    }
  }
  try {
    out = it->template get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw BadField(fmt::format("{}: {}", key, json_error_text(e)));
  } catch (const BadField& e) {
    throw BadField(fmt::format("{}.{}", key, e.what()));
  }
}
template <class T>
void read(const nlohmann::json& j, const char* key, std::optional<T>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  T v{};
  read(j, key, v);
  out = std::move(v);
}

}  // namespace cc::discovery::detail
