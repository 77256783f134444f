// The watcher on a fake clock and a fake backend: every timeout, the grace period and the
// give-up are proven in fake time (no test here waits on wall time). runner_test.cc runs the
// real backends on real processes.
#include "launch/watcher.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "launch/runner.h"
#include "util/interrupt.h"

using namespace cc::launch;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using cc::util::ExitCode;
using ms = std::chrono::milliseconds;

namespace {

// util::FakeClock that also runs the test's events once their time has come: each sleep of the
// watcher moves time on and may start or end ranks.
class ScriptClock final : public cc::util::Clock {
 public:
  std::chrono::steady_clock::time_point now() override { return fake.now(); }
  void sleep_for(ms d) override {
    fake.advance(d);
    for (auto it = events.begin(); it != events.end() && it->first <= elapsed();) {
      auto run = std::move(it->second);
      it = events.erase(it);
      run();
    }
  }
  ms elapsed() { return std::chrono::duration_cast<ms>(fake.now() - t0); }
  void at(ms when, std::function<void()> what) { events.emplace(when, std::move(what)); }

  cc::util::FakeClock fake;
  std::chrono::steady_clock::time_point t0 = fake.now();
  std::multimap<ms, std::function<void()>> events;
};

// Ranks that start when the script says; SIGTERM ends those that obey it, SIGKILL all (unless
// their host is unreachable); every call is recorded with its fake time.
class FakeBackend final : public LaunchBackend {
 public:
  explicit FakeBackend(ScriptClock& clock) : clock_(clock) {}
  void start(RankBoard& board) override { board_ = &board; }
  void terminate(bool rank_failed) override {
    calls.push_back(call("TERM", rank_failed));
    for (int r : obeys_term) end(r, 128 + 15);
  }
  void terminate_again() override { ++terms_again; }
  void kill() override {
    calls.push_back(call("KILL", false));
    if (unreachable) return;
    for (int r = 0; r < board_->world_size(); ++r) end(r, 128 + 9);
  }
  bool samples_ranks() const override { return true; }
  std::vector<std::vector<ProcessSample>> sample(
      const std::vector<std::vector<long>>& pids) override {
    std::vector<std::vector<ProcessSample>> out(pids.size());
    for (size_t h = 0; h < pids.size(); ++h) {
      for (long pid : pids[h]) {
        out[h].push_back({pid, pid == stopped_pid && stopped_samples != 0, 0ms});
      }
    }
    if (stopped_samples > 0) --stopped_samples;
    return out;
  }
  void abandon() override {
    calls.push_back(call("abandon", false));
    for (int r = 0; r < board_->world_size(); ++r) {
      if (!board_->rank(r).finished) board_->finished(r, -1, false, "abandoned", 0ms);
    }
  }
  void join() override {}

  void started(int r) { board_->started(r, 1000 + r); }
  void printed(int r) { board_->output_seen(r); }
  void end(int r, int status, std::string problem = "",
           std::optional<double> exited_at = std::nullopt) {
    if (!board_->rank(r).finished) {
      board_->finished(r, status, status > 128, std::move(problem), 0ms, false, exited_at);
    }
  }

  std::vector<int> obeys_term;
  bool unreachable = false;
  long stopped_pid = 0;
  std::atomic<int> stopped_samples{-1};  // samples that show stopped_pid stopped (-1: all)
  std::vector<std::string> calls;  // "TERM@5020ms rank_failed", "KILL@8020ms"
  int terms_again = 0;

 private:
  std::string call(const char* what, bool rank_failed) {
    return std::string(what) + "@" + std::to_string(clock_.elapsed().count()) + "ms" +
           (rank_failed ? " rank_failed" : "");
  }
  ScriptClock& clock_;
  RankBoard* board_ = nullptr;
};

struct Watch {
  ScriptClock clock;
  FakeBackend backend{clock};
  WorldPlan plan;
  WatchOptions opts;
  fs::path logs = fs::temp_directory_path() / ("cc-watcher-test-" + random_hex(4));
  std::vector<std::string> statuses;
  std::FILE* err = nullptr;        // where notes are shown
  bool job_notes = true;           // OutputOptions::job_notes
  std::vector<std::string> held;   // the job notes kept instead (job_notes false)
  OutputMux* mux = nullptr;        // the ranks' output, while run() runs

