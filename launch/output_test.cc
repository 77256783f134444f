#include "launch/output.h"

#include <cstdio>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "launch/wrapper.h"
#include "util/atomic_file.h"

using namespace cc::launch;

namespace {
std::string slurp(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[256];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}
}  // namespace

TEST_CASE("output: whole lines, prefixed on the terminal, unprefixed in the logs") {
  auto dir = std::filesystem::temp_directory_path() / ("cc-output-test-" + random_hex(4));
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  OutputOptions o;
  o.out = out;
  o.err = err;
  auto mux = OutputMux::open(dir, {"h1", "h2"}, o);
  REQUIRE(mux.ok());
  (*mux)->feed(0, 1, "hel");
  (*mux)->feed(1, 1, "other\n");
  (*mux)->feed(0, 1, "lo\nwor");
  (*mux)->feed(0, 2, "oops\n");
  (*mux)->finish(0);
  CHECK(slurp(out) == "[1 h2] other\n[0 h1] hello\n[0 h1] wor\n");
  CHECK(slurp(err) == "[0 h1] oops\n");
  mux->reset();
  CHECK(*cc::util::read_file(dir / "rank-0.out") == "hello\nwor\n");
  CHECK(*cc::util::read_file(dir / "rank-0.err") == "oops\n");
  CHECK(*cc::util::read_file(dir / "rank-1.out") == "other\n");
  std::fclose(out);
  std::fclose(err);
  std::filesystem::remove_all(dir);
}

TEST_CASE("output: --no-prefix and --ranks filter only the terminal") {
  auto dir = std::filesystem::temp_directory_path() / ("cc-output-test-" + random_hex(4));
  std::FILE* out = std::tmpfile();
  OutputOptions o;
  o.out = out;
  o.err = nullptr;
  o.prefix = false;
  o.shown = {1};
  auto mux = OutputMux::open(dir, {"h1", "h2"}, o);
  REQUIRE(mux.ok());
  (*mux)->feed(0, 1, "zero\n");
  (*mux)->feed(1, 1, "one\n");
  CHECK(slurp(out) == "one\n");
  mux->reset();
  CHECK(*cc::util::read_file(dir / "rank-0.out") == "zero\n");
  std::fclose(out);
  std::filesystem::remove_all(dir);
}

TEST_CASE("output: the status line is cleared before each line and drawn again after") {
  auto dir = std::filesystem::temp_directory_path() / ("cc-output-test-" + random_hex(4));
  std::FILE* err = std::tmpfile();
  OutputOptions o;
  o.out = err;
  o.err = err;
  o.status_line = true;
  auto mux = OutputMux::open(dir, {"h1"}, o);
  REQUIRE(mux.ok());
  (*mux)->status("1/1 running");
  (*mux)->feed(0, 1, "line\n");
  (*mux)->status("");
  CHECK(slurp(err) == "1/1 running\r\x1b[K[0 h1] line\n1/1 running\r\x1b[K");
  mux->reset();
  std::fclose(err);
  std::filesystem::remove_all(dir);
}
