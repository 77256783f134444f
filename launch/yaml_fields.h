// Checked reading of a YAML document with yaml-cpp, for files the operator writes (job.yaml).
// Every error is kUsage with the message "FILE:LINE:COLUMN: what", LINE and COLUMN 1-based
// (yaml-cpp's marks count from 0), naming the key by its dotted path ("timeouts.grace",
// "upload[1].mode") and saying what was expected and what was found.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "util/result.h"

namespace cc::launch {

/// One `key: value` entry of a mapping, as written.
struct Field {
  std::string key;   // the key as written ("grace")
  std::string path;  // the key's dotted path from the document root ("timeouts.grace")
  YAML::Mark key_mark;
  YAML::Node value;

  /// Where to point at the value: its own mark, or the key's when the value is empty
  /// (yaml-cpp marks an empty value at the start of the next line).
  YAML::Mark mark() const;
};

class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}
  /// The file name errors start with.
  const std::string& file() const { return file_; }

  /// "FILE:LINE:COLUMN: what" (kUsage); "FILE: what" when yaml-cpp gave no mark.
  util::Error error(const YAML::Mark& mark, std::string_view what) const;

  /// Parses `text`. A syntax error carries yaml-cpp's own message at its mark.
  util::Result<YAML::Node> load(std::string_view text) const;

  /// The entries of the mapping `f.value`, in file order, each with its dotted path.
  /// Errors: the value is not a mapping; a key is not a plain scalar; a key is not in `known`
  /// (with "did you mean", or the known keys listed); a key appears twice.
  util::Result<std::vector<Field>> mapping(const Field& f,
                                           const std::vector<std::string>& known) const;
  /// The same, but every bad key (not a plain scalar, unknown, repeated) is added to `errors`
  /// and left out, so a caller can go on and report every mistake at once. Errors: only "not a
  /// mapping".
  util::Result<std::vector<Field>> mapping(const Field& f, const std::vector<std::string>& known,
                                           std::vector<util::Error>& errors) const;
  /// The same for a mapping whose keys are the operator's own (env names): any key, once.
  util::Result<std::vector<Field>> any_mapping(const Field& f) const;

  /// A single value (yaml-cpp scalar), exactly as written after YAML unquoting.
  util::Result<std::string> string(const Field& f) const;
  /// A single value that is not empty.
  util::Result<std::string> nonempty_string(const Field& f) const;
  /// A decimal whole number in [min, max]; `what` describes it ("a whole number of seconds").
  util::Result<std::int64_t> integer(const Field& f, std::int64_t min, std::int64_t max,
                                     std::string_view what = "a whole number") const;
  /// The elements of a list, each a Field with path "key[i]" (the list may be empty).
  util::Result<std::vector<Field>> list(const Field& f, std::string_view expected) const;
  /// A list of single values.
  util::Result<std::vector<std::string>> strings(const Field& f) const;

  /// What a node is, for "expected X, got Y": "a mapping", "a list", "a single value", "nothing".
  static std::string_view kind(const YAML::Node& node);

 private:
  util::Result<std::vector<Field>> entries(const Field& f, const std::vector<std::string>* known,
                                           std::vector<util::Error>* errors = nullptr) const;
  std::string file_;
};

}  // namespace cc::launch
