#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace fs = std::filesystem;

namespace {
fs::path temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "cc-atomic-XXXXXX").string();
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}
}  // namespace

TEST_CASE("write_file_atomic writes, replaces, sets the mode and leaves no temporary file") {
  fs::path dir = temp_dir();
  fs::path p = dir / "sub" / "state.json";
  REQUIRE(cc::util::write_file_atomic(p, "first", 0600).ok());
  REQUIRE(cc::util::write_file_atomic(p, "second\n", 0600).ok());
  auto text = cc::util::read_file(p);
  REQUIRE(text.ok());
  CHECK(*text == "second\n");
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  int entries = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(p.parent_path())) ++entries;
  CHECK(entries == 1);
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomic: a name of 255 bytes is written (its temporary's name fits too)") {
  // ".NAME.tmp.XXXXXX" for a 255-byte NAME is 267 bytes: mkstemp failed (ENAMETOOLONG) and the
  // write was refused, for a name the file system takes.
  fs::path dir = temp_dir();
  for (const std::string& name :
       {std::string(255, 'n'), std::string(250, 'n'), [] {
          std::string s;
          for (int i = 0; i < 85; ++i) s += "\xe2\x82\xac";  // "€", 255 bytes: cut whole
          return s;
        }()}) {
    CAPTURE(name.size());
    REQUIRE(cc::util::write_file_atomic(dir / name, "x\n").ok());
    std::ifstream in(dir / name);
    std::string got;
    std::getline(in, got);
    CHECK(got == "x");
  }
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  CHECK(entries == 3);  // no temporary left
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomic: a TempNaming names the temporary and hears of it") {
  fs::path dir = temp_dir();
  REQUIRE(cc::util::write_file_atomic(dir / "real", "old").ok());
  fs::create_symlink(dir / "real", dir / "link");
  std::vector<std::string> seen;
  cc::util::TempNaming n;
  n.name = [&](const std::string& name) {
    seen.push_back("name " + name);
    return name + ".mine";
  };
  n.created = [&](const fs::path& tmp, const fs::path& target) {
    seen.push_back("created " + tmp.filename().string() + " for " + target.filename().string());
    CHECK(fs::is_regular_file(tmp));
  };
  // Through a link, the temporary is the target's.
  REQUIRE(cc::util::write_file_atomic(dir / "link", "new", 0600, n).ok());
  CHECK(seen == std::vector<std::string>{"name real", "created real.mine for real"});
  CHECK_FALSE(fs::exists(dir / "real.mine"));
  std::ifstream in(dir / "real");
  std::string got;
  std::getline(in, got);
  CHECK(got == "new");
  // Its name taken already (O_EXCL): refused, what is there untouched, never followed.
  fs::create_symlink(dir / "elsewhere", dir / "new.mine");
  auto st = cc::util::write_file_atomic(dir / "new", "x", 0600, n);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find((dir / "new").string()) != std::string::npos);
  CHECK(fs::is_symlink(dir / "new.mine"));
  CHECK_FALSE(fs::exists(dir / "elsewhere"));
  CHECK_FALSE(fs::exists(dir / "new"));
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomic into an unwritable place names the path") {
  auto st = cc::util::write_file_atomic("/proc/clusterctl-test/x", "data");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find("/proc/clusterctl-test") != std::string::npos);
  CHECK(st.error().code == cc::util::ExitCode::kUsage);
}

TEST_CASE("read_file of a missing file names it") {
  auto r = cc::util::read_file("/nonexistent/clusterctl.yaml");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("/nonexistent/clusterctl.yaml") != std::string::npos);
}

