// The project's error policy (see ARCHITECTURE.md, "Errors"):
//  - Expected failures (a host is down, a file is malformed, a key is unknown) are returned as
//    Result<T> / Status carrying an Error: an exit code and a message that names the host, file,
//    line or port involved and says what to do.
//  - Broken invariants (bugs) are exceptions; cli/main.cc is the one place that catches them.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "util/exit_code.h"

namespace cc::util {

struct Error {
  ExitCode code = ExitCode::kUsage;
  std::string message;  // one or more lines for the operator, no trailing newline
};

inline Error error(ExitCode code, std::string message) {
  return Error{code, std::move(message)};
}

/// A value or an Error. Accessing the wrong alternative is a bug (throws std::bad_variant_access).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error e) : v_(std::move(e)) {}      // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

/// Success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : err_(std::move(e)), ok_(false) {}  // NOLINT: implicit by design

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool ok_ = true;
};

}  // namespace cc::util
