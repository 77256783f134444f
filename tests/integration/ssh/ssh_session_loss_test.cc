// A host that goes away under an open session: clean errors naming the host, never a crash or
// a wait past the timeouts. Uses an extra sshd of its own (ports 2222 and 2223 in h8's namespace,
// from h8's config) so the shared lab's sshd processes are never touched.
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include "tests/integration/ssh/lab_fixture.h"
#include "util/atomic_file.h"

using cc::test::Lab;
using cc::test::local_ok;
using cc::test::TempDir;
using cc::util::ExitCode;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// Each test has its own port, so ctest -j can run them at once.
constexpr int kPortWentAway = 2222;
constexpr int kPortDiesDuring = 2223;

// An sshd started for one test; stopped (with its per-connection children) by pid.
class ExtraSshd {
 public:
  ExtraSshd(const Lab& lab, size_t host, int port, const fs::path& dir) : dir_(dir) {
    const auto& h = lab.inventory.hosts.at(host);
    auto base = cc::util::read_file(lab.dir / "hosts" / h.name / "sshd_config");
    REQUIRE(base.ok());
    std::string config;
    std::istringstream in(*base);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("ListenAddress", 0) == 0 || line.rfind("PidFile", 0) == 0) continue;
      config += line + "\n";
    }
    config += "ListenAddress " + h.address + ":" + std::to_string(port) + "\n";
    config += "PidFile " + (dir / "sshd.pid").string() + "\n";
    REQUIRE(cc::util::write_file_atomic(dir / "sshd_config", config).ok());
    local_ok({"ip", "netns", "exec", lab.netns(host), "/usr/sbin/sshd", "-f",
              (dir / "sshd_config").string(), "-E", (dir / "sshd.log").string()});
    for (int i = 0; i < 50 && pid_ <= 0; ++i) {  // sshd writes its pid once listening
      auto text = cc::util::read_file(dir / "sshd.pid");
      if (text.ok()) pid_ = std::atoi(text->c_str());
      if (pid_ <= 0) std::this_thread::sleep_for(50ms);
    }
    REQUIRE(pid_ > 0);
  }
  ~ExtraSshd() { stop(); }
  ExtraSshd(const ExtraSshd&) = delete;
  ExtraSshd& operator=(const ExtraSshd&) = delete;

  // SIGKILL to the listener and every process under it (per-connection sshd, the remote
  // shell and command), as if the host died: the kernel then closes the TCP connections.
  void stop() {
    if (pid_ <= 0) return;
    std::vector<int> tree = {pid_};
    cc::remote::LocalExecutor local;
    for (size_t i = 0; i < tree.size(); ++i) {
      auto children = local.run({{"pgrep", "-P", std::to_string(tree[i])}}, {});
      if (!children.ok()) continue;
      std::istringstream in(children->out);
      for (int child; in >> child;) tree.push_back(child);
    }
    for (int pid : tree) ::kill(pid, SIGKILL);
    pid_ = 0;
  }

 private:
  fs::path dir_;
  int pid_ = 0;
};

std::unique_ptr<cc::remote::SshExecutor> executor_for(const Lab& lab, size_t host, int port,
                                                      const fs::path& dir) {
  const auto& h = lab.inventory.hosts.at(host);
  REQUIRE(cc::util::write_file_atomic(
              dir / "ssh_config", "Host dying\n  HostName " + h.address + "\n  Port " +
                                      std::to_string(port) + "\n  User root\n" + "  IdentityFile " +
                                      (lab.dir / "id_ed25519").string() + "\n")
              .ok());
  cc::remote::SshOptions o;
  o.config_file = dir / "ssh_config";
  o.known_hosts = dir / "known_hosts";
  o.accept_new_host_keys = true;
  o.connect_timeout = 2s;
  return std::make_unique<cc::remote::SshExecutor>("dying", "dying", o);
}

}  // namespace

TEST_CASE("ssh: a session whose host went away gives a clean error, then reconnect errors") {
  Lab lab;
  TempDir tmp;
  ExtraSshd sshd(lab, 7, kPortWentAway, tmp.path);
  auto dying = executor_for(lab, 7, kPortWentAway, tmp.path);
  auto r = dying->run({{"uname", "-n"}}, {});
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  CHECK(r->exit_status == 0);

  sshd.stop();
  auto t0 = std::chrono::steady_clock::now();
  r = dying->run({{"uname", "-n"}}, {});
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUnreachable);
  CHECK(r.error().message.rfind("dying: ", 0) == 0);
  // And again: the broken session was dropped, a new connection is refused, still clean.
  r = dying->run({{"true"}}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUnreachable);
  CHECK(r.error().message.find("dying: cannot connect to root@") == 0);
  auto up = dying->upload(tmp.path / "ssh_config", "/tmp/x", 0644, 2s);
  REQUIRE_FALSE(up.ok());
  CHECK(up.error().code == ExitCode::kUnreachable);
}

TEST_CASE("ssh: a host that dies during a command ends the command at once, not at the timeout") {
  Lab lab;
  TempDir tmp;
  ExtraSshd sshd(lab, 7, kPortDiesDuring, tmp.path);
  auto dying = executor_for(lab, 7, kPortDiesDuring, tmp.path);
  REQUIRE(dying->run({{"true"}}, {}).ok());
  std::thread killer([&] {
    std::this_thread::sleep_for(500ms);
    sshd.stop();
  });
  cc::remote::RunOptions o;
  o.timeout = 20s;
  auto t0 = std::chrono::steady_clock::now();
  auto r = dying->run({{"sleep", "15"}}, o);
  auto took = std::chrono::steady_clock::now() - t0;
  killer.join();
  CHECK(took < 5s);
  // Killing sshd kills the session's shell too: either the connection is reported lost, or
  // the command ends without an exit status. Never a hang, never a crash.
  if (r.ok()) {
    CHECK(r->exit_status != 0);
  } else {
    CHECK(r.error().code == ExitCode::kUnreachable);
    CHECK(r.error().message.rfind("dying: connection to root@", 0) == 0);
  }
}
