// Test-only: reads recorded outputs from tests/data/fixtures (CLUSTERCTL_TEST_DATA is a compile
// definition of the unit-test binary). Included by discovery/*_test.cc only.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

namespace cc::discovery::testing {

/// The bytes of tests/data/fixtures/REL ("macos/pair-b.ibv_devinfo.txt"); fails the test
/// case when the file cannot be read.
inline std::string fixture(const std::string& rel) {
  std::string path = std::string(CLUSTERCTL_TEST_DATA) + "/fixtures/" + rel;
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read fixture " << path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace cc::discovery::testing
