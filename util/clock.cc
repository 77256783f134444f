#include "util/clock.h"

#include <charconv>
#include <ctime>
#include <thread>

#include <fmt/format.h>

namespace cc::util {
namespace {

std::tm utc(std::chrono::system_clock::time_point t) {
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  return tm;
}

}  // namespace

std::chrono::steady_clock::time_point SteadyClock::now() {
  return std::chrono::steady_clock::now();
}

void SteadyClock::sleep_for(std::chrono::milliseconds d) {
  std::this_thread::sleep_for(d);
}

std::string utc_iso(std::chrono::system_clock::time_point t) {
  const std::tm tm = utc(t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string utc_now_iso() {
  return utc_iso(std::chrono::system_clock::now());
}

std::optional<std::chrono::system_clock::time_point> parse_utc_iso(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SSZ: the digits at these offsets, the separators between them.
  if (text.size() != 20 || text[4] != '-' || text[7] != '-' || text[10] != 'T' ||
      text[13] != ':' || text[16] != ':' || text[19] != 'Z') {
    return std::nullopt;
  }
  auto field = [&](std::size_t at, std::size_t len) -> std::optional<int> {
    int v = 0;
    const char* end = text.data() + at + len;
    auto [ptr, ec] = std::from_chars(text.data() + at, end, v);
    if (ec != std::errc() || ptr != end || text[at] == '-' || text[at] == '+') return std::nullopt;
    return v;
  };
  const auto year = field(0, 4), month = field(5, 2), day = field(8, 2), hour = field(11, 2),
             minute = field(14, 2), second = field(17, 2);
  if (!year || !month || !day || !hour || !minute || !second || *month < 1 || *month > 12 ||
      *day < 1 || *day > 31 || *hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  const std::time_t s = timegm(&tm);  // UTC; glibc and macOS both have it
  return std::chrono::system_clock::from_time_t(s);
}

std::string utc_compact(std::chrono::system_clock::time_point t) {
  const std::tm tm = utc(t);
  return fmt::format("{:04}{:02}{:02}-{:02}{:02}{:02}", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

}  // namespace cc::util