  Watch() {
    plan.hosts = {{"h1", "", ""}, {"h2", "", ""}};
    opts.name = "job";
    opts.t0 = clock.now();
    opts.control_timeout = 15s;
    opts.timeouts.grace = 3s;
    opts.status = [this](const std::string& s) { statuses.push_back(s); };
  }
  ~Watch() { fs::remove_all(logs); }
  // Three hosts, a rank each, started at 100 ms, the job notes held (`held`): rank 2, on h3,
  // runs on after ranks 0 and 1 fail (the job is not over) and obeys the teardown's SIGTERM.
  void third_host_runs_on() {
    plan.hosts.push_back({"h3", "", ""});
    job_notes = false;
    backend.obeys_term = {2};
    clock.at(100ms, [this] {
      for (int r = 0; r < 3; ++r) backend.started(r);
    });
  }
  // At `when`, each rank of `fails` prints its error line (if any) and exits with its status,
  // at `exited_at` by its host's clock when given.
  struct Fail {
    int rank;
    int status;
    std::string line;
    std::optional<double> exited_at{};
  };
  void fail_at(ms when, std::vector<Fail> fails) {
    clock.at(when, [this, fails = std::move(fails)] {
      for (const Fail& f : fails) {
        if (!f.line.empty()) mux->feed(f.rank, 2, f.line + "\n");
        backend.end(f.rank, f.status, "", f.exited_at);
      }
    });
  }
  void start_all_at(ms when) {
    clock.at(when, [this] {
      backend.started(0);
      backend.started(1);
    });
  }
  std::pair<WatchResult, std::vector<RankOutcome>> run() {
    OutputOptions o;
    o.out = nullptr;
    o.err = err;
    o.job_notes = job_notes;
    std::vector<std::string> labels;
    for (const auto& h : plan.hosts) labels.push_back(h.name);
    auto opened = OutputMux::open(logs, labels, o);
    REQUIRE(opened.ok());
    RankBoard board(plan, clock);
    mux = opened->get();
    WatchResult w = watch(board, backend, *mux, clock, opts);
    held = mux->held_job_notes();
    mux = nullptr;
    return {w, board.ranks()};
  }
};

}  // namespace

TEST_CASE("watcher: every rank exits 0 -> the job ran to its end, no signal") {
  Watch t;
  t.start_all_at(100ms);
  t.clock.at(2s, [&] {
    t.backend.end(0, 0);
    t.backend.end(1, 0);
  });
  auto [w, ranks] = t.run();
  CHECK(w.code == ExitCode::kOk);
  CHECK(w.reason.empty());
  CHECK(w.startup == 100ms);
  CHECK(t.backend.calls.empty());
  CHECK(t.clock.elapsed() < 2100ms);
  CHECK(t.statuses.front() == "job: 0/2 running, 0 exited, 0 s");
}

TEST_CASE("watcher: timeouts.total names the rank still running after the others exited 0") {
  // horovod#2107: one rank stuck in a collective the others had left; the reason said only
  // "the job ran longer than timeouts.total", the rank was in the table alone.
  Watch t;
  t.opts.name = "smoke";
  t.opts.timeouts.total = 60s;
  t.start_all_at(100ms);
  t.clock.at(1s, [&] { t.backend.end(0, 0); });  // rank 0 done; rank 1 never ends
  auto [w, ranks] = t.run();
  CHECK(w.code == ExitCode::kJobFailed);
  CHECK(w.reason ==
        "the job ran longer than timeouts.total (60 s): rank 1 on h2 still running after 1 of 2 "
        "ranks exited 0 (stuck, e.g. in a collective the others had left: its last lines are "
        "in `clusterctl logs smoke --rank 1`)");
}

