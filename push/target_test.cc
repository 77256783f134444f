#include "push/target.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "push/hash.h"
#include "push/test_files.h"

namespace fs = std::filesystem;
using namespace cc::push;
using namespace cc::push::testing;

namespace {
Entry file(std::string path, std::string content, std::int64_t mtime = 1'700'000'000'123'456'789) {
  Entry e;
  e.path = std::move(path);
  e.size = content.size();
  e.mode = 0640;
  e.mtime_ns = mtime;
  FileDigest d;
  d.update(content.data(), content.size());
  e.digest = d.hex();
  return e;
}
Entry dir(std::string path) {
  Entry e;
  e.path = std::move(path);
  e.kind = EntryKind::kDirectory;
  e.mode = 0750;
  e.mtime_ns = 1'600'000'000'000'000'000;
  return e;
}
}  // namespace

TEST_CASE("push: a file is written under its part name, verified, then renamed with mode and mtime") {
  const fs::path t = scratch("ccpush-target");
  Manifest m;
  m.entries = {dir("w"), file("w/x y", "payload")};
  DestTree tree((t / "dest" / "new").string());  // missing directories are made
  REQUIRE(tree.ok());
  CHECK(tree.make_directories(m).empty());
  std::string problem;
  const int fd = tree.open_part(m.entries[1], 0, problem);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, "payload", 7) == 7);
  CHECK(fs::exists(t / "dest/new/w" / part_name(m.entries[1])));
  CHECK_FALSE(fs::exists(t / "dest/new/w/x y"));  // nothing under the final name yet
  CHECK(tree.finish_file(m.entries[1], fd, m.entries[1].digest, m.entries[1].digest).empty());
  CHECK(get(t / "dest/new/w/x y") == "payload");
  CHECK_FALSE(fs::exists(t / "dest/new/w" / part_name(m.entries[1])));
  struct stat st {};
  REQUIRE(::stat((t / "dest/new/w/x y").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);
#ifdef __APPLE__
  const struct timespec mt = st.st_mtimespec;
#else
  const struct timespec mt = st.st_mtim;
#endif
  CHECK(mt.tv_sec == 1'700'000'000);
  CHECK(mt.tv_nsec == 123'456'789);
  CHECK(tree.finish_directories(m).empty());
  REQUIRE(::stat((t / "dest/new/w").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0750);

  // Now it is there: the same size and mtime are skipped; a different mtime is sent again.
  TargetPlan p = examine((t / "dest/new").string(), m, false, 4, 1);
  CHECK(p.errors.empty());
  CHECK(p.skipped == 1);
  CHECK(p.files.empty());
  Manifest changed = m;
  changed.entries[1].mtime_ns += 1;
  p = examine((t / "dest/new").string(), changed, false, 4, 1);
  CHECK(p.skipped == 0);
  REQUIRE(p.files.size() == 1);
  CHECK(p.need_bytes == 7);
  // --checksum: the digest decides, not the mtime.
  p = examine((t / "dest/new").string(), changed, true, 4, 1);
  CHECK(p.skipped == 1);
  fs::remove_all(t);
}

TEST_CASE("push: a wrong digest removes the part and leaves the final name alone") {
  const fs::path t = scratch("ccpush-target-digest");
  Manifest m;
  m.entries = {file("f", "good")};
  put(t / "f", "old");
  DestTree tree(t.string());
  std::string problem;
  const int fd = tree.open_part(m.entries[0], 0, problem);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, "bad!", 4) == 4);
  FileDigest d;
  d.update("bad!", 4);
  const std::string msg = tree.finish_file(m.entries[0], fd, d.hex(), m.entries[0].digest);
  CHECK(msg.find("is not the source's") != std::string::npos);
  CHECK(get(t / "f") == "old");
  CHECK_FALSE(fs::exists(t / part_name(m.entries[0])));
  fs::remove_all(t);
}

TEST_CASE("push: a part resumes at its last whole chunk") {
  const fs::path t = scratch("ccpush-target-resume");
  Manifest m;
  m.entries = {file("big", std::string(10, 'z'))};
  put(t / part_name(m.entries[0]), "zzzzzzz");  // 7 bytes of 10 arrived
  TargetPlan p = examine(t.string(), m, false, 4, 1);
  REQUIRE(p.files.size() == 1);
  CHECK(p.files[0].second == 4);
  CHECK(p.need_bytes == 6);
  fs::remove_all(t);
}

