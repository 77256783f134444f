#include "launch/wrapper.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "remote/local_executor.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"
#include "util/process.h"

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

TEST_CASE("wrapper: job variables named d, r, c, e, l, ... reach the rank and change nothing of it") {
  // The wrapper's own variables were once d (the job directory), r, c, g, m, h, W, e and l: a
  // job's `env: {d: DIR}` replaced the job directory, and a lost connection then removed DIR.
  namespace fs = std::filesystem;
  const std::string dir = "/tmp/clusterctl-wrapper-test-" + random_hex(4);
  const std::string decoy = "/tmp/clusterctl-wrapper-decoy-" + random_hex(4);
  fs::create_directories(dir);
  fs::create_directories(decoy);
  cc::remote::LocalExecutor local;
  std::string nonce = random_hex(8);
  WrapperArgs a{dir, 2, "", 1, nonce, {"sh", "-c", "printf '%s|' \"$d\" \"$r\" \"$e\" \"$l\" \"$(pwd)\""}};
  cc::remote::RunOptions ro;
  ro.keep_stdin_open = true;
  std::vector<EnvVar> env;
  for (const char* name : {"d", "c", "g", "h", "W", "c0", "seen"}) env.push_back({name, decoy});
  env.push_back({"r", "7"});
  env.push_back({"m", "not-the-nonce"});
  env.push_back({"e", "E"});
  env.push_back({"l", "L"});
  ro.stdin_data = env_payload(env, nonce);
  auto r = local.run(cc::remote::Command{wrapper_argv(a)}, ro);
  REQUIRE(r.ok());
  CAPTURE(r->err);
  CHECK(r->exit_status == 0);
  CHECK(r->out == decoy + "|7|E|L|" + dir + "|");        // theirs, and the job directory as cwd
  CHECK_FALSE(fs::exists(decoy + "/rank-2.pid"));       // nothing of the wrapper's went there
  CHECK(fs::exists(decoy));
  fs::remove_all(dir);
  fs::remove_all(decoy);
}

TEST_CASE("wrapper: the job's PATH finds the rank's command and leaves the wrapper's tools alone") {
  // A job's `env: {PATH: ...}` (a venv's bin, or "/opt/venv/bin:$PATH" written as a shell
  // would take it) was exported into the wrapper itself: without mkfifo and uname it failed
  // every rank with "cannot create its output pipes in DIR on " (exit 126).
  namespace fs = std::filesystem;
  const std::string dir = "/tmp/clusterctl-wrapper-test-" + random_hex(4);
  const std::string bin = dir + "/venv-bin";
  fs::create_directories(bin);
  {
    std::ofstream prog(bin + "/jobprog");
    prog << "#!/bin/sh\nprintf 'jobprog|%s|%s' \"$PATH\" \"$LD_PRELOAD\"\n";
  }
  fs::permissions(bin + "/jobprog", fs::perms::owner_all);
  cc::remote::LocalExecutor local;
  std::string nonce = random_hex(8);
  cc::remote::RunOptions ro;
  ro.keep_stdin_open = true;
  ro.stdin_data = env_payload({{"PATH", bin}, {"LD_PRELOAD", "/no/such/lib.so"}}, nonce);
  auto r = local.run(cc::remote::Command{wrapper_argv({dir, 0, "", 1, nonce, {"jobprog"}})}, ro);
  REQUIRE(r.ok());
  CAPTURE(r->err);
  CHECK(r->exit_status == 0);
  CHECK(r->out == "jobprog|" + bin + "|/no/such/lib.so");
  CHECK(r->err.find("cannot create its output pipes") == std::string::npos);
  // A PATH written as a shell would take it is passed as it is (no shell expands $PATH): the
  // command not found there is named with the PATH it was looked for in.
  ro.stdin_data = env_payload({{"PATH", bin + ":$PATH"}}, nonce);
  r = local.run(cc::remote::Command{wrapper_argv({dir, 0, "", 1, nonce, {"python3"}})}, ro);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 127);
  CHECK(r->err.find("clusterctl: cannot run python3: No such file or directory (looked for in "
                    "PATH=" +
                    bin + ":$PATH)") != std::string::npos);
  fs::remove_all(dir);
}