TEST_CASE("board: the failure that ended first on its host is the first, not the first reported") {
  WorldPlan plan;
  plan.hosts = {{"h1", "", ""}, {"h2", "", ""}, {"h3", "", ""}};
  cc::util::FakeClock clock;
  RankBoard b(plan, clock);
  b.finished(0, 1, false, "", 0ms, false, 1000.5);  // reported first, ended later
  CHECK(b.first_failed() == 0);
  b.begin_ending();                                   // the watcher saw it: teardown
  b.finished(1, 3, false, "", 0ms, false, 1000.25);  // ended before it
  // Our SIGTERM, on a host whose clock is behind: ours all the same, never the first.
  b.finished(2, 143, true, "", 0ms, false, 1000.1);
  CHECK(b.first_failed() == 1);
  CHECK_FALSE(b.rank(1).ended_by_us);
  CHECK(b.rank(2).ended_by_us);
  CHECK(*b.rank(1).exited_at == doctest::Approx(1000.25));
  // Without the hosts' times (no perl there), the order the reports came in.
  RankBoard c(plan, clock);
  c.finished(0, 1, false, "", 0ms, false, 1000.5);
  c.finished(1, 3, false, "", 0ms);
  CHECK(c.first_failed() == 0);
  // A rank that never started because of Ctrl-C is over, ours, and no failure of its own.
  RankBoard d(plan, clock);
  d.not_started(2, "never started: interrupted (Ctrl-C) while connecting to h3");
  CHECK(d.rank(2).finished);
  CHECK(d.rank(2).ended_by_us);
  CHECK(d.first_failed() == -1);
}

TEST_CASE("board: a host lost before the others failed is the first failure, not a rank that lost it") {
  // h4's management link went down: MLX's ring on h1-h3 failed ("connection to a peer was
  // lost") 17.4 s in, and h4's loss was reported 1.4 s later (its heartbeats unanswered for
  // kHeartbeatTimeout): the summary and `jobs` blamed rank 2 on h3, not the lost host.
  WorldPlan plan;
  plan.hosts = {{"h1", "", ""}, {"h2", "", ""}, {"h3", "", ""}, {"h4", "", ""}};
  cc::util::FakeClock clock;
  RankBoard b(plan, clock);
  b.finished(2, 1, false, "", 0ms);
  CHECK(b.first_failed() == 2);
  b.begin_ending();
  clock.advance(1400ms);
  b.finished(0, 1, false, "", 0ms);
  b.finished(3, -1, false, "connection lost: host h4 lost: Socket error: Connection timed out",
             0ms);
  CHECK(b.first_failed() == 3);
  CHECK_FALSE(b.rank(3).ended_by_us);
  // A loss reported long after the first failure (more than the heartbeat's timeout) came
  // after it: the first failure stays the cause.
  RankBoard c(plan, clock);
  c.finished(2, 1, false, "", 0ms);
  c.begin_ending();
  clock.advance(kHeartbeatTimeout + kLossReportSlack + 1s);
  c.finished(3, -1, false, "connection lost: host h4 lost: timed out", 0ms);
  CHECK(c.first_failed() == 2);
  CHECK(c.rank(3).ended_by_us);
  // A second lost host does not take the cause from the first one.
  RankBoard d(plan, clock);
  d.finished(3, -1, false, "connection lost: host h4 lost: timed out", 0ms);
  d.finished(2, -1, false, "connection lost: host h3 lost: timed out", 0ms);
  CHECK(d.first_failed() == 3);
}

