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