namespace {
size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("wrapper: loader and perl variables reach the rank exactly, never the wrapper's tools") {
  // A job's `PERL5OPT: -Mstrict=nonexistent` reached the perl waiter that starts the rank,
  // which died of it ("Unknown 'strict' tag(s)") before the rank ran; a job's or the host's
  // LD_PRELOAD was loaded into it too. They travel as _ccw_k_NAME and become NAME again in the
  // rank's process only.
  namespace fs = std::filesystem;
  const std::string dir = "/tmp/clusterctl-wrapper-test-" + random_hex(4);
  fs::create_directories(dir);
  cc::remote::LocalExecutor local;
  const std::string nonce = random_hex(8);
  const std::string show =
      "printf '%s|%s|%s|%s|%s' \"$PERL5OPT\" \"$LD_PRELOAD\" \"$PERL5LIB\" \"$BASH_ENV\" "
      "\"${_ccw_k_PERL5OPT-unset}\"";
  const std::vector<std::string> rank = {"sh", "-c", show};
  cc::remote::RunOptions ro;
  ro.keep_stdin_open = true;
  ro.stdin_data = env_payload({{"PERL5OPT", "-Mstrict=nonexistent"},
                               {"LD_PRELOAD", "/no/such/lib-cc.so"},
                               {"BASH_ENV", "/no/such/rc"}},
                              nonce);
  auto r = local.run(cc::remote::Command{wrapper_argv({dir, 0, "", 1, nonce, rank})}, ro);
  REQUIRE(r.ok());
  CAPTURE(r->err);
  CHECK(r->exit_status == 0);
  CHECK(r->out == "-Mstrict=nonexistent|/no/such/lib-cc.so||/no/such/rc|unset");
  CHECK(r->err.find("Unknown 'strict'") == std::string::npos);
  // The loader complains once per program it starts with the bad LD_PRELOAD: the rank's sh
  // alone (before, the perl waiter too).
  CHECK(count(r->err, "lib-cc.so") == 1);
  // The host's own (~/.ssh/environment, a login shell's rc file): moved aside by the wrapper's
  // first lines, given back to the rank; the job's value wins over the host's.
  ::setenv("PERL5OPT", "-Mstrict=alsonothing", 1);
  ::setenv("PERL5LIB", "/host/perl5lib", 1);
  ro.stdin_data = env_payload({{"LD_PRELOAD", "/no/such/lib-cc.so"}}, nonce);
  r = local.run(cc::remote::Command{wrapper_argv({dir, 0, "", 1, nonce, rank})}, ro);
  ::unsetenv("PERL5OPT");
  ::unsetenv("PERL5LIB");
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  CHECK(r->out == "-Mstrict=alsonothing|/no/such/lib-cc.so|/host/perl5lib||unset");
  CHECK(r->err.find("Unknown 'strict'") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("wrapper: a command not found exits 127, one not executable 126, each named") {
  namespace fs = std::filesystem;
  const std::string dir = "/tmp/clusterctl-wrapper-test-" + random_hex(4);
  fs::create_directories(dir);
  { std::ofstream(dir + "/notexec.sh") << "#!/bin/sh\necho hi\n"; }
  cc::remote::LocalExecutor local;
  const std::string nonce = random_hex(8);
  cc::remote::RunOptions ro;
  ro.keep_stdin_open = true;
  ro.stdin_data = env_payload({{"PATH", "/nowhere"}}, nonce);
  auto r = local.run(
      cc::remote::Command{wrapper_argv({dir, 0, "", 1, nonce, {"no-such-program-cc"}})}, ro);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 127);
  std::string why;
  for (size_t at = 0, nl; (nl = r->err.find('\n', at)) != std::string::npos; at = nl + 1) {
    if (auto w = exec_failure(std::string_view(r->err).substr(at, nl - at)); !w.empty()) why = w;
  }
  CHECK(why == "command not found: no-such-program-cc (looked for in PATH=/nowhere)");
  ro.stdin_data = env_payload({}, nonce);
  r = local.run(cc::remote::Command{wrapper_argv({dir, 0, "", 1, nonce, {"./notexec.sh"}})}, ro);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 126);  // as a shell says it; it was 127 (not found)
  CHECK(r->err.find("clusterctl: cannot run ./notexec.sh: Permission denied") != std::string::npos);
  // A relative path is looked for from the working directory (the job's directory here), never
  // in PATH: the line says which directory (`command: [../../build/x]` written as from the job
  // file said only "No such file or directory", and the summary blamed PATH).
  ro.stdin_data = env_payload({{"PATH", "/nowhere"}}, nonce);
  r = local.run(
      cc::remote::Command{wrapper_argv({dir, 0, "", 1, nonce, {"../../build/x-cc", "-o"}})}, ro);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 127);
  const std::string line = "clusterctl: cannot run ../../build/x-cc: No such file or directory "
                           "(relative to the working directory " + dir + ")";
  CAPTURE(r->err);
  CHECK(r->err.find(line + "\n") != std::string::npos);
  CHECK(r->err.find("PATH=") == std::string::npos);
  CHECK(exec_failure(line) ==
        "command not found: ../../build/x-cc (relative to the working directory " + dir + ")");
  fs::remove_all(dir);
}

