// Time: the interface code that waits uses, so its tests run on a fake clock (no test waits on
// wall time to prove a timeout), and the one way this project writes a UTC time as text.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace cc::util {

/// Monotonic time and sleeping. SteadyClock is the real one; tests use FakeClock.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::steady_clock::time_point now() = 0;
  virtual void sleep_for(std::chrono::milliseconds d) = 0;
};

/// std::chrono::steady_clock and std::this_thread::sleep_for.
class SteadyClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point now() override;
  void sleep_for(std::chrono::milliseconds d) override;
};

/// A clock that moves only when slept on (or advanced): sleep_for(d) returns at once, d later.
/// Safe to read and move from several threads (the runner's sessions read it beside the
/// watcher that sleeps on it).
class FakeClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point now() override {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(t_.load()));
  }
  void sleep_for(std::chrono::milliseconds d) override { advance(d); }
  void advance(std::chrono::milliseconds d) {
    t_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d).count();
  }

 private:
  std::atomic<std::chrono::steady_clock::rep> t_{0};
};

/// `t` in UTC as ISO 8601 to the second: "2026-12-01T18:00:00Z" (the form every record and
/// JSON file of ours holds).
std::string utc_iso(std::chrono::system_clock::time_point t);
/// utc_iso of now.
std::string utc_now_iso();
/// The time utc_iso wrote ("2026-12-01T18:00:05Z", exactly that form); nullopt for any other
/// text (a record that is damaged or of another form).
std::optional<std::chrono::system_clock::time_point> parse_utc_iso(std::string_view text);
/// `t` in UTC for names that sort by time: "20261201-180000" (job ids).
std::string utc_compact(std::chrono::system_clock::time_point t);

}  // namespace cc::util
