// Small text helpers: line splitting, trimming, strict integer parsing, excerpts for error
// messages. The probe-output parsers (discovery/) and every other reader of command output use
// these, never a loop of their own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cc::util {

/// `s` without leading and trailing spaces, tabs, CR and LF.
std::string_view trim(std::string_view s);

/// The lines of `s` (split on '\n'; a trailing CR is dropped; no final empty line).
std::vector<std::string_view> split_lines(std::string_view s);

/// Whitespace-separated words of `s`.
std::vector<std::string_view> split_words(std::string_view s);

/// `s` as a non-negative decimal integer (digits only, no sign, no overflow); nullopt otherwise.
std::optional<std::uint64_t> parse_u64(std::string_view s);

/// Like parse_u64, limited to int's range.
std::optional<int> parse_int(std::string_view s);

/// At most `max` bytes of `s` for an error message, quoted, with "..." when cut.
std::string excerpt(std::string_view s, std::size_t max = 60);

/// "1 host", "3 hosts": `n` and the word that goes with it.
std::string plural(std::size_t n, const char* one, const char* many);

/// True when `s` is a shell variable name, [A-Za-z_][A-Za-z0-9_]*: what an environment
/// variable set through a shell (the rank wrapper's `export NAME=...`) may be called.
bool is_env_name(std::string_view s);

/// True when a variable called `name` likely holds a secret: its name holds, in any case, TOKEN,
/// SECRET, PASS (PASSWORD, PASSWD, PASSPHRASE), PWD, KEY, CREDENTIAL, AUTH, PRIVATE, COOKIE,
/// SESSION or SALT (HF_TOKEN, AWS_SECRET_ACCESS_KEY, DB_PASSWORD, API_KEY). A message about such
/// a variable names it and never shows its value, not even a part of it.
bool looks_secret(std::string_view name);

/// ASCII '0'..'9' and [0-9A-Za-z], in every locale (std::isdigit and std::isalnum depend on it
/// and take an int that a negative char breaks).
constexpr bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_ascii_alnum(char c) {
  return is_ascii_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/// The longest `s` starts with that is at most `max` bytes and does not end inside a UTF-8
/// character (a file name cut to fit NAME_MAX: macOS refuses a name that is not UTF-8).
std::string_view utf8_prefix(std::string_view s, std::size_t max);

/// True when `s` is blank (only whitespace).
bool blank(std::string_view s);

}  // namespace cc::util