TEST_CASE("read_file of a missing file names the file of a close name beside it") {
  // Every file clusterctl reads (hostfile, inventory, --state, a job from templates/) says so.
  const fs::path dir = temp_dir();
  REQUIRE(cc::util::write_file_atomic(dir / "hosts.json", "[]", 0600).ok());
  auto r = cc::util::read_file(dir / "hosts.jsn");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == cc::util::ExitCode::kUsage);
  CHECK(r.error().message == (dir / "hosts.jsn").string() +
                                 ": cannot read: No such file or directory (did you mean '" +
                                 (dir / "hosts.json").string() + "'?)");
  auto far = cc::util::read_file(dir / "inventory.yaml");
  REQUIRE_FALSE(far.ok());
  CHECK(far.error().message ==
        (dir / "inventory.yaml").string() + ": cannot read: No such file or directory");
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomic never replaces a device or a FIFO: it writes through them") {
  // /dev/null stays the character device it is (a rename over it would break the machine).
  REQUIRE(cc::util::write_file_atomic("/dev/null", "data\n").ok());
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));

  fs::path dir = temp_dir();
  const fs::path fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // No reader: refused at once, not waited on.
  auto no_reader = cc::util::write_file_atomic(fifo, "x");
  REQUIRE_FALSE(no_reader.ok());
  CHECK(no_reader.error().message.find("FIFO with no reader") != std::string::npos);
  // With a reader: written through, and the FIFO is still a FIFO.
  int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(rd >= 0);
  REQUIRE(cc::util::write_file_atomic(fifo, "through\n").ok());
  char buf[32] = {};
  CHECK(::read(rd, buf, sizeof buf) == 8);
  CHECK(std::string(buf) == "through\n");
  ::close(rd);
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomic follows a link to its target and refuses a dangling one") {
  fs::path dir = temp_dir();
  REQUIRE(cc::util::write_file_atomic(dir / "real", "old").ok());
  fs::create_symlink("real", dir / "link");
  REQUIRE(cc::util::write_file_atomic(dir / "link", "new").ok());
  CHECK(fs::is_symlink(dir / "link"));  // the link stays a link...
  CHECK(*cc::util::read_file(dir / "real") == "new");  // ...and its target has the content
  fs::create_symlink(dir / "missing", dir / "dangling");
  auto st = cc::util::write_file_atomic(dir / "dangling", "x");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find("symbolic link to a missing file") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "missing"));
  // A directory is refused, not renamed over.
  fs::create_directories(dir / "sub");
  auto d = cc::util::write_file_atomic(dir / "sub", "x");
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().message.find("is a directory") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("read_file takes only regular files below the cap: no hang, no huge allocation") {
  fs::path dir = temp_dir();
  const fs::path fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto f = cc::util::read_file(fifo);  // would block forever if opened blocking
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().message.find("is a FIFO, not a regular file") != std::string::npos);
  auto z = cc::util::read_file("/dev/zero");
  REQUIRE_FALSE(z.ok());
  CHECK(z.error().message.find("/dev/zero: is a character device") != std::string::npos);
  auto d = cc::util::read_file(dir);
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().message.find("is a directory") != std::string::npos);
  // 100 MB (sparse: no disk used) against the 64 MiB cap.
  const fs::path big = dir / "big.json";
  { std::ofstream(big.string()).put('{'); }
  fs::resize_file(big, 100'000'000);
  auto b = cc::util::read_file(big);
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().code == cc::util::ExitCode::kUsage);
  CHECK(b.error().message.find("is 100000000 bytes, more than the 67108864 bytes") !=
        std::string::npos);
  CHECK(cc::util::read_file(big, 200'000'000).ok());  // a caller may allow more
  fs::remove_all(dir);
}

TEST_CASE("create_new_file creates only what does not exist, and follows no link") {
  fs::path dir = temp_dir();
  {
    auto fd = cc::util::create_new_file(dir / "log", 0600);
    REQUIRE(fd.ok());
    CHECK(::write(fd->get(), "a", 1) == 1);
  }
  auto again = cc::util::create_new_file(dir / "log");
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().message.find("already exists") != std::string::npos);
  CHECK(*cc::util::read_file(dir / "log") == "a");  // not truncated
  fs::create_symlink(dir / "elsewhere", dir / "dangling");
  REQUIRE_FALSE(cc::util::create_new_file(dir / "dangling").ok());
  CHECK_FALSE(fs::exists(dir / "elsewhere"));  // a dangling link does not create its target
  fs::remove_all(dir);
}

