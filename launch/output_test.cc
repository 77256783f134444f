#include "launch/output.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

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

TEST_CASE("output: a line without end is passed on in pieces, the log keeps its bytes") {
  // A rank printing 100 MB without a newline was held whole (its size in memory, twice).
  auto dir = std::filesystem::temp_directory_path() / ("cc-output-test-" + random_hex(4));
  std::FILE* out = std::tmpfile();
  OutputOptions o;
  o.out = out;
  o.err = nullptr;
  auto mux = OutputMux::open(dir, {"h1"}, o);
  REQUIRE(mux.ok());
  const std::string chunk(10'000, 'x');
  for (int i = 0; i < 20; ++i) (*mux)->feed(0, 1, chunk);  // 200 000 bytes, no newline
  // Three whole pieces are out before the line ends; the rest (3 392 bytes) is held.
  std::string shown = slurp(out);
  CHECK(shown == "[0 h1] " + std::string(kMaxLinePiece, 'x') + "\n[0 h1] " +
                     std::string(kMaxLinePiece, 'x') + "\n[0 h1] " +
                     std::string(kMaxLinePiece, 'x') + "\n");
  // A UTF-8 character across the cut is not split: "é" (2 bytes) ends at byte 65 537.
  (*mux)->feed(0, 1, "LAST\n");
  (*mux)->feed(0, 1, std::string(kMaxLinePiece - 1, 'y') + "\xc3\xa9" + "z");
  (*mux)->feed(0, 1, "\n");
  mux->reset();
  shown = slurp(out);
  CHECK(shown.ends_with("[0 h1] " + std::string(200'000 - 3 * kMaxLinePiece, 'x') +
                        "LAST\n[0 h1] " + std::string(kMaxLinePiece - 1, 'y') + "\n[0 h1] " +
                        "\xc3\xa9z\n"));
  CHECK(*cc::util::read_file(dir / "rank-0.out") ==
        std::string(200'000, 'x') + "LAST\n" + std::string(kMaxLinePiece - 1, 'y') + "\xc3\xa9z\n");
  std::fclose(out);
  std::filesystem::remove_all(dir);
}

TEST_CASE("output: no piece of a long line is longer than 64 KiB, whatever the reads' sizes") {
  // A line begun in one read and ended by a later one was shown whole when it came in under
  // 64 KiB and the read that ended it took it over: pieces of 65 536 to 82 496 bytes.
  auto dir = std::filesystem::temp_directory_path() / ("cc-output-test-" + random_hex(4));
  std::FILE* out = std::tmpfile();
  OutputOptions o;
  o.out = out;
  o.err = nullptr;
  o.prefix = false;
  auto mux = OutputMux::open(dir, {"h1"}, o);
  REQUIRE(mux.ok());
  (*mux)->feed(0, 1, std::string(60'000, 'a'));
  (*mux)->feed(0, 1, std::string(16'960, 'b') + "\nnext\n");  // the line: 76 960 bytes
  mux->reset();
  CHECK(slurp(out) == std::string(60'000, 'a') + std::string(kMaxLinePiece - 60'000, 'b') + "\n" +
                          std::string(76'960 - kMaxLinePiece, 'b') + "\nnext\n");
  CHECK(*cc::util::read_file(dir / "rank-0.out") ==
        std::string(60'000, 'a') + std::string(16'960, 'b') + "\nnext\n");
  std::fclose(out);
  std::filesystem::remove_all(dir);

  // The same for any split of the bytes: every piece at most kMaxLinePiece, and the pieces and
  // lines together are the bytes fed.
  const std::string text = std::string(70'000, 'c') + "\n" + std::string(200'000, 'd') + "\nend";
  for (size_t step :
       {size_t{1000}, size_t{16'384}, size_t{65'535}, size_t{65'537}, size_t{100'000}}) {
    LineCutter cut;
    std::string joined;
    size_t longest = 0;
    const LineCutter::Sink sink = [&](std::string_view piece, bool ends_line) {
      longest = std::max(longest, piece.size());
      joined.append(piece);
      if (ends_line) joined += '\n';
    };
    for (size_t at = 0; at < text.size(); at += step) {
      cut.feed(std::string_view(text).substr(at, step), sink);
    }
    cut.finish(sink);
    CAPTURE(step);
    CHECK(longest == kMaxLinePiece);
    CHECK(joined == text + "\n");
  }
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

TEST_CASE("output: a marker line of clusterctl's in every rank log, between two attempts") {
  // restart: on-failure: the attempts share the logs; rank-0.out read "attempt\nattempt".
  auto dir = std::filesystem::temp_directory_path() / ("cc-output-test-" + random_hex(4));
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  OutputOptions o;
  o.out = out;
  o.err = err;
  auto mux = OutputMux::open(dir, {"h1", "h2"}, o);
  REQUIRE(mux.ok());
  (*mux)->mark_logs("--- clusterctl: attempt 1 of 2 ---");
  (*mux)->feed(0, 1, "attempt\n");
  (*mux)->feed(0, 2, "boom\nhalf a line");
  CHECK((*mux)->last_error_line(0) == "boom");
  (*mux)->mark_logs("--- clusterctl: attempt 2 of 2 ---");
  // The next attempt is judged by its own lines: the last one's error is not its.
  CHECK((*mux)->last_error_line(0).empty());
  (*mux)->feed(0, 1, "attempt\n");
  mux->reset();
  CHECK(*cc::util::read_file(dir / "rank-0.out") ==
        "--- clusterctl: attempt 1 of 2 ---\nattempt\n--- clusterctl: attempt 2 of 2 ---\n"
        "attempt\n");
  CHECK(*cc::util::read_file(dir / "rank-0.err") ==
        "--- clusterctl: attempt 1 of 2 ---\nboom\nhalf a line\n"
        "--- clusterctl: attempt 2 of 2 ---\n");
  CHECK(*cc::util::read_file(dir / "rank-1.out") ==
        "--- clusterctl: attempt 1 of 2 ---\n--- clusterctl: attempt 2 of 2 ---\n");
  // Not on the terminal: the restart note says it there.
  CHECK(slurp(out) == "[0 h1] attempt\n[0 h1] attempt\n");
  CHECK(slurp(err) == "[0 h1] boom\n[0 h1] half a line\n");
  std::fclose(out);
  std::fclose(err);
  std::filesystem::remove_all(dir);
}
