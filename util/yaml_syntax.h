// Why a YAML text does not parse, said where the writer erred. yaml-cpp reports a syntax error
// where it noticed it, which is often lines later: an unclosed '[' shows up at the next key, a
// tab in the indentation as an "illegal map value". util::YamlReader::load asks here, so every
// YAML file clusterctl reads gets the same diagnosis.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

namespace cc::util {

/// A cause, at the place to fix: LINE and COLUMN 1-based, as in "FILE:LINE:COLUMN".
struct SyntaxCause {
  int line = 0;
  int column = 0;
  std::string what;  // "a tab in the indentation: YAML allows spaces only; ..."
};

/// The likely cause of yaml-cpp's ParserException `e` (its mark and message) for `text`, checked
/// in this order: a quote never closed (it ate the rest of the file, ']' and '}' with it); a '['
/// or '{' never closed (for "end of ... flow not found"); a tab in the indentation of the
/// failing line or of one before it; a '[' or '{' opened on an earlier line and still open where
/// yaml-cpp stopped; a missing space after a key's ':' ("key:value") on the failing line or the
/// one before. The cause's text ends with where yaml-cpp noticed the error when that is
/// elsewhere. nullopt when none applies: yaml-cpp's own message stands. Cost: one more parse of
/// `text`, up to the error.
std::optional<SyntaxCause> syntax_cause(std::string_view text, const YAML::ParserException& e);

/// A quote never closed in a `text` that yaml-cpp parsed without error: yaml-cpp 0.7 takes the
/// rest of the file into the quoted value (`name: "j` swallows every line after it). nullopt
/// when every quoted value is closed. Cost: one pass over `text`; one more parse when a quote is
/// never closed.
std::optional<SyntaxCause> unclosed_quote(std::string_view text);

/// For a single value that should have been a key and its value, or a key that is not known:
/// "; 'name:x' has no space after ':' (write 'name: x')" when `scalar` is WORD:VALUE (a word of
/// letters, digits, '_', '-', '.', then ':' and no blank), else "".
std::string missing_space_hint(std::string_view scalar);

}  // namespace cc::util
