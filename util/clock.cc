#include "util/clock.h"

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

std::string utc_compact(std::chrono::system_clock::time_point t) {
  const std::tm tm = utc(t);
  return fmt::format("{:04}{:02}{:02}-{:02}{:02}{:02}", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

}  // namespace cc::util
