#include "util/yaml_reader.h"

#include <string>

#include <doctest/doctest.h>

#include "util/interrupt.h"

namespace cc::util {
namespace {

// The fields of a top-level mapping, read with `known` keys.
std::vector<Field> fields(const YamlReader& r, const YAML::Node& doc,
                          const std::vector<std::string>& known) {
  auto f = r.mapping(YamlReader::root(doc), known);
  REQUIRE_MESSAGE(f.ok(), (f.ok() ? "" : f.error().message));
  return *f;
}

TEST_CASE("yaml reader: numbers and booleans, with FILE:LINE:COLUMN and the dotted path") {
  const YamlReader r("f.yaml", "the file");
  auto doc = r.load("a: 2.5\nb: 1e3\nc: nope\nd: true\ne: yes\nf: [1]\n");
  REQUIRE(doc.ok());
  auto f = fields(r, *doc, {"a", "b", "c", "d", "e", "f"});
  REQUIRE(f.size() == 6);
  CHECK(*r.number(f[0], 0, 10) == 2.5);
  CHECK(*r.number(f[1], 0, 1e4) == 1000);
  CHECK(r.number(f[1], 0, 10).error().message == "f.yaml:2:4: 'b': 1e3 is out of range (0 to 10)");
  CHECK(r.number(f[2], 0, 10).error().message == "f.yaml:3:4: 'c': expected a number, got 'nope'");
  CHECK(r.number(f[5], 0, 10).error().message == "f.yaml:6:4: 'f': expected a number, got a list");
  CHECK(*r.boolean(f[3]));
  CHECK(r.boolean(f[4]).error().message == "f.yaml:5:4: 'e': expected true or false, got 'yes'");
  CHECK(r.boolean(f[4]).error().code == ExitCode::kUsage);
}

TEST_CASE("yaml reader: strings names every element that is no single value") {
  const YamlReader r("f.yaml", "the file");
  auto doc = r.load("a: [x, [1], y, {k: v}]\n");
  REQUIRE(doc.ok());
  auto f = fields(r, *doc, {"a"});
  CHECK(r.strings(f[0]).error().message ==
        "f.yaml:1:8: 'a[1]': expected a single value (a string), got a list\n"
        "f.yaml:1:16: 'a[3]': expected a single value (a string), got a mapping");
}

TEST_CASE("yaml reader: a null where a string belongs is named as YAML's null, with the quotes "
          "that make it text") {
  const YamlReader r("f.yaml", "the file");
  auto doc = r.load("a: [x, ~, null, \"~\"]\nb:\n");
  REQUIRE(doc.ok());
  auto f = fields(r, *doc, {"a", "b"});
  REQUIRE(f.size() == 2);
  const std::string why =
      "expected a single value (a string), got YAML's null: an empty value, `~` and `null` all "
      "mean nothing in YAML; give a value, or, for that text itself, quote it (\"~\" or '~')";
  auto items = r.strings(f[0]);
  REQUIRE_FALSE(items.ok());
  CHECK(items.error().message ==
        "f.yaml:1:8: 'a[1]': " + why + "\nf.yaml:1:11: 'a[2]': " + why);
  auto empty = r.string(f[1]);
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message == "f.yaml:2:1: 'b': " + why);
}

TEST_CASE("yaml reader: unknown and repeated keys, every one at once, in file order") {
  const YamlReader r("f.yaml", "the file");
  auto doc = r.load("name: x\nnmae: y\nname: z\nzzz: 1\n");
  REQUIRE(doc.ok());
  std::vector<Error> errors;
  auto f = r.mapping(YamlReader::root(*doc), {"name", "size"}, errors);
  REQUIRE(f.ok());
  CHECK(f->size() == 1);  // the good one; the others are in `errors`
  REQUIRE(errors.size() == 3);
  errors.insert(errors.begin(), r.error(YAML::Mark::null_mark(), "no mark"));
  const Error all = YamlReader::all(r.in_file_order(errors));
  CHECK(all.message ==
        "f.yaml: no mark\n"
        "f.yaml:2:1: unknown key 'nmae' in the file (did you mean 'name'?)\n"
        "f.yaml:3:1: 'name' appears twice (first at line 1)\n"
        "f.yaml:4:1: unknown key 'zzz' in the file; known keys: name, size");
  CHECK(all.code == ExitCode::kUsage);
}

TEST_CASE("yaml reader: a syntax error carries yaml-cpp's mark, a document that is no mapping is named") {
  const YamlReader r("f.yaml", "the file");
  auto bad = r.load("a: [1, 2\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.rfind("f.yaml:", 0) == 0);
  auto list = r.load("- 1\n");
  REQUIRE(list.ok());
  CHECK(r.mapping(YamlReader::root(*list), {"a"}).error().message ==
        "f.yaml:1:1: the file: expected a mapping (key: value lines), got a list");
}

}  // namespace
}  // namespace cc::util

