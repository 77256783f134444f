#include "remote/local_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>

#include <doctest/doctest.h>
#include <unistd.h>

#include "remote/upload_temp.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"

namespace fs = std::filesystem;
using cc::remote::Command;
using cc::remote::LocalExecutor;
using cc::remote::RunOptions;
using namespace std::chrono_literals;

namespace {
Command sh(std::string script) {
  return Command{{std::move(script)}, true};
}
}  // namespace

TEST_CASE("local: argv runs without a shell, stdout and stderr apart") {
  LocalExecutor local;
  CHECK(local.host() == "local");
  auto r = local.run({{"printf", "%s|", "a b", "$HOME", "*"}}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  CHECK(r->out == "a b|$HOME|*|");
  CHECK(r->err == "");
  CHECK_FALSE(r->timed_out);

  r = local.run(sh("echo out; echo err >&2; exit 7"), {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 7);
  CHECK(r->out == "out\n");
  CHECK(r->err == "err\n");
}

TEST_CASE("local: stdin data round-trips, and an unread stdin is not an error") {
  LocalExecutor local;
  RunOptions o;
  std::string data(300'000, 'x');  // more than a pipe buffer
  data += "\n\xff\x00 end";
  o.stdin_data = data;
  auto r = local.run({{"cat"}}, o);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  CHECK(r->out == data);
  r = local.run({{"true"}}, o);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  r = local.run({{"cat"}}, {});  // no stdin: EOF at once
  REQUIRE(r.ok());
  CHECK(r->out == "");
}

TEST_CASE("local: large stdout and stderr at once do not deadlock") {
  LocalExecutor local;
  auto r = local.run(sh("head -c 1000000 /dev/zero; head -c 700000 /dev/zero >&2; "
                        "head -c 500000 /dev/zero"),
                     {});
  REQUIRE(r.ok());
  CHECK(r->out.size() == 1'500'000);
  CHECK(r->err.size() == 700'000);
}

TEST_CASE("local: death by signal is 128+N") {
  LocalExecutor local;
  auto r = local.run(sh("kill -9 $$"), {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 137);
  CHECK(r->signaled);
  auto e = local.run(sh("exit 137"), {});  // an exit status of 137 is no signal
  REQUIRE(e.ok());
  CHECK(e->exit_status == 137);
  CHECK_FALSE(e->signaled);
}

TEST_CASE("local: a missing program is 127 with a message, like a shell") {
  LocalExecutor local;
  auto r = local.run({{"clusterctl-no-such-program", "x"}}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 127);
  CHECK(r->err == "clusterctl: clusterctl-no-such-program: command not found\n");
  r = local.run({{"/etc/passwd"}}, {});  // not executable
  REQUIRE(r.ok());
  CHECK(r->exit_status == 126);
}

TEST_CASE("local: an executable script without a #! line runs under /bin/sh, as execvp runs it") {
  char dir_template[] = "/tmp/clusterctl-local-test-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const fs::path dir = dir_template;
  const fs::path script = dir / "no-shebang";
  REQUIRE(cc::util::write_file_atomic(script, "echo \"ran with $# args: $*\"\nexit 4\n", 0755).ok());
  LocalExecutor local;
  auto r = local.run({{script.string(), "a b", "c"}}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 4);
  CHECK(r->out == "ran with 2 args: a b c\n");
  // Found through PATH by its name alone.
  const char* old_path = std::getenv("PATH");
  const std::string saved = old_path ? old_path : "";
  ::setenv("PATH", (dir.string() + ":" + saved).c_str(), 1);
  auto by_name = local.run({{"no-shebang"}}, {});
  ::setenv("PATH", saved.c_str(), 1);
  REQUIRE(by_name.ok());
  CHECK(by_name->exit_status == 4);
  CHECK(by_name->out == "ran with 0 args: \n");
  fs::remove_all(dir);
}

TEST_CASE("local: timeout kills the whole process group and keeps partial output") {
  LocalExecutor local;
  RunOptions o;
  o.timeout = 300ms;
  auto t0 = std::chrono::steady_clock::now();
  // The background sleep holds stdout open: only killing the group ends this early.
  auto r = local.run(sh("echo started; sleep 30 & sleep 30"), o);
  auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE(r.ok());
  CHECK(r->timed_out);
  CHECK(r->exit_status == -1);
  CHECK(r->out == "started\n");
  CHECK(took < 2s);
  CHECK(took >= 300ms);
}

TEST_CASE("local: interruption kills the command and reports kInterrupted") {
  LocalExecutor local;
  std::thread ctrl_c([] {
    std::this_thread::sleep_for(200ms);
    cc::util::set_interrupted(true);
  });
  auto t0 = std::chrono::steady_clock::now();
  auto r = local.run({{"sleep", "30"}}, {});
  ctrl_c.join();
  cc::util::set_interrupted(false);
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == cc::util::ExitCode::kInterrupted);
}

TEST_CASE("local: malformed commands are usage errors") {
  LocalExecutor local;
  auto r = local.run({{}}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == cc::util::ExitCode::kUsage);
  r = local.run({{"echo", "a"}, true}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("exactly one script") != std::string::npos);
  r = local.run({{"echo", std::string("a\0b", 3)}}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("NUL") != std::string::npos);
}

TEST_CASE("local: concurrent runs each see their own end of file") {
  // A run must not inherit another run's pipes: the quick command here would otherwise wait
  // for the slow one.
  std::vector<std::thread> threads;
  std::vector<double> seconds(8);
  for (size_t i = 0; i < seconds.size(); ++i) {
    threads.emplace_back([i, &seconds] {
      LocalExecutor local;
      auto t0 = std::chrono::steady_clock::now();
      auto r = local.run(i == 0 ? sh("sleep 4") : sh("echo quick"), {});
      seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      CHECK(r.ok());
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 1; i < seconds.size(); ++i) CHECK(seconds[i] < 3.0);
}

TEST_CASE("local: upload copies atomically with the mode") {
  std::string tmpl = (fs::temp_directory_path() / "cc-local-XXXXXX").string();
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  fs::path dir = tmpl;
  REQUIRE(cc::util::write_file_atomic(dir / "src", "#!/bin/sh\necho hi\n").ok());
  LocalExecutor local;
  REQUIRE(local.upload(dir / "src", (dir / "dst").string(), 0751, 5s).ok());
  struct stat st {};
  REQUIRE(::stat((dir / "dst").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0751);
  auto r = local.run({{(dir / "dst").string()}}, {});
  REQUIRE(r.ok());
  CHECK(r->out == "hi\n");
  auto missing = local.upload(dir / "nope", (dir / "dst2").string(), 0644, 5s);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find((dir / "nope").string()) != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("local: upload names and removes its temporaries as an SSH upload does") {
  // A local upload wrote ".dst.tmp.XXXXXX", which a killed clusterctl left for good; an SSH
  // upload's are DEST.clusterctl-tmp-MACHINE-PID-RANDOM, removed by the next upload there.
  std::string tmpl = (fs::temp_directory_path() / "cc-local-XXXXXX").string();
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  fs::path dir = tmpl;
  REQUIRE(cc::util::write_file_atomic(dir / "src", "data\n").ok());
  // A pid of this machine that has ended: a killed clusterctl's upload.
  const pid_t gone = ::fork();
  REQUIRE(gone >= 0);
  if (gone == 0) ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(gone, &status, 0) == gone);
  const std::string own = cc::remote::upload_temp_name("dst");
  const std::string head = own.substr(0, own.rfind('-', own.rfind('-') - 1));  // DEST...HOST
  const std::string left = head + "-" + std::to_string(gone) + "-0123abcd";
  const std::string other = "dst2" + head.substr(3) + "-" + std::to_string(gone) + "-0123abcd";
  for (const std::string& name : {left, other}) {
    REQUIRE(cc::util::write_file_atomic(dir / name, "half").ok());
  }
  LocalExecutor local;
  REQUIRE(local.upload(dir / "src", (dir / "dst").string(), 0644, 5s).ok());
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"dst", other, "src"});  // another dest's stays
  fs::remove_all(dir);
}

TEST_CASE("local: on_output streams stdout and stderr apart, the result keeps none of it") {
  LocalExecutor local;
  std::string out, err;
  RunOptions opts;
  opts.on_output = [&](int fd, std::string_view bytes) { (fd == 1 ? out : err).append(bytes); };
  auto r = local.run(sh("echo one; echo two >&2; echo three; exit 3"), opts);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 3);
  CHECK(out == "one\nthree\n");
  CHECK(err == "two\n");
  CHECK(r->out.empty());
  CHECK(r->err.empty());
}

TEST_CASE("local: keep_stdin_open holds stdin open until `cancelled` ends the command") {
  LocalExecutor local;
  RunOptions opts;
  opts.stdin_data = "first\n";
  opts.keep_stdin_open = true;
  std::string out;
  opts.on_output = [&](int fd, std::string_view bytes) {
    if (fd == 1) out.append(bytes);
  };
  // The script echoes its first line, then waits for stdin's end, which never comes: only
  // `cancelled` ends it (and with it the timed_out flag).
  opts.cancelled = [&] { return out == "got first\n"; };
  opts.timeout = 20s;
  auto r = local.run(sh("read -r l; echo \"got $l\"; cat >/dev/null; echo eof"), opts);
  REQUIRE(r.ok());
  CHECK(r->timed_out);
  CHECK(out == "got first\n");
}

TEST_CASE("local: with `cancelled` set, Ctrl-C is left to the caller") {
  LocalExecutor local;
  cc::util::set_interrupted(true);
  RunOptions opts;
  opts.cancelled = [] { return false; };
  auto r = local.run(sh("echo still"), opts);
  cc::util::set_interrupted(false);
  REQUIRE(r.ok());
  CHECK(r->out == "still\n");
}

TEST_CASE("local: an environment of its own, as an SSH session's, for a rank beside SSH ones") {
  // A variable of the launching shell reached the ranks on `local` alone, never the ranks an
  // SSH session starts (openpmix/prrte#304's asymmetry).
  std::vector<std::string> dropped;
  const std::vector<std::string> env = cc::remote::session_environment(
      {"PATH=/usr/bin:/bin", "OMP_NUM_THREADS=8", "HOME=/home/u", "LC_ALL=C.UTF-8",
       "VIRTUAL_ENV=/opt/venv", "LANG=C", "LCX=1", "TMPDIR=/tmp/x"},
      &dropped);
  CHECK(env == std::vector<std::string>{"PATH=/usr/bin:/bin", "HOME=/home/u", "LC_ALL=C.UTF-8",
                                        "LANG=C", "TMPDIR=/tmp/x"});
  CHECK(dropped == std::vector<std::string>{"OMP_NUM_THREADS", "VIRTUAL_ENV", "LCX"});

  LocalExecutor local("local", {"PATH=/usr/bin:/bin", "CC_ONLY=1"});
  auto r = local.run(sh("env | grep -v '^PWD=\\|^SHLVL=\\|^_=' | sort"), {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  CHECK(r->out == "CC_ONLY=1\nPATH=/usr/bin:/bin\n");
  // Without one, clusterctl's own environment, as before.
  ::setenv("CC_LOCAL_TEST_VAR", "yes", 1);
  r = LocalExecutor().run({{"printenv", "CC_LOCAL_TEST_VAR"}}, {});
  ::unsetenv("CC_LOCAL_TEST_VAR");
  REQUIRE(r.ok());
  CHECK(r->out == "yes\n");
}
