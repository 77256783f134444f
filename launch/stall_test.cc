#include "launch/stall.h"

#include <doctest/doctest.h>

using namespace cc::launch;
using namespace std::chrono_literals;

TEST_CASE("stall: ps TIME formats of Linux and macOS") {
  CHECK(parse_cpu_time("00:01:05") == 65000ms);
  CHECK(parse_cpu_time(" 1-02:03:04\n") == (86400 + 2 * 3600 + 3 * 60 + 4) * 1000ms);
  CHECK(parse_cpu_time("0:05.12") == 5120ms);
  CHECK(parse_cpu_time("12:00.5") == 720500ms);
  CHECK_FALSE(parse_cpu_time("-"));
  CHECK_FALSE(parse_cpu_time(""));
  CHECK_FALSE(parse_cpu_time("5"));
  CHECK_FALSE(parse_cpu_time("a:b"));
}

TEST_CASE("stall: ps STAT and TIME samples of Linux and macOS, stopped ranks, gone pids") {
  // Linux procps: "PID STAT TIME" with STAT like Ss, R+, T, t; macOS: "T      0:00.01".
  auto s = parse_samples(
      "101 Ss   00:01:05\n102 T 00:00:00\n103 -\n104 R+ 0:05.12\n"
      "105 t 00:00:01\n106 S\nx T 00:00:01\n107 Rl 1-00:00:00\n");
  REQUIRE(s.size() == 5);
  CHECK(s[0].pid == 101);
  CHECK_FALSE(s[0].stopped);
  CHECK(s[0].cpu == 65000ms);
  CHECK_FALSE(s[0].runnable);
  CHECK(s[1].pid == 102);
  CHECK(s[1].stopped);
  CHECK(s[2].pid == 104);
  CHECK(s[2].cpu == 5120ms);
  CHECK_FALSE(s[2].stopped);
  CHECK(s[2].runnable);  // R+: running (in the foreground)
  CHECK(s[3].pid == 105);
  CHECK(s[3].stopped);  // t: stopped by a tracer (a debugger at a breakpoint)
  CHECK(s[4].pid == 107);
  CHECK(s[4].cpu == 86400000ms);
  CHECK(s[4].runnable);
  CHECK_FALSE(s[1].runnable);
  CHECK(parse_samples("").empty());
  auto argv = sample_argv({7, 8});
  REQUIRE(argv.size() == 6);
  CHECK(argv[0] == "sh");
  CHECK(argv[2].find("ps -o stat= -o time= -p \"$p\"") != std::string::npos);
  CHECK(argv[4] == "7");
  CHECK(argv[5] == "8");
}

TEST_CASE("stall: warns once a silent rank keeps a core busy, again after it spoke") {
  StallWatch w(10s);
  CHECK(w.interval() == 5000ms);
  auto t = std::chrono::steady_clock::time_point{} + 100s;
  CHECK_FALSE(w.sample(t, 0ms, 8s));     // first sample: no rate yet
  CHECK(w.sample(t + 5s, 4900ms, 13s));  // 98% for 5 s, silent 13 s
  CHECK(w.last_load() == doctest::Approx(0.98));
  CHECK_FALSE(w.sample(t + 10s, 9800ms, 18s));  // already warned for this silence
  CHECK_FALSE(w.sample(t + 15s, 14700ms, 1s));  // it printed: a new silent period begins
  CHECK(w.sample(t + 30s, 29000ms, 11s));
}

TEST_CASE("stall: CPU time in whole seconds (Linux ps) is judged over 4 s, not one 2 s interval") {
  StallWatch w(3s);
  CHECK(w.interval() == 2000ms);
  auto t = std::chrono::steady_clock::time_point{} + 100s;
  // A rank busy all the time, as ps rounds it down: 0.9 s shows 0, 2.9 s shows 2, 4.9 s shows 4.
  CHECK_FALSE(w.sample(t, 0ms, 1s));
  CHECK_FALSE(w.sample(t + 2s, 1000ms, 3s));  // 1 s of 2 s: the window is not 4 s yet
  CHECK(w.last_load() == doctest::Approx(0.5));
  CHECK(w.sample(t + 4s, 4000ms, 5s));  // 4 s of 4 s
  CHECK(w.last_load() == doctest::Approx(1.0));
  // A rank using half a core or less draws none.
  StallWatch idle(3s);
  CHECK_FALSE(idle.sample(t, 0ms, 1s));
  CHECK_FALSE(idle.sample(t + 2s, 1000ms, 3s));
  CHECK_FALSE(idle.sample(t + 4s, 2000ms, 5s));
  CHECK_FALSE(idle.sample(t + 6s, 2000ms, 7s));
  CHECK(idle.last_load() == doctest::Approx(0.25));
}

TEST_CASE("stall: an idle silent rank (blocked, 0% CPU) draws no warning") {
  StallWatch w(4s);
  CHECK(w.interval() == 2000ms);
  auto t = std::chrono::steady_clock::time_point{} + 100s;
  CHECK_FALSE(w.sample(t, 100ms, 5s));
  CHECK_FALSE(w.sample(t + 2s, 150ms, 7s));
  CHECK(w.last_load() == doctest::Approx(0.025));
}

TEST_CASE("stall: a silent rank that wants a core at every look warns on a host whose cores are "
          "shared") {
  // A rank spinning on a loaded host (more ranks than cores, a build beside the job, a niced
  // lab) is runnable (STAT R) at every look but gets only its share: 40% here.
  auto t = std::chrono::steady_clock::time_point{} + 100s;
  StallWatch w(3s);
  CHECK_FALSE(w.sample(t, 0ms, 1s, true));
  CHECK_FALSE(w.sample(t + 2s, 1000ms, 2s, true));  // silent 2 s: not yet timeouts.stall
  CHECK(w.last_always_runnable());
  CHECK(w.sample(t + 4s, 1600ms, 5s, true));  // 40% over 4 s, runnable at all 3 looks
  CHECK(w.last_load() == doctest::Approx(0.4));
  CHECK(w.last_always_runnable());
  // Sleeping (STAT S) at one look of the window: it does not always want a core: no warning
  // below 75%.
  StallWatch napper(3s);
  CHECK_FALSE(napper.sample(t, 0ms, 1s, true));
  CHECK_FALSE(napper.sample(t + 2s, 800ms, 2s, false));
  CHECK_FALSE(napper.sample(t + 4s, 1600ms, 5s, true));
  CHECK_FALSE(napper.last_always_runnable());
  // Runnable at every look but next to no CPU (a rank that happened to be woken at each look):
  // under kSharedCoreLoad, no warning.
  StallWatch lucky(3s);
  CHECK_FALSE(lucky.sample(t, 0ms, 1s, true));
  CHECK_FALSE(lucky.sample(t + 2s, 0ms, 2s, true));
  CHECK_FALSE(lucky.sample(t + 4s, 400ms, 5s, true));
  CHECK(lucky.last_load() == doctest::Approx(0.1));
}
