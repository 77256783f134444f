// Test-only: reads recorded outputs from tests/data/fixtures (CLUSTERCTL_TEST_DATA is a compile
// definition of the unit-test binary). Included by discovery/*_test.cc only.
#pragma once

#include <string>
#include <utility>

#include <doctest/doctest.h>

#include "util/atomic_file.h"

namespace cc::discovery::testing {

/// The bytes of tests/data/fixtures/REL ("macos/pair-b.ibv_devinfo.txt"); fails the test
/// case when the file cannot be read.
inline std::string fixture(const std::string& rel) {
  auto text = util::read_file(std::string(CLUSTERCTL_TEST_DATA) + "/fixtures/" + rel);
  REQUIRE_MESSAGE(text.ok(), (text.ok() ? "" : text.error().message));
  return std::move(*text);
}

}  // namespace cc::discovery::testing
