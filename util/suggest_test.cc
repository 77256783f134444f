#include "util/suggest.h"

#include <doctest/doctest.h>

using cc::util::closest_match;
using cc::util::did_you_mean;
using cc::util::edit_distance;

TEST_CASE("edit_distance counts insertions, deletions, substitutions and adjacent swaps") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("nmae", "name") == 1);
  CHECK(edit_distance("studoi1", "studio1") == 1);
  CHECK(edit_distance("h1", "h10") == 1);
}

TEST_CASE("closest_match suggests only likely typos") {
  std::vector<std::string> keys = {"name", "ssh", "address"};
  CHECK(closest_match("nmae", keys) == "name");
  CHECK(closest_match("adress", keys) == "address");
  CHECK(closest_match("port", keys) == "");
  CHECK(closest_match("h9", {"h1", "h2", "h3"}) == "h1");  // ties: the first
  CHECK(did_you_mean("hsots", {"hosts"}) == " (did you mean 'hosts'?)");
  CHECK(did_you_mean("zzz", {"hosts"}) == "");
}
