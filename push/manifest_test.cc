#include "push/manifest.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "push/hash.h"
#include "push/test_files.h"

namespace fs = std::filesystem;
using namespace cc::push;
using namespace cc::push::testing;


TEST_CASE("push: the manifest lists files, directories and links in order, not following links") {
  const fs::path t = scratch("ccpush-manifest");
  fs::create_directories(t / "w" / "sub");
  put(t / "w" / "a b 'q'.bin", "hello");
  put(t / "w" / "sub" / "empty", "");
  fs::create_symlink("/etc", t / "w" / "out");
  const Manifest m = build_manifest({(t / "w").string()}, true);
  REQUIRE(m.errors.empty());
  REQUIRE(m.entries.size() == 5);
  CHECK(m.entries[0].path == "w");
  CHECK(m.entries[0].kind == EntryKind::kDirectory);
  CHECK(m.entries[1].path == "w/a b 'q'.bin");
  CHECK(m.entries[1].size == 5);
  FileDigest d;
  d.update("hello", 5);
  CHECK(m.entries[1].digest == d.hex());
  CHECK(m.entries[2].path == "w/out");
  CHECK(m.entries[2].kind == EntryKind::kSymlink);
  CHECK(m.entries[2].link == "/etc");
  CHECK(m.entries[4].path == "w/sub/empty");
  CHECK(m.file_bytes() == 5);
  CHECK(m.file_count() == 2);
  CHECK(m.local[1] == (t / "w" / "a b 'q'.bin").string());
  const Manifest back = manifest_from_json(to_json(m));
  CHECK(back.entries == m.entries);
  fs::remove_all(t);
}

TEST_CASE("push: every source problem is named, the walk goes on") {
  const fs::path t = scratch("ccpush-manifest-bad");
  fs::create_directories(t / "w");
  REQUIRE(::mkfifo((t / "w" / "pipe").c_str(), 0600) == 0);
  put(t / "w" / "ok", "x");
  fs::create_directories(t / "other");
  put(t / "other" / "ok", "y");
  const Manifest m = build_manifest(
      {(t / "w").string(), (t / "missing").string(), (t / "other" / "ok").string(),
       (t / "w" / "ok").string(), "/"}, false);
  REQUIRE(m.errors.size() == 4);
  CHECK(m.errors[0].find("/w/pipe: a FIFO") != std::string::npos);
  CHECK(m.errors[1].find("missing: No such file or directory") != std::string::npos);
  CHECK(m.errors[2].find("same name 'ok'") != std::string::npos);
  CHECK(m.errors[3].find("names no file") != std::string::npos);
  fs::remove_all(t);
}

TEST_CASE("push: a manifest from the wire with an unsafe path is refused") {
  CHECK(safe_relative_path("a/b"));
  for (const char* bad : {"", "/etc/passwd", "a/../b", "..", "a//b", "./a", "a/"}) {
    CAPTURE(bad);
    CHECK_FALSE(safe_relative_path(bad));
  }
  CHECK_THROWS_AS(manifest_from_json(
                      R"({"errors":[],"entries":[{"path":"../x","kind":"file","mode":420,)"
                      R"("mtime_ns":0,"size":1}]})"),
                  std::invalid_argument);
  CHECK_THROWS_AS(manifest_from_json("{"), std::invalid_argument);
}

