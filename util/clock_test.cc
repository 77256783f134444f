#include "util/clock.h"

#include <doctest/doctest.h>

namespace cc::util {
namespace {

using std::chrono::system_clock;

TEST_CASE("clock: UTC as ISO 8601 and as a compact stamp, whatever the local time zone") {
  // 2026-12-01 18:00:05 UTC is 1796148005 s after the epoch.
  const auto t = system_clock::time_point{} + std::chrono::seconds(1796148005);
  CHECK(utc_iso(t) == "2026-12-01T18:00:05Z");
  CHECK(utc_compact(t) == "20261201-180005");
  CHECK(utc_iso(system_clock::time_point{}) == "1970-01-01T00:00:00Z");
  const std::string now = utc_now_iso();
  CHECK(now.size() == 20);
  CHECK(now.back() == 'Z');
}

TEST_CASE("clock: utc_iso's text reads back as its time, any other text is refused") {
  const auto t = system_clock::time_point{} + std::chrono::seconds(1796148005);
  REQUIRE(parse_utc_iso("2026-12-01T18:00:05Z").has_value());
  CHECK(*parse_utc_iso("2026-12-01T18:00:05Z") == t);
  CHECK(*parse_utc_iso("1970-01-01T00:00:00Z") == system_clock::time_point{});
  CHECK_FALSE(parse_utc_iso("2026-12-01T18:00:05").has_value());
  CHECK_FALSE(parse_utc_iso("2026-12-01 18:00:05Z").has_value());
  CHECK_FALSE(parse_utc_iso("2026-13-01T18:00:05Z").has_value());
  CHECK_FALSE(parse_utc_iso("2026-12-01T18:0x:05Z").has_value());
  CHECK_FALSE(parse_utc_iso("").has_value());
}

TEST_CASE("clock: a fake clock moves only when slept on") {
  FakeClock c;
  const auto t0 = c.now();
  c.sleep_for(std::chrono::milliseconds(1500));
  CHECK(c.now() - t0 == std::chrono::milliseconds(1500));
  CHECK(c.now() - t0 == std::chrono::milliseconds(1500));
}

}  // namespace
}  // namespace cc::util
