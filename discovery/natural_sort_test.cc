#include "discovery/natural_sort.h"

#include <string>
#include <vector>

#include <doctest/doctest.h>

using cc::discovery::natural_less;
using cc::discovery::natural_sort;

TEST_CASE("natural sort: digit runs compare by value (en2 < en10)") {
  CHECK(natural_less("en2", "en10"));
  CHECK_FALSE(natural_less("en10", "en2"));
  CHECK(natural_less("en9", "en10"));
  CHECK(natural_less("rdma_en9", "rdma_en10"));
  CHECK(natural_less("bridge0", "en0"));
  CHECK(natural_less("en", "en0"));
  CHECK_FALSE(natural_less("en2", "en2"));
  CHECK(natural_less("en1", "en01"));  // strict: equal values, fewer zeros first
  CHECK_FALSE(natural_less("en01", "en1"));
  CHECK(natural_less("", "a"));
  CHECK_FALSE(natural_less("", ""));
  CHECK(natural_less("en99999999999999999999998", "en99999999999999999999999"));  // no overflow
}

TEST_CASE("natural sort: a list of Mac Studio interfaces") {
  std::vector<std::string> v{"en10", "en2", "bridge0", "en11", "en1", "en3", "en0"};
  natural_sort(v);
  CHECK(v == std::vector<std::string>{"bridge0", "en0", "en1", "en2", "en3", "en10", "en11"});
}
