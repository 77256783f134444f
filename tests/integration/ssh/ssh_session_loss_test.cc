// A host that goes away under an open session: clean errors naming the host, never a crash or
// a wait past the timeouts. Uses an extra sshd of its own (ports 2222 and 2223 in h8's namespace,
// from h8's config) so the shared lab's sshd processes are never touched.
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <future>

#include "remote/upload_temp.h"
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
constexpr int kPortUploadCut = 2224;

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

namespace {

// The names in `dir`, sorted.
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Sets `path`'s mtime (never through a link) to `seconds` ago.
void age(const fs::path& path, int seconds) {
  struct timespec times[2];
  ::clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= seconds;
  times[1] = times[0];
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
}

}  // namespace

TEST_CASE("ssh: an upload cut by a dropped connection leaves a temporary the next one removes") {
  Lab lab;
  TempDir tmp;
  // The lab's hosts share this machine's file system: the dest is looked at from here.
  const fs::path dest_dir = tmp.path / "dest";
  fs::create_directory(dest_dir);
  fs::permissions(dest_dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec);
  const fs::path dest = dest_dir / "big.bin";
  REQUIRE(cc::util::write_file_atomic(tmp.path / "big.bin", std::string(256u << 20, 'b')).ok());
  REQUIRE(cc::util::write_file_atomic(tmp.path / "small.bin", "small\n").ok());

  {
    ExtraSshd sshd(lab, 7, kPortUploadCut, tmp.path);
    auto dying = executor_for(lab, 7, kPortUploadCut, tmp.path);
    REQUIRE(dying->run({{"true"}}, {}).ok());
    auto cut = std::async(std::launch::async, [&] {
      return dying->upload(tmp.path / "big.bin", dest.string(), 0644, 60s);
    });
    // The connection drops (its sshd killed) once the temporary holds a part of the file.
    bool writing = false;
    for (int i = 0; i < 3000 && !writing; ++i) {
      for (const auto& e : fs::directory_iterator(dest_dir)) {
        std::error_code ec;
        writing |= fs::file_size(e.path(), ec) >= (1u << 20) && !ec;
      }
      if (!writing) std::this_thread::sleep_for(10ms);
    }
    REQUIRE(writing);
    sshd.stop();
    auto r = cut.get();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ExitCode::kUnreachable);
  }
  // What the cut upload left: its temporary, named by this machine and process.
  const std::string own = cc::remote::upload_temp_name("big.bin");
  const std::string mine_prefix = own.substr(0, own.rfind('-') + 1);
  auto left = names_in(dest_dir);
  REQUIRE(left.size() == 1);
  CHECK(left[0].rfind(mine_prefix, 0) == 0);
  CHECK(fs::is_regular_file(dest_dir / left[0]));

  // Beside it, what the next upload must judge. Another machine's clusterctl: an upload it may
  // still be writing (kept) and one an hour idle (removed); what is not ours, or not a regular
  // file, is kept however old.
  const std::string other = "big.bin.clusterctl-tmp-othermachine-";
  const std::string dead =
      mine_prefix.substr(0, mine_prefix.rfind('-', mine_prefix.size() - 2) + 1) +
      "999999-";  // this machine, a pid that no process has (pid_max)
  REQUIRE(::kill(999999, 0) != 0);
  auto plant = [&](const std::string& name, int seconds_ago) {
    REQUIRE(cc::util::write_file_atomic(dest_dir / name, "x\n").ok());
    age(dest_dir / name, seconds_ago);
  };
  plant(other + "4343-0123abcd", 60);
  plant(other + "4344-0123abcd", 7200);
  plant(dead + "0123abcd", 5);
  plant("other.bin.clusterctl-tmp-othermachine-4345-0123abcd", 7200);
  plant(other + "4346-0123abcd", 7200);
  REQUIRE(::chown((dest_dir / (other + "4346-0123abcd")).c_str(), 65534, 65534) == 0);
  REQUIRE(cc::util::write_file_atomic(tmp.path / "target", "the link's target\n").ok());
  fs::create_symlink(tmp.path / "target", dest_dir / (dead + "0123abce"));
  age(dest_dir / (dead + "0123abce"), 7200);
  fs::create_directory(dest_dir / (dead + "0123abcf"));
  age(dest_dir / (dead + "0123abcf"), 7200);

  auto h8 = lab.host(7);
  auto again = h8->upload(tmp.path / "small.bin", dest.string(), 0644, 20s);
  REQUIRE_MESSAGE(again.ok(), (again.ok() ? "" : again.error().message));
  auto now = cc::util::read_file(dest);
  REQUIRE(now.ok());
  CHECK(*now == "small\n");
  std::vector<std::string> kept{"big.bin",
                                other + "4343-0123abcd",
                                other + "4346-0123abcd",
                                dead + "0123abce",
                                dead + "0123abcf",
                                "other.bin.clusterctl-tmp-othermachine-4345-0123abcd"};
  std::sort(kept.begin(), kept.end());
  CHECK(names_in(dest_dir) == kept);
  auto target = cc::util::read_file(tmp.path / "target");
  REQUIRE(target.ok());
  CHECK(*target == "the link's target\n");
}
