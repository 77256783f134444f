// Checked reading of a YAML document with yaml-cpp, for every file the operator writes (a job,
// an inventory, health thresholds, a lab topology): the one place that turns YAML nodes into
// typed values. Every error is kUsage with the message "FILE:LINE:COLUMN: what", LINE and
// COLUMN 1-based (yaml-cpp's marks count from 0), naming the key by its dotted path
// ("timeouts.grace", "upload[1].mode", "hosts[2].name"), saying what was expected and what was
// found, and suggesting the closest known key for a misspelt one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "util/result.h"

namespace cc::util {

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
  /// How many entries of a mapping or list a reader goes through between two looks at
  /// util::interrupted(): a file of millions of them ends promptly on Ctrl-C or SIGTERM.
  static constexpr std::size_t kInterruptCheckEvery = 4096;

  /// `file` starts every error; `document` names the whole file in them ("the job", "the
  /// inventory").
  explicit YamlReader(std::string file, std::string document = "the document")
      : file_(std::move(file)), document_(std::move(document)) {}
  /// The file name errors start with.
  const std::string& file() const { return file_; }

  /// The document itself as a Field (empty key and path), for mapping() and kind checks.
  static Field root(const YAML::Node& doc);

  /// `errors` sorted by the LINE:COLUMN after "FILE:" (stable; one without them first).
  std::vector<util::Error> in_file_order(std::vector<util::Error> errors) const;
  /// Several errors of one file as one (kUsage), one per line, in the order given: a reader
  /// reports every mistake of a file at once. `errors` must not be empty.
  static util::Error all(const std::vector<util::Error>& errors);

  /// "FILE:LINE:COLUMN: what" (kUsage); "FILE: what" when yaml-cpp gave no mark.
  util::Error error(const YAML::Mark& mark, std::string_view what) const;

  /// Parses `text` (a UTF-8 byte order mark, CRLF line ends and JSON are fine). A SIGINT or
  /// SIGTERM while it does (util::interrupted) ends it: ExitCode::kInterrupted, "interrupted
  /// (Ctrl-C) while reading FILE". A syntax error
  /// is reported where the writer erred when that can be told (util::syntax_cause: a tab in the
  /// indentation, a '[', '{' or quote never closed, "key:value"), else with yaml-cpp's own
  /// message at its mark. An empty text (or only comments) is a null node.
  util::Result<YAML::Node> load(std::string_view text) const;

  /// The entries of the mapping `f.value`, in file order, each with its dotted path.
  /// Errors: the value is not a mapping; a key is not a plain scalar; a key is not in `known`
  /// (with "did you mean", or the known keys listed); a key appears twice; a SIGINT or SIGTERM
  /// came (ExitCode::kInterrupted, as load's).
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
  /// An IP address (util::address_problem: IPv4, or IPv6 with an optional %scope; not a host
  /// name, not with a port, not empty); the error says what is wrong with it.
  util::Result<std::string> address(const Field& f) const;
  /// A decimal whole number in [min, max]; `what` describes it ("a whole number of seconds").
  util::Result<std::int64_t> integer(const Field& f, std::int64_t min, std::int64_t max,
                                     std::string_view what = "a whole number") const;
  /// The elements of a list, each a Field with path "key[i]" (the list may be empty).
  util::Result<std::vector<Field>> list(const Field& f, std::string_view expected) const;
  /// A list of single values. Errors: not a list; every element that is no single value, one
  /// line each.
  util::Result<std::vector<std::string>> strings(const Field& f) const;
  /// A finite decimal number (util::parse_double: "5", "0.5", "1e3") in [min, max].
  util::Result<double> number(const Field& f, double min, double max) const;
  /// true or false, written so.
  util::Result<bool> boolean(const Field& f) const;

  /// What a node is, for "expected X, got Y": "a mapping", "a list", "a single value", "nothing".
  static std::string_view kind(const YAML::Node& node);

 private:
  util::Result<std::vector<Field>> entries(const Field& f, const std::vector<std::string>* known,
                                           std::vector<util::Error>* errors = nullptr) const;
  std::string where(const Field& f) const;
  std::string file_;
  std::string document_;
};

}  // namespace cc::util