TEST_CASE("push: shares send each file a share names to its hosts only, the rest to all") {
  Manifest m;
  auto add = [&](std::string path, EntryKind kind) {
    Entry e;
    e.path = std::move(path);
    e.kind = kind;
    m.entries.push_back(e);
  };
  add("llama", EntryKind::kDirectory);
  add("llama/config.json", EntryKind::kFile);
  add("llama/model-00001-of-00003.safetensors", EntryKind::kFile);
  add("llama/model-00002-of-00003.safetensors", EntryKind::kFile);
  add("llama/model-00003-of-00003.safetensors", EntryKind::kFile);
  add("llama/experts", EntryKind::kDirectory);
  add("llama/experts/e0.bin", EntryKind::kFile);
  add("llama/experts/e1.bin", EntryKind::kFile);
  add("llama/latest", EntryKind::kSymlink);
  const std::vector<Share> shares = {
      {1, "model-0000[12]-*", "s.yaml:2: h2"},       // a name glob
      {2, "llama/model-00003-*", "s.yaml:4: h3"},    // a whole-path glob
      {2, "model-00002-of-00003.safetensors", "s.yaml:5: h3"},  // a file two hosts get
      {3, "llama/experts", "s.yaml:7: h4"},          // a directory: all below it
      {3, "e1.bin", "s.yaml:8: h4"},                 // matches again: named once
  };
  CHECK(apply_shares(m, shares).empty());
  CHECK(m.entries[0].to.empty());  // directories go everywhere
  CHECK(m.entries[1].to.empty());  // common: config.json
  CHECK(m.entries[2].to == std::vector<int>{1});
  CHECK(m.entries[3].to == std::vector<int>{1, 2});
  CHECK(m.entries[4].to == std::vector<int>{2});
  CHECK(m.entries[5].to.empty());
  CHECK(m.entries[6].to == std::vector<int>{3});
  CHECK(m.entries[7].to == std::vector<int>{3});
  CHECK(m.entries[8].to.empty());
  // The shares survive the wire, and so does each entry's target list.
  CHECK(shares_from_json(shares_to_json(shares)) == shares);
  const Manifest back = manifest_from_json(to_json(m));
  REQUIRE(back.entries.size() == m.entries.size());
  CHECK(back.entries[3].to == std::vector<int>{1, 2});
  CHECK(back.entries[1].to.empty());

  // A share that matches nothing is named with where it was written; '*' does not cross '/'.
  const auto problems = apply_shares(m, {{1, "llama/*.bin", "s.yaml:9: h2"}, {2, "nope*", "s.yaml:10: h3"}});
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].find("s.yaml:9: h2: 'llama/*.bin' matches no file") == 0);
  CHECK(problems[1].find("s.yaml:10: h3: 'nope*' matches no file") == 0);
  // Target ranks from the wire are checked.
  CHECK_THROWS_AS(manifest_from_json(R"({"errors":[],"entries":[{"path":"a","kind":"file","mode":420,"mtime_ns":0,"size":1,"to":[0]}]})"),
                  std::invalid_argument);
  CHECK_THROWS_AS(shares_from_json(R"([{"rank":0,"glob":"x","at":"f:1"}])"), std::invalid_argument);
}

TEST_CASE("push: names that are not UTF-8 cross the wire byte for byte, and messages never throw") {
  Manifest m;
  Entry e;
  e.path = "w/caf\xe9 \xff.bin";
  e.size = 3;
  m.entries.push_back(e);
  Entry l;
  l.path = "w/link";
  l.kind = EntryKind::kSymlink;
  l.link = "../\xc3(";
  m.entries.push_back(l);
  m.errors.push_back("w/caf\xe9: cannot read it");
  const std::string text = to_json(m);
  CHECK(text.find("path_hex") != std::string::npos);
  const Manifest back = manifest_from_json(text);
  REQUIRE(back.entries.size() == 2);
  CHECK(back.entries[0].path == e.path);
  CHECK(back.entries[1].link == l.link);
  CHECK(back.errors[0] == "w/caf\xef\xbf\xbd: cannot read it");  // a message: U+FFFD
  CHECK_THROWS_AS(manifest_from_json(R"({"errors":[],"entries":[{"path_hex":"2e2e","kind":"file","mode":420,"mtime_ns":0,"size":1}]})"),
                  std::invalid_argument);  // "..", hex or not, is refused
  CHECK_THROWS_AS(manifest_from_json(R"({"errors":[],"entries":[{"path_hex":"6g","kind":"file","mode":420,"mtime_ns":0,"size":1}]})"),
                  std::invalid_argument);
}