TEST_CASE("ensure_private_dir creates 0700 and refuses a directory others can write or own") {
  fs::path home = temp_dir();
  const fs::path state = home / ".local/state/clusterctl/jobs";
  REQUIRE(cc::util::ensure_private_dir(state, home).ok());
  struct stat st {};
  REQUIRE(::stat(state.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(::stat((home / ".local").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(cc::util::ensure_private_dir(state, home).ok());  // again: fine

  ::chmod((home / ".local/state").c_str(), 0777);  // a parent under $HOME open to everyone
  auto open = cc::util::ensure_private_dir(state, home);
  REQUIRE_FALSE(open.ok());
  CHECK(open.error().message.find((home / ".local/state").string() + ": owned by uid") !=
        std::string::npos);
  CHECK(open.error().message.find("mode 0777") != std::string::npos);
  ::chmod((home / ".local/state").c_str(), 0700);
  if (::geteuid() == 0) {
    REQUIRE(::chown(state.c_str(), 65534, 65534) == 0);  // another user's
    auto foreign = cc::util::ensure_private_dir(state, home);
    REQUIRE_FALSE(foreign.ok());
    CHECK(foreign.error().message.find("owned by uid 65534") != std::string::npos);
  } else {
    MESSAGE("skipped the foreign-owner case: needs root to chown");
  }
  fs::remove_all(home);
}

TEST_CASE("random_hex gives fresh digits of the asked length") {
  const std::string a = cc::util::random_hex(8), b = cc::util::random_hex(8);
  CHECK(a.size() == 16);
  CHECK(a.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(a != b);
}

TEST_CASE("write_output_file never creates a directory: a typo in -o is refused, naming it") {
  const fs::path dir = temp_dir();
  const fs::path typo = dir / "no-such-dir" / "deeper" / "hostfile";
  const auto checked = cc::util::check_output_path(typo);
  REQUIRE_FALSE(checked.ok());
  CHECK(checked.error().code == cc::util::ExitCode::kUsage);
  CHECK(checked.error().message ==
        typo.string() + ": the directory " + typo.parent_path().string() +
            " does not exist: check the path for a typo, or create it first (mkdir -p " +
            typo.parent_path().string() + ")");
  CHECK_FALSE(cc::util::write_output_file(typo, "x").ok());
  CHECK_FALSE(fs::exists(dir / "no-such-dir"));  // nothing was created
  // What the writer refuses is refused before any work: a directory, a dangling link.
  const auto d = cc::util::check_output_path(dir);
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().message == dir.string() + ": is a directory: refusing to write there; give "
                                            "the path of a file");
  fs::create_symlink(dir / "missing", dir / "dangling");
  CHECK_FALSE(cc::util::check_output_path(dir / "dangling").ok());
  // A file whose directory is a regular file.
  REQUIRE(cc::util::write_file_atomic(dir / "plain", "x").ok());
  const auto f = cc::util::check_output_path(dir / "plain" / "out");
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().message == (dir / "plain" / "out").string() + ": " + (dir / "plain").string() +
                                 " is a regular file, not a directory");
  // Good outputs: a new file in an existing directory, an existing file, a device.
  CHECK(cc::util::check_output_path(dir / "new.json").ok());
  CHECK(cc::util::check_output_path(dir / "plain").ok());
  CHECK(cc::util::check_output_path("/dev/null").ok());
  REQUIRE(cc::util::write_output_file(dir / "new.json", "{}\n").ok());
  CHECK(*cc::util::read_file(dir / "new.json") == "{}\n");
  fs::remove_all(dir);
}

TEST_CASE("check_output_path with OwnOutput: only the command's own kind of file is replaced") {
  const fs::path dir = temp_dir();
  const cc::util::OwnOutput state{"a cluster state (what `discover -o` writes)",
                                  [](std::string_view t) { return t.starts_with("{\"schema\""); }};
  REQUIRE(cc::util::write_file_atomic(dir / "job.yaml", "name: j\ncommand: [true]\n").ok());
  const auto refused = cc::util::check_output_path(dir / "job.yaml", {}, state, false);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == cc::util::ExitCode::kUsage);
  CHECK(refused.error().message ==
        (dir / "job.yaml").string() +
            ": exists and is not a cluster state (what `discover -o` writes): nothing was "
            "written: give another path, or add --force to replace it");
  // --force, a file of its own kind, an empty one, a new one, a link to its own kind, a device.
  CHECK(cc::util::check_output_path(dir / "job.yaml", {}, state, true).ok());
  REQUIRE(cc::util::write_file_atomic(dir / "c.json", "{\"schema\": 1}").ok());
  CHECK(cc::util::check_output_path(dir / "c.json", {}, state, false).ok());
  REQUIRE(cc::util::write_file_atomic(dir / "empty", "").ok());
  CHECK(cc::util::check_output_path(dir / "empty", {}, state, false).ok());
  CHECK(cc::util::check_output_path(dir / "new.json", {}, state, false).ok());
  fs::create_symlink(dir / "c.json", dir / "link.json");
  CHECK(cc::util::check_output_path(dir / "link.json", {}, state, false).ok());
  fs::create_symlink(dir / "job.yaml", dir / "link.yaml");
  CHECK_FALSE(cc::util::check_output_path(dir / "link.yaml", {}, state, false).ok());
  CHECK(cc::util::check_output_path("/dev/null", {}, state, false).ok());
  // check_output_path's own refusals come first, --force or not.
  CHECK(cc::util::check_output_path(dir, {}, state, true).error().message ==
        dir.string() + ": is a directory: refusing to write there; give the path of a file");
  fs::remove_all(dir);
}

TEST_CASE("check_output_path: a directory that cannot take a new file is said before any work") {
  // root may write anywhere access(2) is asked about, yet not in /sys: the check tries. A
  // Linux-only place; elsewhere the case has nothing to try.
  if (!fs::is_directory("/sys/kernel")) return;
  const std::string want =
      "/sys/clusterctl-test.json: cannot create a file in its directory /sys: Permission "
      "denied; nothing was written: give a path in a directory you can write";
  const auto checked = cc::util::check_output_path("/sys/clusterctl-test.json");
  REQUIRE_FALSE(checked.ok());
  CHECK(checked.error().code == cc::util::ExitCode::kUsage);
  CHECK(checked.error().message == want);
  // The writer says the same whole sentence (it stopped at "a temporary file beside").
  const auto written = cc::util::write_file_atomic("/sys/clusterctl-test.json", "{}");
  REQUIRE_FALSE(written.ok());
  CHECK(written.error().message == want);
}

TEST_CASE("check_output_path refuses an input of the command, however it is spelt") {
  const fs::path dir = temp_dir();
  const fs::path state = dir / "c4.json";
  REQUIRE(cc::util::write_file_atomic(state, "{\"hosts\": []}\n").ok());
  fs::create_symlink(state, dir / "link.json");
  const std::string tail =
      ": writing it would replace what this command reads; nothing was written: give another "
      "output path";
  for (const fs::path& out : {state, dir / "link.json", dir / "." / "c4.json"}) {
    CAPTURE(out);
    const auto st = cc::util::check_output_path(out, {dir / "other.yaml", state});
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == cc::util::ExitCode::kUsage);
    CHECK(st.error().message == out.string() + ": is the same file as the input " +
                                    state.string() + tail);
  }
  CHECK(*cc::util::read_file(state) == "{\"hosts\": []}\n");  // untouched
  // Another file, a new one, and no inputs at all are fine.
  REQUIRE(cc::util::write_file_atomic(dir / "hostfile", "h1\n").ok());
  CHECK(cc::util::check_output_path(dir / "hostfile", {state}).ok());
  CHECK(cc::util::check_output_path(dir / "new.json", {state}).ok());
  CHECK(cc::util::check_output_path(state).ok());
  fs::remove_all(dir);
}

TEST_CASE("check_output_directory: a new or empty directory whose parent exists, never more") {
  const fs::path dir = temp_dir();
  // `collect -o DIR/sub/bundle` with no DIR/sub: refused, naming the missing directory, and
  // nothing is created.
  const fs::path deep = dir / "sub" / "bundle";
  const auto missing = cc::util::check_output_directory(deep);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == cc::util::ExitCode::kUsage);
  CHECK(missing.error().message == deep.string() + ": the directory " + (dir / "sub").string() +
                                       " does not exist: check the path for a typo, or create "
                                       "it first (mkdir -p " + (dir / "sub").string() + ")");
  CHECK_FALSE(fs::exists(dir / "sub"));
  // A trailing slash names the same directory.
  CHECK_FALSE(cc::util::check_output_directory(dir.string() + "/sub/bundle/").ok());
  // Good: a new directory in an existing one, an existing empty one (with or without "/").
  CHECK(cc::util::check_output_directory(dir / "bundle").ok());
  CHECK(cc::util::check_output_directory(dir.string() + "/bundle/").ok());
  fs::create_directory(dir / "empty");
  CHECK(cc::util::check_output_directory(dir / "empty").ok());
  // Refused: not empty; not a directory.
  REQUIRE(cc::util::write_file_atomic(dir / "empty" / "x", "x").ok());
  const auto full = cc::util::check_output_directory(dir / "empty");
  REQUIRE_FALSE(full.ok());
  CHECK(full.error().message == (dir / "empty").string() +
                                    ": exists and is not empty: give a new or empty directory, "
                                    "so that it holds only this run's outputs");
  const auto file = cc::util::check_output_directory(dir / "empty" / "x");
  REQUIRE_FALSE(file.ok());
  CHECK(file.error().message == (dir / "empty" / "x").string() +
                                    ": exists and is a regular file, not a directory: give the "
                                    "path of a new or empty directory");
  fs::remove_all(dir);
}