namespace {

// What was written to a tmpfile() the notes went to; closes it.
std::string read_and_close(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[512];
  for (size_t n = 0; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  return text;
}

// The cable watch's answer as the test script sets it (cli/cable_watch.h in a job).
struct CablesDown {
  std::mutex mu;
  std::vector<std::string> down;
  void set(std::vector<std::string> lines) {
    std::lock_guard lock(mu);
    down = std::move(lines);
  }
  void attach(Watch& t) {
    t.opts.cables_down = [this] {
      std::lock_guard lock(mu);
      return down;
    };
  }
};

}  // namespace

TEST_CASE("watcher: a cable down is named at once and ends the job after timeouts.cable") {
  // MLX ranks blocked on a dead socket after `ip link set tb2 down` are idle (no stall
  // warning) and timeouts.total 0 never ended the job: it hung, silent, forever.
  Watch t;
  t.job_notes = false;  // as `clusterctl push`: the cable is named all the same
  std::FILE* err = std::tmpfile();
  REQUIRE(err != nullptr);
  t.err = err;
  t.backend.obeys_term = {0, 1};
  t.opts.timeouts.cable = 20s;
  t.opts.timeouts.total = 300s;  // a bound for the test: without the cable watch it ends here
  const std::string line = "cable h2 tb2 - h3 tb1 is down: h2 tb2: administratively down; fix: x";
  CablesDown cables;
  cables.attach(t);
  t.start_all_at(100ms);
  t.clock.at(5s, [&] { cables.set({line}); });
  auto [w, ranks] = t.run();
  CHECK(w.code == ExitCode::kJobFailed);
  CHECK(w.reason == line + " (down for 20 s, longer than timeouts.cable)");
  CHECK_FALSE(w.rank_failed);
  REQUIRE(t.backend.calls.size() >= 1);
  CHECK(t.backend.calls[0].starts_with("TERM@250"));  // 5 s + 20 s, to the tick
  const std::string text = read_and_close(err);
  CHECK(text == "clusterctl: " + line +
                    " (a cable the ranks use: they are ended if it is still down in 20 s, "
                    "timeouts.cable)\n");
}

TEST_CASE("watcher: a cable back up in time costs the job nothing, and a rank failing on a down "
          "cable is its consequence") {
  Watch t;
  t.job_notes = false;
  t.backend.obeys_term = {0, 1};
  t.opts.timeouts.cable = 20s;
  const std::string line = "cable h1 tb1 - h2 tb1 is down: h2 tb1: no carrier; fix: reseat it";
  CablesDown cables;
  cables.attach(t);
  t.start_all_at(100ms);
  t.clock.at(2s, [&] { cables.set({line}); });
  // The far end's probe came late: the same cable, judged from one end only, is still down.
  t.clock.at(6s, [&] { cables.set({"cable h1 tb1 - h2 tb1 is down: h2 tb1: no carrier"}); });
  t.clock.at(10s, [&] { cables.set({}); });
  t.clock.at(40s, [&] { cables.set({line}); });
  // libclustercomm's timeout (here shorter than timeouts.cable) fails rank 1 first: the
  // summary blamed h2's rank and named no cable.
  t.clock.at(50s, [&] { t.backend.end(1, 1); });
  auto [w, ranks] = t.run();
  CHECK(w.code == ExitCode::kJobFailed);
  CHECK(w.reason == line + " (down for 10 s; rank 1 on h2 failed after it went down: a "
                           "consequence)");
  CHECK_FALSE(w.rank_failed);
  REQUIRE(t.held.size() >= 1);
  CHECK(t.held[0] == "cable h1 tb1 - h2 tb1 is up again after 8 s");
}

TEST_CASE("watcher: timeouts.total names the silent rank when none had ended (a hung rank)") {
  // Rank 1 slept forever: the reason named no rank, and the others' errors in the teardown
  // blamed a rank clusterctl had just ended. Rank 0 prints up to the deadline; rank 1 printed
  // once, early, and uses no CPU. (Rank 0's share is not asserted: on the fake clock the
  // sampler's thread lags the watcher by an unknown span of fake time.)
  Watch t;
  t.opts.name = "hang";
  t.opts.timeouts.total = 60s;
  t.opts.timeouts.stall = 10s;  // a CPU sample every 5 s
  t.start_all_at(100ms);
  t.clock.at(3s, [&] { t.backend.printed(1); });
  for (int s = 1; s < 60; ++s) t.clock.at(ms(s * 1000), [&] { t.backend.printed(0); });
  auto [w, ranks] = t.run();
  CHECK(w.code == ExitCode::kJobFailed);
  CHECK(w.reason.starts_with(
      "the job ran longer than timeouts.total (60 s): still running at the deadline: rank 1 on "
      "h2 (silent for 57 s, 0% CPU), rank 0 on h1 (silent for 1 s, "));
  CHECK(w.reason.ends_with(
      "% CPU); the longest silent first: its last lines are in `clusterctl logs hang --rank 1`"));
}

TEST_CASE("watcher: timeouts.total ends the job: SIGTERM at the limit, SIGKILL a grace later") {
  Watch t;
  t.opts.timeouts.total = 600s;  // ten minutes of fake time, in milliseconds of real time
  t.start_all_at(100ms);
  t.backend.obeys_term = {0};  // rank 1 ignores SIGTERM
  auto [w, ranks] = t.run();
  CHECK(w.code == ExitCode::kJobFailed);
  CHECK(w.reason ==
        "the job ran longer than timeouts.total (600 s): still running at the deadline: rank 0 "
        "on h1 (silent for 600 s, 0% CPU), rank 1 on h2 (silent for 600 s, 0% CPU); the longest "
        "silent first: its last lines are in `clusterctl logs job --rank 0`");
  REQUIRE(t.backend.calls.size() == 2);
  CHECK(t.backend.calls[0] == "TERM@600020ms");  // the first look past the limit
  CHECK(t.backend.calls[1] == "KILL@603020ms");  // grace (3 s) after the SIGTERM
  CHECK(t.backend.terms_again == 2);             // at +1 s and +2 s, for late starters
  CHECK(ranks[0].exit_status == 143);
  CHECK(ranks[0].ended_by_us);
  CHECK(ranks[1].exit_status == 137);
  CHECK(ranks[1].ended_by_us);
}

TEST_CASE("watcher: the SIGKILL after the grace period is said in clusterctl's own line") {
  // The ranks' shells said it ("Killed"), under each rank's prefix, as if the rank had.
  Watch t;
  t.job_notes = false;
  t.opts.timeouts.total = 60s;
  t.start_all_at(100ms);
  t.backend.obeys_term = {0};  // rank 1 ignores SIGTERM
  t.run();
  REQUIRE(t.held.size() == 2);
  CHECK(t.held[1] == "rank 1 on h2 still running after the 3 s grace period: SIGKILL");
  // Every rank obeys SIGTERM: no SIGKILL, nothing said of it.
  Watch u;
  u.job_notes = false;
  u.opts.timeouts.total = 60s;
  u.start_all_at(100ms);
  u.backend.obeys_term = {0, 1};
  u.run();
  CHECK(u.held.size() == 1);
}

TEST_CASE("watcher: timeouts.startup names the rank that was not running") {
  Watch t;
  t.opts.timeouts.startup = 60s;
  t.clock.at(1s, [&] { t.backend.started(0); });  // rank 1 never starts
  auto [w, ranks] = t.run();
  CHECK(w.code == ExitCode::kJobFailed);
  CHECK(w.reason == "rank 1 on h2 was not running after timeouts.startup (60 s)");
  CHECK(w.startup == 0ms);
  REQUIRE(!t.backend.calls.empty());
  CHECK(t.backend.calls[0] == "TERM@60020ms");
}

TEST_CASE("watcher: the first failure ends the job at once, named, the others ended by us") {
  Watch t;
  t.start_all_at(100ms);
  t.backend.obeys_term = {0};
  t.clock.at(5s, [&] { t.backend.end(1, 3); });
  auto [w, ranks] = t.run();
  CHECK(w.code == ExitCode::kJobFailed);
  CHECK(w.reason == "rank 1 on h2 failed (exit 3)");
  REQUIRE(t.backend.calls.size() == 1);  // rank 0 obeyed SIGTERM: no SIGKILL
  CHECK(t.backend.calls[0] == "TERM@5000ms rank_failed");
  CHECK_FALSE(ranks[1].ended_by_us);
  CHECK(ranks[0].ended_by_us);
}

TEST_CASE("watcher: the ending line names the cause the summary names, not the first to fail") {
  // Two launches of one job at once: rank 1 reached the other job's coordinator and failed
  // first; rank 0, which could not listen on the port, failed too before the watcher looked.
  // The line said "rank 1 on h2 failed (exit 1)" while the summary blamed rank 0.
  Watch t;
  t.third_host_runs_on();
  t.fail_at(5s, {{1, 1, "AuthError: rank 1: the coordinator (rank 0) at h1:42503 refused this"},
                 {0, 1, "WorldError: rank 0: cannot listen on h1:42503: in use"}});
  auto [w, ranks] = t.run();
  const std::string cause =
      "rank 0 on h1 failed (exit 1); rank 1 on h2 failed before it (exit 1), but its error "
      "names rank 0: a consequence";
  CHECK(w.reason == cause);
  REQUIRE(t.held.size() == 1);
  CHECK(t.held[0] == cause + ": ending the job (SIGTERM, SIGKILL after 3 s)");
  // The summary's verdict says the same (runner.cc judges it with the same function).
  std::vector<std::string> lines = {"WorldError: rank 0: cannot listen on h1:42503: in use",
                                    "AuthError: rank 1: the coordinator (rank 0) at h1:42503 "
                                    "refused this",
                                    ""};
  const FailureCause f = failure_cause(ranks, 1, lines);
  CHECK(f.reason == cause);
  CHECK(f.cause == 0);
  CHECK(f.consequence == 1);
}

TEST_CASE("watcher: the ending line takes the first failure the summary takes (first_cause)") {
  // mlx-ring: rank 1's sys.exit(3) closed its connections; rank 0, failing on them, was reported
  // first. The summary blamed rank 1 (first_cause), the "ending the job" line rank 0.
  Watch t;
  t.third_host_runs_on();
  t.fail_at(5s, {{0, 1, "[ring] Receiving from socket 3 failed with errno 104"},
                 {1, 3, "ValueError: loss is nan"}});
  auto [w, ranks] = t.run();
  REQUIRE(t.held.size() == 1);
  CHECK(t.held[0] == "rank 1 on h2 failed (exit 3): ending the job (SIGTERM, SIGKILL after 3 s)");
  const FailureCause f = failure_cause(
      ranks, 0, {"[ring] Receiving from socket 3 failed with errno 104", "ValueError: loss is nan",
                 ""});
  CHECK(f.first == 1);
  CHECK(f.cause == 1);
  CHECK(w.reason == f.reason);
}

TEST_CASE("watcher: a failure reported after the ending line but ended before it is said then") {
  // Rank 0's end reached clusterctl first and the line named it; rank 1's came during the
  // teardown, but by the hosts' clocks rank 1 had ended first (RankBoard::finished), and the
  // summary named rank 1: the run's lines and its summary disagreed.
  Watch t;
  t.third_host_runs_on();
  t.fail_at(5s, {{0, 1, "RuntimeError: rank 0: bad shape", 1000.5}});
  t.fail_at(5500ms, {{1, 3, "ValueError: loss is nan", 1000.25}});
  auto [w, ranks] = t.run();
  REQUIRE(t.held.size() == 2);
  CHECK(t.held[0] == "rank 0 on h1 failed (exit 1): ending the job (SIGTERM, SIGKILL after 3 s)");
  CHECK(t.held[1] ==
        "the cause, now that more ranks have reported: rank 1 on h2 failed (exit 3) (not rank 0 "
        "on h1, named above)");
  // The summary's verdict (runner.cc: the board's first failure, now rank 1) says the same.
  const FailureCause f =
      failure_cause(ranks, 1, {"RuntimeError: rank 0: bad shape", "ValueError: loss is nan", ""});
  CHECK(f.cause == 1);
  CHECK(t.held[1].find(": " + f.brief + " (not") != std::string::npos);
  // No note when the cause stays: rank 1 ended after rank 0 by the hosts' clocks.
  Watch u;
  u.third_host_runs_on();
  u.fail_at(5s, {{0, 1, "", 1000.5}});
  u.fail_at(5500ms, {{1, 3, "", 1000.75}});
  u.run();
  CHECK(u.held.size() == 1);
  // The cause that the first failure's error names, reported during the teardown (rank 0,
  // which could not listen, trapped SIGTERM and exited 1 on its own).
  Watch v;
  v.third_host_runs_on();
  v.fail_at(5s, {{1, 1, "AuthError: rank 1: the coordinator (rank 0) at h1:42503 refused this"}});
  v.fail_at(5500ms, {{0, 1, "WorldError: rank 0: cannot listen on h1:42503: in use"}});
  v.run();
  REQUIRE(v.held.size() == 2);
  CHECK(v.held[0] ==
        "rank 1 on h2 failed (exit 1); its error names rank 0 on h1, still running: look there "
        "first: ending the job (SIGTERM, SIGKILL after 3 s)");
  CHECK(v.held[1] ==
        "the cause, now that more ranks have reported: rank 0 on h1 failed (exit 1); rank 1 on h2 "
        "failed before it (exit 1), but its error names rank 0: a consequence (not rank 1 on h2, "
        "named above)");
}

TEST_CASE("watcher: the ending line leaves a long reason to the summary, which prints it once") {
  // A venv missing on every host: its ~400 characters were printed by each rank, in this line
  // and in the summary. The ranks' own lines are the job's output; the summary says it once.
  const std::string venv =
      "command not found: /opt/venv/bin/python: this host has no Python venv at /opt/venv; make "
      "it as README.md, \"Python\", says";
  Watch t;
  t.job_notes = false;
  t.start_all_at(100ms);
  t.backend.obeys_term = {0};
  t.clock.at(5s, [&] { t.backend.end(1, 127, venv); });
  auto [w, ranks] = t.run();
  CHECK(w.reason == "rank 1 on h2 failed (exit 127: " + venv + ")");  // the record's, in full
  REQUIRE(t.held.size() == 1);
  CHECK(t.held[0] ==
        "rank 1 on h2 failed (exit 127: command not found; in full in the summary): ending the "
        "job (SIGTERM, SIGKILL after 3 s)");
  // A short reason is said whole.
  Watch u;
  u.job_notes = false;
  u.start_all_at(100ms);
  u.backend.obeys_term = {0};
  u.clock.at(5s, [&] { u.backend.end(1, 127, "command not found: python3"); });
  u.run();
  REQUIRE(u.held.size() == 1);
  CHECK(u.held[0] ==
        "rank 1 on h2 failed (exit 127: command not found: python3): ending the job (SIGTERM, "
        "SIGKILL after 3 s)");
}

TEST_CASE("watcher: launch's own notes are kept from a front-end that reports in its own words") {
  // `clusterctl push` showed "clusterctl: rank 0 on h1 failed (exit 2): ending the job ..."
  // before its real message (its preflight's); with job_notes false the note is only kept.
  for (const bool shown : {true, false}) {
    CAPTURE(shown);
    Watch t;
    std::FILE* err = std::tmpfile();
    REQUIRE(err != nullptr);
    t.err = err;
    t.job_notes = shown;
    t.start_all_at(100ms);
    t.backend.obeys_term = {0};
    t.clock.at(5s, [&] { t.backend.end(1, 2); });
    auto result = t.run();
    CHECK(result.first.reason == "rank 1 on h2 failed (exit 2)");
    const std::string text = read_and_close(err);
    const std::string note =
        "rank 1 on h2 failed (exit 2): ending the job (SIGTERM, SIGKILL after 3 s)";
    if (shown) {
      CHECK(text == "clusterctl: " + note + "\n");
      CHECK(t.held.empty());
    } else {
      CHECK(text.empty());
      REQUIRE(t.held.size() == 1);
      CHECK(t.held[0] == note);
    }
  }
}

TEST_CASE("watcher: a stopped rank is named as what the failing rank waited for") {
  Watch t;
  t.start_all_at(100ms);
  t.backend.obeys_term = {0, 1};
  t.backend.stopped_pid = 1001;  // rank 1's
  t.clock.at(4s, [&] { t.backend.end(0, 1); });
  auto [w, ranks] = t.run();
  CHECK(w.reason ==
        "rank 1 on h2 was stopped (SIGSTOP, Ctrl-Z or a debugger) and the others waited for it; "
        "then rank 0 on h1 failed (exit 1)");
  CHECK(ranks[1].stopped);
}

TEST_CASE("watcher: a rank stopped only for a moment (LeakSanitizer at exit) is not named") {
  // LeakSanitizer stops an exiting process's threads with ptrace (ps STAT t) for a moment; a
  // rank caught so when another fails was named "stopped (SIGSTOP, Ctrl-Z or a debugger)".
  Watch t;
  t.opts.timeouts.stall = 0s;  // no periodic samples: only the one taken at the failure
  t.start_all_at(100ms);
  t.backend.obeys_term = {0, 1};
  t.backend.stopped_pid = 1001;  // rank 1's, stopped in the first sample only
  t.backend.stopped_samples = 1;
  t.clock.at(4s, [&] { t.backend.end(0, 3); });
  auto [w, ranks] = t.run();
  CHECK(w.reason == "rank 0 on h1 failed (exit 3)");
  CHECK_FALSE(ranks[1].stopped);
}

TEST_CASE("watcher: Ctrl-C ends the job as interrupted") {
  Watch t;
  t.start_all_at(100ms);
  t.backend.obeys_term = {0, 1};
  t.clock.at(3s, [] { cc::util::set_interrupted(true); });
  auto [w, ranks] = t.run();
  cc::util::set_interrupted(false);
  CHECK(w.code == ExitCode::kInterrupted);
  CHECK(w.reason == "interrupted (Ctrl-C)");
  CHECK(t.backend.calls.at(0) == "TERM@3000ms");
}

TEST_CASE("watcher: SIGTERM (clusterctl stop) ends the job, named as SIGTERM, not Ctrl-C") {
  Watch t;
  t.start_all_at(100ms);
  t.backend.obeys_term = {0, 1};
  t.clock.at(3s, [] { cc::util::set_interrupted(true, SIGTERM); });
  auto [w, ranks] = t.run();
  cc::util::set_interrupted(false);
  CHECK(w.code == ExitCode::kInterrupted);
  CHECK(w.reason == "terminated (SIGTERM, as `clusterctl stop` sends)");
  CHECK(t.backend.calls.at(0) == "TERM@3000ms");
}

TEST_CASE("watcher: a host that answers no signal is given up after grace + control + 5 s") {
  Watch t;
  t.opts.timeouts.total = 10s;
  t.start_all_at(100ms);
  t.backend.unreachable = true;  // neither SIGTERM nor SIGKILL ends its ranks
  auto [w, ranks] = t.run();
  CHECK(w.code == ExitCode::kJobFailed);
  REQUIRE(t.backend.calls.size() == 3);
  CHECK(t.backend.calls[0] == "TERM@10020ms");
  CHECK(t.backend.calls[1] == "KILL@13020ms");
  CHECK(t.backend.calls[2] == "abandon@33040ms");  // first look past 10020 + 3000 + 15000 + 5000
  CHECK(ranks[0].problem == "abandoned");
}