TEST_CASE("push: the preflight names what push would not write through or replace") {
  const fs::path t = scratch("ccpush-target-bad");
  fs::create_directories(t / "d" / "isdir");
  fs::create_symlink("/etc", t / "d" / "link");
  REQUIRE(::mkfifo((t / "d" / "fifo").c_str(), 0600) == 0);
  put(t / "d" / "notdir", "x");
  Manifest m;
  m.entries = {file("isdir", "a"), dir("link"), file("link/passwd", "a"), file("fifo", "a"),
               dir("notdir")};
  const TargetPlan p = examine((t / "d").string(), m, false, 4, 1);
  REQUIRE(p.errors.size() == 4);
  CHECK(p.errors[0].find("isdir: a directory, and the source has a file") != std::string::npos);
  CHECK(p.errors[1].find("link: a symbolic link, and the source has a directory") !=
        std::string::npos);
  CHECK(p.errors[2].find("fifo: a special file") != std::string::npos);
  CHECK(p.errors[3].find("notdir: a file, and the source has a directory") != std::string::npos);
  // The writer refuses to go through the link even when asked.
  DestTree tree((t / "d").string());
  std::string problem;
  CHECK(tree.open_part(m.entries[2], 0, problem) < 0);
  CHECK(problem.find("never writes through a link") != std::string::npos);
  CHECK_FALSE(fs::exists("/etc/" + part_name(m.entries[2])));

  const TargetPlan q = examine((t / "d" / "notdir" / "x").string(), m, false, 4, 1);
  REQUIRE(q.errors.size() == 1);
  CHECK(q.errors[0].find("notdir: not a directory") != std::string::npos);
  fs::remove_all(t);
}

TEST_CASE("push: a target looks only at its share, and a second-granular mtime counts as equal") {
  const fs::path t = scratch("ccpush-share");
  Manifest m;
  m.entries = {file("a", "aaaa"), file("b", "bbbb"), file("c", "cccc")};
  m.entries[0].to = {2};
  m.entries[1].to = {1, 3};
  TargetPlan p = examine(t.string(), m, false, 4, 1);
  REQUIRE(p.files.size() == 2);
  CHECK(p.files[0].first == 1);
  CHECK(p.files[1].first == 2);
  CHECK(p.need_bytes == 8);
  CHECK_FALSE(p.identity.empty());
  CHECK(examine(t.string(), m, false, 4, 2).identity == p.identity);  // one place, one identity
  CHECK(examine((t / "other").string(), m, false, 4, 2).identity != p.identity);
  CHECK(goes_to(m.entries[2], 7));
  CHECK_FALSE(goes_to(m.entries[0], 1));

  CHECK(same_mtime(1'700'000'000'123'456'789, 1'700'000'000'123'456'789));
  CHECK(same_mtime(1'700'000'000'000'000'000, 1'700'000'000'123'456'789));  // HFS+: whole seconds
  CHECK_FALSE(same_mtime(1'700'000'001'000'000'000, 1'700'000'000'123'456'789));
  CHECK_FALSE(same_mtime(1'700'000'000'123'000'000, 1'700'000'000'123'456'789));
  CHECK(same_mtime(-1'000'000'000, -500'000'000));  // before 1970: the second below
}

TEST_CASE("push: a changed file's next push removes the parts its earlier versions left") {
  const fs::path t = scratch("ccpush-stale");
  Manifest m;
  m.entries = {file("x", "version one")};
  DestTree tree(t.string());
  REQUIRE(tree.ok());
  std::string problem;
  int fd = tree.open_part(m.entries[0], 0, problem);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, "vers", 4) == 4);
  ::close(fd);
  const std::string old_part = part_name(m.entries[0]);
  put(t / ".ccpush-0000000000000000-0000000000000000.part", "another file's");
  Entry changed = file("x", "version two!", 1'700'000'111'000'000'000);
  CHECK(part_name(changed) != old_part);
  CHECK(part_name(changed).substr(0, 25) == old_part.substr(0, 25));  // same path, other version
  fd = tree.open_part(changed, 0, problem);
  REQUIRE(fd >= 0);
  ::close(fd);
  CHECK_FALSE(fs::exists(t / old_part));
  CHECK(fs::exists(t / part_name(changed)));
  CHECK(fs::exists(t / ".ccpush-0000000000000000-0000000000000000.part"));  // not x's: kept
}

TEST_CASE("push: a read-only source directory does not lock the next push out") {
  const fs::path t = scratch("ccpush-ro");
  Manifest m;
  m.entries = {dir("ro"), file("ro/f", "data")};
  m.entries[0].mode = 0555;
  for (int pass = 0; pass < 2; ++pass) {
    DestTree tree(t.string());
    REQUIRE(tree.ok());
    CHECK(tree.make_directories(m).empty());
    struct stat st {};
    REQUIRE(::stat((t / "ro").c_str(), &st) == 0);
    CHECK((st.st_mode & 0700) == 0700);  // writable while the push runs
    std::string problem;
    const int fd = tree.open_part(m.entries[1], 0, problem);
    REQUIRE_MESSAGE(fd >= 0, problem);
    REQUIRE(::write(fd, "data", 4) == 4);
    CHECK(tree.finish_file(m.entries[1], fd, m.entries[1].digest, m.entries[1].digest).empty());
    CHECK(tree.finish_directories(m).empty());
    REQUIRE(::stat((t / "ro").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0555);  // the source's mode at the end
  }
  fs::permissions(t / "ro", fs::perms::owner_all);
}
