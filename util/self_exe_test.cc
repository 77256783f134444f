#include "util/self_exe.h"

#include <unistd.h>

#include <doctest/doctest.h>

TEST_CASE("executable_path names this test binary, absolute and resolved") {
  const std::filesystem::path p = cc::util::executable_path();
  REQUIRE_FALSE(p.empty());
  CHECK(p.is_absolute());
  CHECK(p.filename() == "clusterctl_unit_tests");
  CHECK(std::filesystem::is_regular_file(p));
  CHECK(std::filesystem::canonical(p) == p);
  CHECK(::access(p.c_str(), X_OK) == 0);
}
