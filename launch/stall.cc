#include "launch/stall.h"

#include <algorithm>
#include <charconv>

#include "util/text.h"

namespace cc::launch {
namespace {

std::optional<long> number(std::string_view s) {
  long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_cpu_time(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.remove_suffix(1);
  long days = 0;
  if (auto dash = text.find('-'); dash != std::string_view::npos) {
    auto d = number(text.substr(0, dash));
    if (!d) return std::nullopt;
    days = *d;
    text.remove_prefix(dash + 1);
  }
  long centis = 0;
  if (auto dot = text.find('.'); dot != std::string_view::npos) {
    auto frac = text.substr(dot + 1);
    auto c = number(frac);
    if (!c || frac.size() > 2) return std::nullopt;
    centis = frac.size() == 1 ? *c * 10 : *c;
    text = text.substr(0, dot);
  }
  std::vector<long> parts;
  while (true) {
    auto colon = text.find(':');
    auto v = number(text.substr(0, colon));
    if (!v) return std::nullopt;
    parts.push_back(*v);
    if (colon == std::string_view::npos) break;
    text.remove_prefix(colon + 1);
  }
  if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
  long seconds = 0;
  for (long p : parts) seconds = seconds * 60 + p;
  seconds += days * 86400;
  return std::chrono::milliseconds(seconds * 1000 + centis * 10);
}

std::vector<std::string> sample_argv(const std::vector<long>& pids) {
  std::vector<std::string> argv{"sh", "-c",
                                "for p in \"$@\"; do t=$(ps -o stat= -o time= -p \"$p\" "
                                "2>/dev/null) || t=-; echo \"$p $t\"; done",
                                "clusterctl-stall"};
  for (long p : pids) argv.push_back(std::to_string(p));
  return argv;
}

std::vector<ProcessSample> parse_samples(std::string_view text) {
  std::vector<ProcessSample> out;
  for (std::string_view line : util::split_lines(text)) {
    std::vector<std::string_view> f = util::split_words(line);
    if (f.size() != 3) continue;  // "PID -": gone
    auto pid = number(f[0]);
    auto cpu = parse_cpu_time(f[2]);
    if (!pid || !cpu || f[1].empty()) continue;
    out.push_back({*pid, f[1].front() == 'T' || f[1].front() == 't', *cpu, f[1].front() == 'R'});
  }
  return out;
}

std::chrono::milliseconds StallWatch::interval() const {
  auto half = std::chrono::duration_cast<std::chrono::milliseconds>(stall_) / 2;
  return std::clamp(half, std::chrono::milliseconds(2000), std::chrono::milliseconds(10000));
}

bool StallWatch::sample(std::chrono::steady_clock::time_point now, std::chrono::milliseconds cpu,
                        std::chrono::milliseconds silent, bool runnable) {
  if (silent < stall_) warned_ = false;
  bool warn = false;
  // The reference: the newest earlier sample at least kLoadWindow old (the oldest one kept
  // while none is). Older samples are no longer needed.
  size_t ref = 0;
  for (size_t i = 0; i < history_.size(); ++i) {
    if (now - history_[i].at >= kLoadWindow) ref = i;
  }
  history_.erase(history_.begin(), history_.begin() + static_cast<std::ptrdiff_t>(ref));
  if (!history_.empty()) {
    const Look& first = history_.front();
    auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(now - first.at);
    load_ = wall.count() > 0 ? static_cast<double>((cpu - first.cpu).count()) /
                                   static_cast<double>(wall.count())
                             : 0.0;
    always_runnable_ = runnable && std::all_of(history_.begin(), history_.end(),
                                               [](const Look& l) { return l.runnable; });
    const bool busy = load_ >= 0.75 || (always_runnable_ && load_ >= kSharedCoreLoad);
    if (!warned_ && silent >= stall_ && busy) {
      warned_ = true;
      warn = true;
    }
  }
  history_.push_back(Look{now, cpu, runnable});
  return warn;
}

}  // namespace cc::launch
