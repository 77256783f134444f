#include "launch/wrapper.h"

#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "remote/local_executor.h"

using namespace cc::launch;

TEST_CASE("wrapper: env_payload quotes every value and ends with the nonce") {
  std::string p = env_payload({{"A", "x y"}, {"B", "it's\n$(id)"}}, "abc123");
  CHECK(p == "export A='x y'\nexport B='it'\\''s\n$(id)'\nabc123\n");
}

TEST_CASE("wrapper: StartMarker removes the start line and keeps what came before") {
  StartMarker m("n0nce");
  CHECK(m.feed("wrapper says hi\nn0n") == "");
  CHECK_FALSE(m.started());
  CHECK(m.feed("ce 4242\nrank err\n") == "wrapper says hi\nrank err\n");
  CHECK(m.started());
  CHECK(m.pid() == 4242);
  CHECK(m.feed("later") == "later");
}

TEST_CASE("wrapper: a stream that ends before the start line gives its bytes back") {
  StartMarker m("n0nce");
  CHECK(m.feed("cannot enter the working directory\n") == "");
  CHECK(m.flush() == "cannot enter the working directory\n");
  CHECK_FALSE(m.started());
}

TEST_CASE("wrapper: hostile args, cwd and env reach the rank unchanged (local sh)") {
  namespace fs = std::filesystem;
  const std::string dir = "/tmp/clusterctl-wrapper-test-" + random_hex(4);
  const std::string hostile = "a b 'q' \"dq\" $(touch /tmp/pwned) `x` \\ \n2nd line *";
  fs::create_directories(dir + "/" + hostile);
  cc::remote::LocalExecutor local;
  std::string nonce = random_hex(8);
  WrapperArgs a{
      dir, 3,     hostile,
      1,   nonce, {"sh", "-c", "printf '%s|' \"$1\" \"$(pwd)\" \"$HOSTILE\"", "arg0", hostile}};
  cc::remote::RunOptions ro;
  ro.keep_stdin_open = true;  // its end would be a lost connection: the watchdog would fire
  ro.stdin_data = env_payload({{"HOSTILE", hostile}}, nonce);
  auto r = local.run(cc::remote::Command{wrapper_argv(a)}, ro);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  CHECK(r->out == hostile + "|" + dir + "/" + hostile + "|" + hostile + "|");
  StartMarker m(nonce);
  CHECK(m.feed(r->err) == "");
  CHECK(m.started());
  CHECK_FALSE(fs::exists("/tmp/pwned"));
  CHECK_FALSE(fs::exists(dir + "/rank-3.pid"));  // removed by the wrapper at the end
  fs::remove_all(dir);
}

TEST_CASE("wrapper: the rank's exit status and death by signal come back") {
  namespace fs = std::filesystem;
  const std::string dir = "/tmp/clusterctl-wrapper-test-" + random_hex(4);
  fs::create_directories(dir);
  cc::remote::LocalExecutor local;
  std::string nonce = random_hex(8);
  cc::remote::RunOptions ro;
  ro.keep_stdin_open = true;  // its end would be a lost connection: the watchdog would fire
  ro.stdin_data = env_payload({}, nonce);
  auto r = local.run(
      cc::remote::Command{wrapper_argv({dir, 0, "", 1, nonce, {"sh", "-c", "exit 7"}})}, ro);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 7);
  r = local.run(
      cc::remote::Command{wrapper_argv({dir, 0, "", 1, nonce, {"sh", "-c", "kill -s KILL $$"}})},
      ro);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 128 + 9);
  auto rec = local.run(cc::remote::Command{end_record_argv(dir, 0)}, {});
  REQUIRE(rec.ok());
  CHECK(rec->out == "signal 9\n");  // the end record tells the signal from an exit...
  r = local.run(
      cc::remote::Command{wrapper_argv({dir, 0, "", 1, nonce, {"sh", "-c", "exit 137"}})}, ro);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 137);
  rec = local.run(cc::remote::Command{end_record_argv(dir, 0)}, {});
  REQUIRE(rec.ok());
  CHECK(rec->out == "exit 137\n");  // ... with the same status
  r = local.run(cc::remote::Command{wrapper_argv({dir, 0, "no-such-dir", 1, nonce, {"true"}})}, ro);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 126);
  CHECK(r->err.find("cannot enter the working directory no-such-dir") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("wrapper: heartbeats keep a quiet rank alive; without them the watchdog ends it") {
  namespace fs = std::filesystem;
  const std::string dir = "/tmp/clusterctl-wrapper-test-" + random_hex(4);
  fs::create_directories(dir);
  cc::remote::LocalExecutor local;
  std::string nonce = random_hex(8);
  WrapperArgs a{dir, 0, "", 1, nonce, {"sh", "-c", "sleep 3; exit 5"}, 2};
  cc::remote::RunOptions ro;
  ro.keep_stdin_open = true;
  ro.stdin_data = env_payload({}, nonce);
  ro.heartbeat = std::chrono::milliseconds(300);
  auto r = local.run(cc::remote::Command{wrapper_argv(a)}, ro);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 5);  // 3 s of silence, yet beats every 300 ms: not lost
  CHECK(fs::exists(dir));

  // No heartbeat (stdin open but silent, as after a network cut): SIGTERM after ~2 s.
  ro.heartbeat = std::chrono::milliseconds(0);
  a.command = {"sh", "-c", "exec sleep 30"};
  const auto t0 = std::chrono::steady_clock::now();
  r = local.run(cc::remote::Command{wrapper_argv(a)}, ro);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 128 + 15);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(8));
  CHECK_FALSE(fs::exists(dir));  // the watchdog removed the job directory
  fs::remove_all(dir);
}

TEST_CASE("wrapper: parse_end_record") {
  CHECK(parse_end_record("signal 9\n") == std::optional<bool>(true));
  CHECK(parse_end_record("exit 130\n") == std::optional<bool>(false));
  CHECK(parse_end_record("exit 0") == std::optional<bool>(false));
  CHECK_FALSE(parse_end_record(""));
  CHECK_FALSE(parse_end_record("exit x"));
  CHECK_FALSE(parse_end_record("signal 999"));
}
