// A private temporary directory for a test (unit and integration tests alike): made with
// mkdtemp(3), so mode 0700, this user's and unique per process (ctest runs each test case as its
// own process, all at once), and removed with everything in it when the test ends.
#pragma once

#include <cstdlib>  // mkdtemp (POSIX)

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include <doctest/doctest.h>

namespace cc::test {

struct TempDir {
  /// `prefix` names the directory under the system's temporary directory ("cc-lock-test" makes
  /// /tmp/cc-lock-test-XXXXXX), so a directory a test leaves (a crash) says whose it is.
  explicit TempDir(std::string_view prefix = "cc-test") {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::filesystem::path path;
};

}  // namespace cc::test
