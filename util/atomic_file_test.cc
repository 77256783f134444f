#include "util/atomic_file.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

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