TEST_CASE("wrapper: a rank whose pid cannot be recorded is ended, not left to run unrecorded") {
  namespace fs = std::filesystem;
  const std::string dir = "/tmp/clusterctl-wrapper-test-" + random_hex(4);
  fs::create_directories(dir);
  // The pid file's temporary is a directory: the pid file cannot be written (as on a full disk).
  fs::create_directories(dir + "/rank-0.pid.tmp");
  cc::remote::LocalExecutor local;
  const std::string nonce = random_hex(8);
  cc::remote::RunOptions ro;
  ro.keep_stdin_open = true;
  ro.stdin_data = env_payload({}, nonce);
  auto r = local.run(
      cc::remote::Command{wrapper_argv({dir, 0, "", 1, nonce, {"sh", "-c", "sleep 1; echo ran"}})},
      ro);
  REQUIRE(r.ok());
  CAPTURE(r->out);
  CAPTURE(r->err);
  CHECK(r->exit_status == 126);
  CHECK(r->out.find("ran") == std::string::npos);
  CHECK(r->err.find("clusterctl: rank 0: not run: its pid could not be recorded in " + dir +
                    "/rank-0.pid on ") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/out-0"));  // its output pipes removed too
  fs::remove_all(dir);
}

TEST_CASE("wrapper: exec_failure reads the waiter's line, and nothing else") {
  CHECK(exec_failure("clusterctl: cannot run python3: No such file or directory (looked for in "
                     "PATH=/a:/b)\n") == "command not found: python3 (looked for in PATH=/a:/b)");
  CHECK(exec_failure("clusterctl: cannot run /opt/x: No such file or directory") ==
        "command not found: /opt/x");
  CHECK(exec_failure("clusterctl: cannot run ./run.sh: Permission denied") ==
        "not executable: ./run.sh: Permission denied");
  CHECK(exec_failure("clusterctl: cannot run ./a.out: Exec format error") ==
        "cannot run ./a.out: Exec format error");
  CHECK(exec_failure("clusterctl: cannot run ./run.sh: interpreter not found: /usr/bin/python9, "
                     "named by the #! line of ./run.sh") ==
        "interpreter not found: /usr/bin/python9, named by the #! line of ./run.sh");
  CHECK(exec_failure("python3: can't open file 'x.py'") == "");
  CHECK(exec_failure("") == "");
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
  // The end record tells the signal from an exit, and says when the rank ended by this
  // host's clock (the order of the ranks' failures)...
  const double now = std::chrono::duration<double>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  CHECK(rec->out.starts_with("signal 9 "));
  auto end = read_end_record(rec->out);
  REQUIRE(end.has_value());
  CHECK(end->signaled);
  REQUIRE(end->exited_at.has_value());
  CHECK(*end->exited_at <= now);
  CHECK(*end->exited_at > now - 60);
  r = local.run(
      cc::remote::Command{wrapper_argv({dir, 0, "", 1, nonce, {"sh", "-c", "exit 137"}})}, ro);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 137);
  rec = local.run(cc::remote::Command{end_record_argv(dir, 0)}, {});
  REQUIRE(rec.ok());
  CHECK(rec->out.starts_with("exit 137 "));  // ... with the same status
  CHECK_FALSE(read_end_record(rec->out)->signaled);
  r = local.run(cc::remote::Command{wrapper_argv({dir, 0, "no-such-dir", 1, nonce, {"true"}})}, ro);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 126);
  // Where it was looked for: inside the job directory, as README says a relative cwd is.
  CHECK(r->err.find(fmt::format("cannot enter the working directory {}/no-such-dir on ", dir)) !=
        std::string::npos);
  CHECK(r->err.find("(cwd: no-such-dir is relative to the job's directory on the host, where "
                    "uploads land)") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("wrapper: its arguments are named, a missing or unknown one is an error naming it") {
  namespace fs = std::filesystem;
  const std::string dir = "/tmp/clusterctl-wrapper-test-" + random_hex(4);
  fs::create_directories(dir);
  cc::remote::LocalExecutor local;
  const std::string nonce = random_hex(8);
  const auto argv = wrapper_argv({dir, 2, "", 1, nonce, {"sh", "-c", "exit 0"}});
  REQUIRE(argv.size() == 4 + 14 + 1 + 3);
  CHECK(std::vector<std::string>(argv.begin() + 4, argv.begin() + 8) ==
        std::vector<std::string>{"--job-dir", dir, "--rank", "2"});
  CHECK(argv[4 + 14] == "--");
  cc::remote::RunOptions ro;
  ro.keep_stdin_open = true;
  ro.stdin_data = env_payload({}, nonce);
  auto run = [&](std::vector<std::string> a) {
    auto r = local.run(cc::remote::Command{std::move(a)}, ro);
    REQUIRE(r.ok());
    return *r;
  };
  CHECK(run(argv).exit_status == 0);

  auto missing = argv;  // without --rank N
  missing.erase(missing.begin() + 6, missing.begin() + 8);
  auto r = run(missing);
  CHECK(r.exit_status == 125);
  CHECK(r.err.find("clusterctl-rank: --rank is missing") != std::string::npos);

  auto unknown = argv;
  unknown[10] = "--grace-period";
  r = run(unknown);
  CHECK(r.exit_status == 125);
  CHECK(r.err.find("clusterctl-rank: unknown argument '--grace-period'") != std::string::npos);

  auto no_value = std::vector<std::string>(argv.begin(), argv.begin() + 5);  // "--job-dir" alone
  r = run(no_value);
  CHECK(r.exit_status == 125);
  CHECK(r.err.find("clusterctl-rank: --job-dir needs a value") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("wrapper: heartbeats keep a quiet rank alive, without them the watchdog ends it") {
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
  // With the time the rank ended (the waiter's Time::HiRes), and without it.
  auto rec = read_end_record("exit 3 1765100000.250000\n");
  REQUIRE(rec.has_value());
  CHECK_FALSE(rec->signaled);
  REQUIRE(rec->exited_at.has_value());
  CHECK(*rec->exited_at == doctest::Approx(1765100000.25));
  CHECK(parse_end_record("signal 15 1765100000.5") == std::optional<bool>(true));
  rec = read_end_record("exit 3\n");
  REQUIRE(rec.has_value());
  CHECK_FALSE(rec->exited_at.has_value());
  CHECK_FALSE(read_end_record("exit 3 soon"));
  CHECK_FALSE(read_end_record("exit 3x 17"));
}

namespace {

// A `sleep 60` in a session (and process group) of its own, as a rank's group is.
pid_t spawn_group() {
  pid_t p = ::fork();
  if (p == 0) {
    ::setsid();
    ::execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return p;
}

bool alive(pid_t p) {
  int status = 0;
  return ::waitpid(p, &status, WNOHANG) == 0;
}

// Runs a script of trust_functions() + `text` with `args` here.
cc::remote::CommandResult sh(const std::string& text, std::vector<std::string> args) {
  std::vector<std::string> argv{"sh", "-c", std::string(trust_functions()) + text, "test"};
  argv.insert(argv.end(), args.begin(), args.end());
  cc::remote::LocalExecutor local;
  auto r = local.run(cc::remote::Command{argv}, {});
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("wrapper: setup creates a new job directory and refuses one that exists or is a link") {
  namespace fs = std::filesystem;
  const std::string dir = "/tmp/clusterctl-wrapper-test-" + random_hex(4);
  cc::remote::LocalExecutor local;
  auto r = local.run(cc::remote::Command{setup_argv(dir, "host 1 t job")}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  CHECK((fs::status(dir).permissions() & fs::perms::all) == fs::perms::owner_all);
  CHECK(*cc::util::read_file(dir + "/launcher") == "host 1 t job\n");
  // Already there (pre-created by anyone, even by us): never reused.
  r = local.run(cc::remote::Command{setup_argv(dir, "host 1 t job")}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 1);
  CHECK(r->err.find("already exists") != std::string::npos);
  // A symbolic link planted at the name: refused, its target untouched.
  const std::string target = dir + "-target";
  const std::string link = dir + "-link";
  fs::create_directories(target);
  fs::create_symlink(target, link);
  r = local.run(cc::remote::Command{setup_argv(link, "host 1 t job")}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 1);
  CHECK(fs::is_empty(target));
  CHECK((fs::status(target).permissions() & fs::perms::all) != fs::perms::owner_all);
  fs::remove(link);
  fs::remove_all(target);
  fs::remove_all(dir);
}

TEST_CASE("wrapper: signal and cleanup aim only at live groups of a directory that is ours") {
  namespace fs = std::filesystem;
  const std::string dir = "/tmp/clusterctl-wrapper-test-" + random_hex(4);
  fs::create_directories(dir);
  const pid_t victim = spawn_group();
  REQUIRE(victim > 0);
  const std::string pid = std::to_string(victim);
  cc::remote::LocalExecutor local;

  // A forged pid file: the pid of a live process group with another start time.
  REQUIRE(cc::util::write_file_atomic(dir + "/rank-0.pid", pid + " Thu Jan 1 00:00:00 1970\n")
              .ok());
  for (auto argv : {signal_argv(dir, "TERM"), signal_argv(dir, "KILL")}) {
    auto r = local.run(cc::remote::Command{argv}, {});
    REQUIRE(r.ok());
    CHECK(r->exit_status == 0);
  }
  CHECK(alive(victim));
  // A bare pid (the old format, or a planted file): no start time, no signal.
  REQUIRE(cc::util::write_file_atomic(dir + "/rank-0.pid", pid + "\n").ok());
  REQUIRE(local.run(cc::remote::Command{signal_argv(dir, "KILL")}, {}).ok());
  CHECK(alive(victim));

  // The right pid file, written by the wrapper's own function, in a directory of another
  // user's (as root: chown to nobody): not ours, nothing signalled, nothing removed.
  CHECK(sh(R"(pidfile "$1/rank-0.pid" "$2")", {dir, pid}).exit_status == 0);
  if (::geteuid() == 0) {
    REQUIRE(::chown(dir.c_str(), 65534, 65534) == 0);
    auto r = local.run(cc::remote::Command{cleanup_argv(dir)}, {});
    REQUIRE(r.ok());
    CHECK(alive(victim));
    CHECK(fs::exists(dir));
    REQUIRE(::chown(dir.c_str(), 0, 0) == 0);
  } else {
    MESSAGE("skipped the foreign-owner case: needs root to chown");
  }
  // A symbolic link to the directory: not ours either.
  const std::string link = dir + "-link";
  fs::create_symlink(dir, link);
  REQUIRE(local.run(cc::remote::Command{cleanup_argv(link)}, {}).ok());
  CHECK(alive(victim));
  CHECK(fs::exists(dir));
  fs::remove(link);

  // Ours and matching: the group is killed and the directory removed (the control case).
  auto r = local.run(cc::remote::Command{cleanup_argv(dir)}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  int status = 0;
  CHECK(::waitpid(victim, &status, 0) == victim);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK_FALSE(fs::exists(dir));
  if (alive(victim)) ::kill(victim, SIGKILL);
}

TEST_CASE("wrapper: launcher records tell a gone launcher from a live or foreign one") {
  const std::string me = launcher_record("job-1");
  CHECK(me.starts_with(cc::util::host_name() + " " + std::to_string(::getpid()) + " "));
  CHECK(me.ends_with(" job-1"));
  CHECK_FALSE(launcher_gone(me));  // this process
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  std::string rec;
  {
    // The child's record, taken while it is a zombie (it exists), then reaped: gone.
    auto start = cc::util::process_start_time(child);
    REQUIRE(start.has_value());
    rec = fmt::format("{} {} {} job-2", cc::util::host_name(), child, *start);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
  }
  CHECK(launcher_gone(rec));
  // The same pid with another start time (a reused pid): gone.
  CHECK(launcher_gone(fmt::format("{} {} linux:x:1 job", cc::util::host_name(), ::getpid())));
  // Another machine's launcher cannot be judged from here; malformed records are kept.
  CHECK_FALSE(launcher_gone("another-host-xyz 1 t job"));
  CHECK_FALSE(launcher_gone(""));
  CHECK_FALSE(launcher_gone(cc::util::host_name() + " notapid t job"));
}

TEST_CASE("wrapper: each script is described in a few words for messages, never by its code") {
  const std::string dir = "/tmp/clusterctl-job-j-1-h0";
  CHECK(describe_step(setup_argv(dir, "rec")) == "creating the job directory " + dir);
  CHECK(describe_step(cleanup_argv(dir)) == "the cleanup of " + dir);
  CHECK(describe_step(signal_argv(dir, "TERM")) == "SIGTERM to the ranks of " + dir);
  CHECK(describe_step(write_file_argv(dir + "/f")) == "writing " + dir + "/f");
  CHECK(describe_step(leftovers_argv()) == "the janitor's list of job directories");
  CHECK(describe_step(sweep_argv(dir)) == "the janitor's removal of " + dir);
  CHECK(describe_step(end_record_argv(dir, 3)) == "reading rank 3's end record in " + dir);
  WrapperArgs a{dir, 2, "", 30, "nonce", {"true"}, 10};
  CHECK(describe_step(wrapper_argv(a)) == "rank 2's wrapper");
  CHECK(describe_step({"true"}).empty());
}

TEST_CASE("wrapper: a step cut short is named by its description, not its shell code") {
  cc::remote::LocalExecutor local("local");
  cc::remote::RunOptions ro;
  ro.what = describe_step(cleanup_argv("/tmp/clusterctl-job-nonexistent-h0"));
  ro.timeout = std::chrono::seconds(10);
  cc::util::set_interrupted(true);
  auto r = local.run(cc::remote::Command{{"sleep", "5"}}, ro);
  cc::util::set_interrupted(false);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "local: interrupted (Ctrl-C); the cleanup of /tmp/clusterctl-job-nonexistent-h0 was killed");
}

namespace {

// A TCP listener on 127.0.0.1 or ::1, on a port the kernel picks (fd -1 when this machine
// has no such address).
struct Listener {
  int fd = -1;
  int port = 0;
  explicit Listener(bool v6) {
    fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return;
    sockaddr_storage s{};
    socklen_t len = 0;
    if (v6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&s);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_loopback;
      len = sizeof *a;
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&s);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      len = sizeof *a;
    }
    if (::bind(fd, reinterpret_cast<sockaddr*>(&s), len) != 0 || ::listen(fd, 1) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&s), &len) != 0) {
      ::close(fd);
      fd = -1;
      return;
    }
    port = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&s)->sin6_port
                    : reinterpret_cast<sockaddr_in*>(&s)->sin_port);
  }
  ~Listener() {
    if (fd >= 0) ::close(fd);
  }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
};

// port_held_argv run here with PATH holding only `tools` (links in a directory of their own):
// what it printed.
std::string port_check_with(const std::vector<std::string>& tools, const std::string& address,
                            int port) {
  namespace fs = std::filesystem;
  const fs::path bin = "/tmp/clusterctl-port-test-" + random_hex(4);
  fs::create_directories(bin);
  for (const std::string& t : tools) fs::create_symlink(t, bin / fs::path(t).filename());
  std::vector<std::string> argv{"/usr/bin/env", "PATH=" + bin.string()};
  for (auto& a : port_held_argv(address, port)) argv.push_back(std::move(a));
  cc::remote::LocalExecutor local;
  cc::remote::RunOptions ro;
  ro.timeout = std::chrono::seconds(20);
  auto r = local.run(cc::remote::Command{argv}, ro);
  fs::remove_all(bin);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  return r->out;
}

}  // namespace

TEST_CASE("wrapper: the coordinator port check uses perl, else python3, else says unchecked") {
  // It needed perl: a host without it was never checked, and nothing said so. A name was
  // bound as 0.0.0.0 (IPv4 only, and every address where rank 0 binds one).
  Listener v4(false), v6(true);
  REQUIRE(v4.fd >= 0);
  const int free_port = Listener(false).port;  // closed at once: free again
  std::vector<std::vector<std::string>> ways = {{"/bin/sh", "/usr/bin/perl"}};
  if (std::filesystem::exists("/usr/bin/python3")) ways.push_back({"/bin/sh", "/usr/bin/python3"});
  for (const auto& tools : ways) {
    CAPTURE(tools[1]);
    // A loopback address is said first: the runner refuses a coordinator name that rank 0's
    // host resolves so (runner_test.cc).
    CHECK(port_check_with(tools, "127.0.0.1", v4.port) == "loopback 127.0.0.1\nin use\n");
    CHECK(port_check_with(tools, "localhost", v4.port) ==  // a name, resolved
          "loopback 127.0.0.1\nin use\n");
    CHECK(port_check_with(tools, "127.0.0.1", free_port) == "loopback 127.0.0.1\n");
    CHECK(port_check_with(tools, "127.0.1.1", free_port) == "loopback 127.0.1.1\n");
    if (v6.fd >= 0) CHECK(port_check_with(tools, "::1", v6.port) == "loopback ::1\nin use\n");
  }
  CHECK(port_check_with({"/bin/sh"}, "127.0.0.1", v4.port) == "unchecked\n");
  CHECK(describe_step(port_held_argv("10.0.0.1", 5)) == "the check of port 5 on 10.0.0.1");
}

TEST_CASE("wrapper: a script whose #! interpreter is missing names it, not the script") {
  // It said "command not found: ./run.sh", as if the script were missing; `#!/usr/bin/env X`
  // ran env, whose own line no summary read; a CRLF script's "/bin/sh\r" was not named.
  namespace fs = std::filesystem;
  const std::string dir = "/tmp/clusterctl-wrapper-test-" + random_hex(4);
  fs::create_directories(dir);
  auto script = [&](const std::string& name, const std::string& text) {
    { std::ofstream(dir + "/" + name, std::ios::binary) << text; }
    fs::permissions(dir + "/" + name, fs::perms::owner_all);
  };
  script("py9.sh", "#!/usr/bin/python9\nprint(1)\n");
  script("envpy9.sh", "#!/usr/bin/env python9 -u\nprint(1)\n");
  script("crlf.sh", "#!/bin/sh\r\necho hi\r\n");
  script("envcrlf.sh", "#!/usr/bin/env sh\r\necho hi\r\n");
  script("envsh.sh", "#!/usr/bin/env -S sh -e\necho fine\n");
  cc::remote::LocalExecutor local;
  const std::string nonce = random_hex(8);
  cc::remote::RunOptions ro;
  ro.keep_stdin_open = true;
  ro.stdin_data = env_payload({{"PATH", dir + ":/usr/bin:/bin"}}, nonce);
  auto why_of = [&](const std::string& cmd, int status) {
    auto r = local.run(cc::remote::Command{wrapper_argv({dir, 0, "", 1, nonce, {cmd}})}, ro);
    REQUIRE(r.ok());
    CAPTURE(r->err);
    CHECK(r->exit_status == status);
    std::string why;
    for (size_t at = 0, nl; (nl = r->err.find('\n', at)) != std::string::npos; at = nl + 1) {
      if (auto w = exec_failure(std::string_view(r->err).substr(at, nl - at)); !w.empty()) why = w;
    }
    return why;
  };
  CHECK(why_of("./py9.sh", 127) ==
        "interpreter not found: /usr/bin/python9, named by the #! line of ./py9.sh");
  CHECK(why_of("py9.sh", 127) ==  // found in PATH: named by where it was found
        "interpreter not found: /usr/bin/python9, named by the #! line of " + dir + "/py9.sh");
  CHECK(why_of("./envpy9.sh", 127) ==
        "interpreter not found: python9, named by the #! line of ./envpy9.sh (#!/usr/bin/env, "
        "looked for in PATH=" + dir + ":/usr/bin:/bin)");
  CHECK(why_of("./crlf.sh", 127) ==
        "interpreter not found: /bin/sh\\r, named by the #! line of ./crlf.sh; that line ends "
        "in a carriage return (\\r): ./crlf.sh has Windows (CRLF) line endings");
  CHECK(why_of("./envcrlf.sh", 127) ==
        "interpreter not found: sh\\r, named by the #! line of ./envcrlf.sh (#!/usr/bin/env, "
        "looked for in PATH=" + dir + ":/usr/bin:/bin); that line ends in a carriage return "
        "(\\r): ./envcrlf.sh has Windows (CRLF) line endings");
  CHECK(why_of("./envsh.sh", 0).empty());  // an interpreter env finds: the script runs
  CHECK(why_of("./gone.sh", 127) == "command not found: ./gone.sh (relative to the working "
                                    "directory " + dir + ")");  // a script that is not there
  fs::remove_all(dir);
}
