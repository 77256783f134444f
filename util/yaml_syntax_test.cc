// Syntax errors as a new user makes them, through YamlReader::load (every YAML file clusterctl
// reads): each is reported where it was made, not where yaml-cpp noticed it.
#include "util/yaml_syntax.h"

#include <string>

#include <doctest/doctest.h>

#include "util/yaml_reader.h"

namespace cc::util {
namespace {

// The error of loading `text` ("" when it loads).
std::string err(const std::string& text) {
  const YamlReader r("job.yaml", "the job");
  auto doc = r.load(text);
  if (doc.ok()) return "";
  CHECK(doc.error().code == ExitCode::kUsage);
  return doc.error().message;
}

TEST_CASE("yaml syntax: a tab in the indentation is named at the tab") {
  // yaml-cpp said "illegal map value" at the ':' (3:7).
  CHECK(err("name: j\ntimeouts:\n\tgrace: 5\n") ==
        "job.yaml:3:1: a tab in the indentation: YAML allows spaces only; indent with spaces "
        "(yaml-cpp noticed it at 3:7)");
  // After spaces, after a list's dash, on a line above the one yaml-cpp stopped at.
  CHECK(err("name: j\ncommand:\n  \t- hostname\n") ==
        "job.yaml:3:3: a tab in the indentation: YAML allows spaces only; indent with spaces "
        "(yaml-cpp noticed it at 3:4)");
  CHECK(err("timeouts:\n  grace: 5\n\tstall: 3\n") ==
        "job.yaml:3:1: a tab in the indentation: YAML allows spaces only; indent with spaces");
  // A tab inside a value or a comment is no indentation: no error.
  CHECK(err("name: \"a\tb\"\n\t# note\nx: 1\n") == "");
}

TEST_CASE("yaml syntax: a bracket or brace never closed is named at itself") {
  CHECK(err("name: j\ncluster: lab:default\ncommand: [hostname\nlogs: x\n") ==
        "job.yaml:3:10: this '[' is never closed: a list written [a, b] ends with ']' "
        "(yaml-cpp noticed it at 4:5)");
  CHECK(err("name: j\nenv: {A: 1\nlogs: x\n") ==
        "job.yaml:2:6: this '{' is never closed: a mapping written {a: 1} ends with '}' "
        "(yaml-cpp noticed it at 3:5)");
  // The inner one closed, the outer not.
  CHECK(err("a: [1, [2, 3]\nb: 2\n").starts_with("job.yaml:1:4: this '[' is never closed"));
}

TEST_CASE("yaml syntax: a quote never closed is named at itself, though yaml-cpp takes it") {
  // yaml-cpp 0.7 read the rest of the file into the value: the job then had no command.
  CHECK(err("name: \"j\ncommand: [x]\nhosts: [h]\n") ==
        "job.yaml:1:7: this '\"' is never closed: end the value with another '\"'");
  // It ate the ']' too: the quote is the cause, not the '['.
  CHECK(err("name: j\ncommand: ['a b]\nhosts: [h]\n") ==
        "job.yaml:2:11: this \"'\" is never closed: end the value with another \"'\" "
        "(yaml-cpp noticed it at 4:1)");
  // Closed quotes (escaped, doubled, over two lines, in a comment) are fine.
  CHECK(err("a: \"x\\\"y\"\nb: 'it''s'\nc: \"one\n  two\"\n# \"not a value\nd: it's\n") == "");
}

TEST_CASE("yaml syntax: key:value with no space is named at its ':'") {
  CHECK(err("name: j\ncommand:[x]\nhosts: [h]\n") ==
        "job.yaml:2:8: no space after this ':': YAML reads 'command:[x]' as one word, not a key "
        "and its value; write 'command: [x]' (yaml-cpp noticed it at 3:6)");
  CHECK(err("name:j\ncommand: [x]\n") ==
        "job.yaml:1:5: no space after this ':': YAML reads 'name:j' as one word, not a key and "
        "its value; write 'name: j' (yaml-cpp noticed it at 2:8)");
  // Where it parses (a value that should be a mapping, a key of a flow mapping), the reader says.
  const YamlReader r("job.yaml", "the job");
  auto doc = r.load("timeouts:\n  grace:5\nhosts: [{name:h1}]\n");
  REQUIRE(doc.ok());
  auto top = r.mapping(YamlReader::root(*doc), {"timeouts", "hosts"});
  REQUIRE(top.ok());
  CHECK(r.mapping((*top)[0], {"grace"}).error().message ==
        "job.yaml:2:3: 'timeouts': expected a mapping (key: value lines), got a single value; "
        "'grace:5' has no space after ':' (write 'grace: 5')");
  auto host = r.list((*top)[1], "a list");
  REQUIRE(host.ok());
  CHECK(r.mapping((*host)[0], {"name", "ssh"}).error().message ==
        "job.yaml:3:10: unknown key 'name:h1' in 'hosts[0]'; 'name:h1' has no space after ':' "
        "(write 'name: h1')");
  // Not it: a lab name after a key, a URL.
  CHECK(err("cluster: lab:\nx: 1\n").find("no space") == std::string::npos);
  CHECK(missing_space_hint("http://x") == "");
  CHECK(missing_space_hint("lab:x") == "; 'lab:x' has no space after ':' (write 'lab: x')");
}

TEST_CASE("yaml syntax: a list item with no space after '-' is named at its '-'") {
  // It was yaml-cpp's "end of map not found: check the indentation", which it is not.
  CHECK(err("hosts:\n  - name: h1\n  -name: h3\n") ==
        "job.yaml:3:3: a list item needs a space after '-': YAML does not read '-name: h3' as "
        "an entry of the list; write '- name: h3'");
  CHECK(err("hosts:\n  -name: h1\n  - name: h3\n") ==
        "job.yaml:2:3: a list item needs a space after '-': YAML does not read '-name: h1' as "
        "an entry of the list; write '- name: h1' (yaml-cpp noticed it at 3:3)");
  // Not it: a negative number, a document marker.
  CHECK(err("a: -1\nb: [\n").find("after '-'") == std::string::npos);
  CHECK(err("---\nhosts:\n  - name: h1\n").empty());
}

TEST_CASE("yaml syntax: CRLF, a byte order mark, JSON and an empty file load") {
  const YamlReader r("job.yaml", "the job");
  auto crlf = r.load("name: j\r\ncommand: [x, y]\r\nenv:\r\n  A: 1\r\n");
  REQUIRE(crlf.ok());
  CHECK((*crlf)["name"].Scalar() == "j");  // no '\r' kept
  CHECK((*crlf)["env"]["A"].Scalar() == "1");
  auto bom = r.load("\xEF\xBB\xBFname: j\ncommand: [x]\n");
  REQUIRE(bom.ok());
  CHECK((*bom)["name"].Scalar() == "j");
  // With a byte order mark, columns on line 1 still count from its first character.
  CHECK(err("\xEF\xBB\xBFname: \"j\ncommand: [x]\n") ==
        "job.yaml:1:7: this '\"' is never closed: end the value with another '\"'");
  CHECK(err("name: j\r\ntimeouts:\r\n\tgrace: 5\r\n")
            .starts_with("job.yaml:3:1: a tab in the indentation"));
  auto json = r.load("{\"name\": \"j\", \"command\": [\"x\"], \"hosts\": [\"h\"]}");
  REQUIRE(json.ok());
  CHECK((*json)["command"][0].Scalar() == "x");
  auto empty = r.load("");
  REQUIRE(empty.ok());
  CHECK(empty->IsNull());
  auto comments = r.load("# nothing yet\n\n");
  REQUIRE(comments.ok());
  CHECK(comments->IsNull());
}

}  // namespace
}  // namespace cc::util