namespace cc::util {
namespace {

TEST_CASE(
    "yaml reader: address() takes IP addresses only, saying what is wrong at FILE:LINE:COLUMN") {
  const YamlReader r("inv.yaml", "the inventory");
  auto doc =
      r.load("a: 10.0.0.1\nb: fe80::1%en0\nc: 10.0.0.300\nd: 10.0.0.1:5000\ne: ''\nf: [1]\n");
  REQUIRE(doc.ok());
  auto f = fields(r, *doc, {"a", "b", "c", "d", "e", "f"});
  REQUIRE(f.size() == 6);
  CHECK(*r.address(f[0]) == "10.0.0.1");
  CHECK(*r.address(f[1]) == "fe80::1%en0");
  CHECK(
      r.address(f[2]).error().message ==
      "inv.yaml:3:4: 'c': '10.0.0.300' is not an IPv4 address: 300 is not a number from 0 to 255");
  CHECK(
      r.address(f[3]).error().message ==
      "inv.yaml:4:4: 'd': '10.0.0.1:5000' has a port (':5000'): give the address alone, 10.0.0.1");
  CHECK(r.address(f[4]).error().message.starts_with("inv.yaml:5:4: 'e': '' is empty"));
  CHECK(r.address(f[5]).error().message ==
        "inv.yaml:6:4: 'f': expected a single value (a string), got a list");
}

TEST_CASE("yaml reader: a key repeated far from its first is found, at its first line") {
  // Found by a lookup (it was a walk over every key before it: minutes for a million keys).
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "V" + std::to_string(i) + ": x\n";
  text += "V7: y\n";
  const YamlReader r("f.yaml");
  auto doc = r.load(text);
  REQUIRE(doc.ok());
  auto f = r.any_mapping(YamlReader::root(*doc));
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().message == "f.yaml:20001:1: 'V7' appears twice (first at line 8)");
}

TEST_CASE("yaml reader: Ctrl-C or SIGTERM ends reading a file, as exit 130") {
  std::string text;
  for (std::size_t i = 0; i < 2 * YamlReader::kInterruptCheckEvery; ++i) {
    text += "V" + std::to_string(i) + ": x\n";
  }
  std::string items = "[x";
  for (std::size_t i = 1; i < 2 * YamlReader::kInterruptCheckEvery; ++i) items += ", x";
  const YamlReader r("big.yaml");
  auto doc = r.load(text);
  REQUIRE(doc.ok());
  auto seq = r.load(items + "]");
  REQUIRE(seq.ok());
  set_interrupted(true, SIGTERM);
  auto list = r.list(YamlReader::root(*seq), "a list");
  auto entries = r.any_mapping(YamlReader::root(*doc));
  auto again = r.load(text);
  set_interrupted(false);
  REQUIRE_FALSE(entries.ok());
  CHECK(entries.error().code == ExitCode::kInterrupted);
  CHECK(entries.error().message == "terminated (SIGTERM) while reading big.yaml");
  REQUIRE_FALSE(list.ok());
  CHECK(list.error().code == ExitCode::kInterrupted);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == ExitCode::kInterrupted);
  CHECK(again.error().message == "terminated (SIGTERM) while reading big.yaml");
}

}  // namespace
}  // namespace cc::util
