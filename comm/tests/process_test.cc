// The real suite: ranks as separate processes over loopback TCP (clustercomm_test_rank),
// plus the fault cases: kill -9 of a rank inside all_reduce, a rank that never
// arrives, connections with a wrong token, disagreeing world sizes and duplicate ranks.
// The only timing assertion is the bound "fail within timeout + 1 s".
// Then the hostile-input cases of rendezvous security: a flood of 200 silent, garbage and
// wrong-token connections at rank 0 under RLIMIT_NOFILE 64 and 1024 and at its descriptor
// limit, a token-less world outside loopback, and the coordinator's bind address.
#include <doctest/doctest.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "comm/error.h"
#include "comm/rendezvous/handshake.h"
#include "comm/tests/thread_world.h"
#include "comm/transport/tcp/socket.h"

extern char** environ;

namespace cc::comm::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Rank {
  pid_t pid = -1;
  std::string log;
  int status = -1;  // exit code once reaped, 128+signal when killed
  Clock::time_point started, exited;
  double cpu_seconds = -1;  // user + system, once reaped
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts clustercomm_test_rank `mode` with the given environment on top of ours (minus any
// CLUSTERCOMM_* / MLX_* we might have inherited).
Rank spawn(const std::string& mode, const std::map<std::string, std::string>& env) {
  static int serial = 0;
  Rank r;
  r.log = "/tmp/clustercomm-proc-" + std::to_string(getpid()) + "-" + std::to_string(serial++);
  std::vector<std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string v = *e;
    if (v.rfind("CLUSTERCOMM_", 0) != 0 && v.rfind("MLX_", 0) != 0) vars.push_back(v);
  }
  for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  std::string prog = CLUSTERCOMM_TEST_RANK;
  std::vector<char*> argv{prog.data(), const_cast<char*>(mode.c_str()), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, r.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  r.started = Clock::now();
  const int rc = posix_spawn(&r.pid, prog.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE(rc == 0);
  return r;
}

// Reaps every rank or kills what is left at `deadline`.
void wait_all(std::vector<Rank>& ranks, Clock::time_point deadline) {
  size_t left = ranks.size();
  while (left > 0) {
    for (Rank& r : ranks) {
      if (r.status != -1 || r.pid < 0) continue;
      int st = 0;
      rusage ru{};
      if (wait4(r.pid, &st, WNOHANG, &ru) == r.pid) {
        r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        r.exited = Clock::now();
        r.cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                        static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
        --left;
      }
    }
    if (left == 0) break;
    if (Clock::now() > deadline) {
      for (Rank& r : ranks) {
        if (r.status == -1 && r.pid > 0) {
          kill(r.pid, SIGKILL);
          waitpid(r.pid, nullptr, 0);
          r.status = 999;  // hung
        }
      }
      break;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
}

std::map<std::string, std::string> env_for(int rank, int size, int port,
                                           const std::string& timeout_ms = "20000",
                                           const std::string& token = "process-token") {
  return {{"CLUSTERCOMM_RANK", std::to_string(rank)},
          {"CLUSTERCOMM_SIZE", std::to_string(size)},
          {"CLUSTERCOMM_COORDINATOR", "127.0.0.1:" + std::to_string(port)},
          {"CLUSTERCOMM_TOKEN", token},
          {"CLUSTERCOMM_TIMEOUT_MS", timeout_ms}};
}

// Starts rank 0 with `env`, whose coordinator has port 0 (the kernel picks a free one: no race
// with other processes for a port chosen in advance), appends it to `ranks` and returns the
// port it listens on, read from its log ("coordinator port N", rank_main.cc). Fails the test
// case (killing what was started) when rank 0 reports none within 20 s.
int start_rank0(std::vector<Rank>& ranks, const std::string& mode,
                const std::map<std::string, std::string>& env) {
  ranks.push_back(spawn(mode, env));
  const Rank& r = ranks.back();
  const auto deadline = Clock::now() + milliseconds(20000);
  const std::string key = "coordinator port ";
  for (;;) {
    const std::string log = read_file(r.log);
    const size_t at = log.find(key);
    if (at != std::string::npos && log.find('\n', at) != std::string::npos) {
      return std::stoi(log.substr(at + key.size()));
    }
    if (Clock::now() > deadline) {
      for (Rank& k : ranks) {
        if (k.pid > 0 && k.status == -1) {
          kill(k.pid, SIGKILL);
          waitpid(k.pid, nullptr, 0);
        }
      }
      FAIL("rank 0 reported no coordinator port within 20 s; its stderr: ", log);
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
}

void require_success(std::vector<Rank>& ranks) {
  for (size_t i = 0; i < ranks.size(); ++i) {
    INFO("rank ", i, " stderr: ", read_file(ranks[i].log));
    CHECK(ranks[i].status == 0);
    ::unlink(ranks[i].log.c_str());
  }
}

}  // namespace

TEST_CASE("collectives as processes over loopback TCP and over shared memory, n=2,3,4") {
  // "shm+single-copy": shared memory with single copy on from 64 KiB (off by default), so
  // separate processes prove they may read each other's memory and read it.
  for (const std::string variant : {"tcp", "shm", "shm+single-copy"}) {
    const std::string transport = variant == "tcp" ? "tcp" : "shm";
    for (int n : {2, 3, 4}) {
      CAPTURE(variant);
      CAPTURE(n);
      std::vector<Rank> ranks;
      auto env = [&](int r, int port) {
        auto e = env_for(r, n, port);
        e["CLUSTERCOMM_TRANSPORT"] = transport;
        if (variant == "shm+single-copy") e["CLUSTERCOMM_SHM_SINGLE_COPY_MIN"] = "65536";
        return e;
      };
      const int port = start_rank0(ranks, "collectives", env(0, 0));
      for (int r = 1; r < n; ++r) ranks.push_back(spawn("collectives", env(r, port)));
      wait_all(ranks, Clock::now() + milliseconds(120000));
      require_success(ranks);
    }
  }
}

TEST_CASE("started by MLX variables: MLX_RANK + MLX_HOSTFILE") {
  // Each rank listens where its own entry says; port 0 lets the kernel pick, so rank 0 is
  // started first on 127.0.0.1:0 and rank 1's hostfile names the port rank 0 reported.
  const std::string hostfile = "/tmp/clustercomm-hosts-" + std::to_string(getpid()) + ".json";
  std::ofstream(hostfile + "0") << R"([["127.0.0.1:0"], ["127.0.0.1:0"]])";
  std::vector<Rank> ranks;
  const int p0 = start_rank0(
      ranks, "join",
      {{"MLX_RANK", "0"}, {"MLX_HOSTFILE", hostfile + "0"}, {"CLUSTERCOMM_TOKEN", "mlx"}});
  std::ofstream(hostfile + "1") << "[[\"127.0.0.1:" << p0 << "\"], [\"127.0.0.1:0\"]]";
  ranks.push_back(spawn(
      "join", {{"MLX_RANK", "1"}, {"MLX_HOSTFILE", hostfile + "1"}, {"CLUSTERCOMM_TOKEN", "mlx"}}));
  wait_all(ranks, Clock::now() + milliseconds(30000));
  require_success(ranks);
  ::unlink((hostfile + "0").c_str());
  ::unlink((hostfile + "1").c_str());
}

namespace {

// /dev/shm entries of the shared-memory transport created by one of `ranks` ("ccshm-<pid>-");
// none on macOS, where POSIX shm has no file system.
std::vector<std::string> segments_of(const std::vector<Rank>& ranks) {
  std::vector<std::string> found;
  DIR* d = ::opendir("/dev/shm");
  if (d == nullptr) return found;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    for (const Rank& r : ranks) {
      if (name.rfind("ccshm-" + std::to_string(r.pid) + "-", 0) == 0) found.push_back(name);
    }
  }
  ::closedir(d);
  return found;
}

// 4 ranks loop on a 4 MiB all_reduce over `transport`; rank 2 gets `sig` (SIGKILL or SIGSTOP).
// Every survivor must fail (exit 3) within the timeout + 1 s, naming rank 2, and no segment
// may be in /dev/shm while they loop or after.
void fault_in_all_reduce(const std::string& transport, int sig, bool single_copy = false) {
  const int n = 4, victim = 2;
  const auto timeout = milliseconds(3000);
  std::vector<Rank> ranks;
  const std::string timeout_ms = std::to_string(timeout.count());
  auto env = [&](int r, int port) {
    auto e = env_for(r, n, port, timeout_ms);
    e["CLUSTERCOMM_TRANSPORT"] = transport;
    if (single_copy) e["CLUSTERCOMM_SHM_SINGLE_COPY_MIN"] = "65536";
    return e;
  };
  const int port = start_rank0(ranks, "loop", env(0, 0));
  for (int r = 1; r < n; ++r) ranks.push_back(spawn("loop", env(r, port)));
  // Wait until every rank is looping.
  const auto start_deadline = Clock::now() + milliseconds(30000);
  for (Rank& r : ranks) {
    while (read_file(r.log).find("looping") == std::string::npos && Clock::now() < start_deadline) {
      std::this_thread::sleep_for(milliseconds(10));
    }
  }
  std::this_thread::sleep_for(milliseconds(100));
  CHECK(segments_of(ranks).empty());  // unlinked as soon as every rank had mapped it
  const auto hit_at = Clock::now();
  REQUIRE(kill(ranks[victim].pid, sig) == 0);
  const auto survivors_done = hit_at + timeout + milliseconds(5000);
  // wait_all reaps the survivors; a stopped victim is killed when they are done.
  std::vector<Rank> survivors;
  for (int r = 0; r < n; ++r) {
    if (r != victim) survivors.push_back(ranks[static_cast<size_t>(r)]);
  }
  wait_all(survivors, survivors_done);
  if (sig == SIGSTOP) kill(ranks[victim].pid, SIGKILL);
  waitpid(ranks[victim].pid, nullptr, 0);
  for (const Rank& r : survivors) {
    const std::string log = read_file(r.log);
    INFO(transport, " survivor stderr: ", log);
    CHECK(r.status == 3);
    CHECK(log.find("rank 2") != std::string::npos);
    CHECK(r.exited - hit_at <= timeout + milliseconds(1000));
  }
  CHECK(segments_of(ranks).empty());
  for (Rank& r : ranks) ::unlink(r.log.c_str());
}

}  // namespace

TEST_CASE(
    "kill -9 of a rank inside all_reduce: every survivor fails within timeout + 1 s, naming it") {
  SUBCASE("tcp") {
    fault_in_all_reduce("tcp", SIGKILL);
  }
  SUBCASE("shm") {
    fault_in_all_reduce("shm", SIGKILL);
  }
  SUBCASE("shm with single copy") {
    fault_in_all_reduce("shm", SIGKILL, true);
  }
}

TEST_CASE("SIGSTOP of a rank inside all_reduce over shm: the survivors time out naming it") {
  SUBCASE("rings") {
    fault_in_all_reduce("shm", SIGSTOP);
  }
  SUBCASE("single copy") {
    fault_in_all_reduce("shm", SIGSTOP, true);
  }
}

TEST_CASE("a rank that never arrives: the others fail at start-up naming it") {
  const int n = 4;
  const auto timeout = milliseconds(1500);
  std::vector<Rank> ranks;
  const std::string timeout_ms = std::to_string(timeout.count());
  const auto started = Clock::now();
  const int port = start_rank0(ranks, "join", env_for(0, n, 0, timeout_ms));
  for (int r = 1; r < n - 1; ++r) ranks.push_back(spawn("join", env_for(r, n, port, timeout_ms)));
  wait_all(ranks, started + timeout + milliseconds(10000));
  for (size_t r = 0; r < ranks.size(); ++r) {
    const std::string log = read_file(ranks[r].log);
    INFO("rank ", r, " stderr: ", log);
    CHECK(ranks[r].status == 3);
    CHECK(log.find("rank 3") != std::string::npos);
    CHECK(ranks[r].exited - started <= timeout + milliseconds(1000));
    ::unlink(ranks[r].log.c_str());
  }
}

TEST_CASE("wrong-token, garbage and silent connections are refused, the job goes on") {
  std::vector<Rank> ranks;
  const int port = start_rank0(ranks, "join", env_for(0, 2, 0));
  const auto deadline = Clock::now() + milliseconds(10000);
  const tcp::Address coord = tcp::resolve("127.0.0.1:" + std::to_string(port));
  // A client with the wrong token is refused.
  {
    tcp::Fd fd = tcp::connect_to(coord, nullptr, deadline, "rank 0");
    CHECK_THROWS_AS(client_handshake(fd.get(), "wrong-token", "hello", deadline, "rank 0"), Error);
  }
  // Garbage, then a connection that never says anything (held open during the job).
  {
    tcp::Fd fd = tcp::connect_to(coord, nullptr, deadline, "rank 0");
    const std::string junk(100000, 'x');
    try {
      tcp::write_all(fd.get(), junk.data(), junk.size(), deadline, "rank 0");
    } catch (const Error&) {
    }
  }
  tcp::Fd silent = tcp::connect_to(coord, nullptr, deadline, "rank 0");
  // A rank with the wrong token cannot join...
  Rank intruder = spawn("join", env_for(1, 2, port, "3000", "not-the-token"));
  std::vector<Rank> one{intruder};
  wait_all(one, Clock::now() + milliseconds(10000));
  const std::string intruder_log = read_file(one[0].log);
  INFO("intruder stderr: ", intruder_log);
  CHECK(one[0].status == 3);
  CHECK(intruder_log.find("token") != std::string::npos);
  ::unlink(one[0].log.c_str());
  // ...and the real rank 1 still can.
  ranks.push_back(spawn("join", env_for(1, 2, port)));
  wait_all(ranks, Clock::now() + milliseconds(30000));
  require_success(ranks);
}

TEST_CASE("world formation fails loudly on a size disagreement and on a duplicate rank") {
  {
    std::vector<Rank> ranks;
    const int port = start_rank0(ranks, "join", env_for(0, 2, 0, "5000"));
    ranks.push_back(spawn("join", env_for(1, 3, port, "5000")));
    wait_all(ranks, Clock::now() + milliseconds(15000));
    for (Rank& r : ranks) {
      const std::string log = read_file(r.log);
      INFO("stderr: ", log);
      CHECK(r.status == 3);
      CHECK(log.find("world size") != std::string::npos);
      ::unlink(r.log.c_str());
    }
  }
  {
    std::vector<Rank> ranks;
    const int port = start_rank0(ranks, "join", env_for(0, 3, 0, "5000"));
    ranks.push_back(spawn("join", env_for(1, 3, port, "5000")));
    ranks.push_back(spawn("join", env_for(1, 3, port, "5000")));
    wait_all(ranks, Clock::now() + milliseconds(15000));
    for (Rank& r : ranks) {
      const std::string log = read_file(r.log);
      INFO("stderr: ", log);
      CHECK(r.status == 3);
      CHECK(log.find("appears twice") != std::string::npos);
      ::unlink(r.log.c_str());
    }
  }
}

}  // namespace cc::comm::test

namespace cc::comm::test {
namespace {

// Counts the lines of `log` that contain `what`.
size_t count_lines(const std::string& log, const std::string& what) {
  size_t n = 0;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) n += line.find(what) != std::string::npos;
  return n;
}

}  // namespace

// A binary built with the verbs transport, started as an MLX jaccl job of two hosts without
// RDMA (emulated on this one: CLUSTERCOMM_HOST_ID; no RDMA stack in the kernel here): it runs
// on TCP and says why in one line; with CLUSTERCOMM_TRANSPORT=verbs it fails instead, naming
// the rank and the reason. Both ranks on one host (kind "one host"): shared memory carries
// the whole world, the cables are not needed and no line is printed.
TEST_CASE("MLX jaccl job without RDMA: auto falls back to TCP in one line, verbs fails") {
  const std::string matrix = "/tmp/clustercomm-ibv-" + std::to_string(getpid()) + ".json";
  std::ofstream(matrix) << R"([[null, "rdma_en2"], ["rdma_en3", null]])";
  for (const std::string kind : {"auto", "verbs", "one host"}) {
    CAPTURE(kind);
    const auto env = [&](int r, int port) -> std::map<std::string, std::string> {
      const bool one_host = kind == "one host";
      return {{"MLX_RANK", std::to_string(r)},
              {"MLX_IBV_DEVICES", matrix},
              {"MLX_JACCL_COORDINATOR", "127.0.0.1:" + std::to_string(port)},
              {"CLUSTERCOMM_TOKEN", "jaccl"},
              {"CLUSTERCOMM_TIMEOUT_MS", "20000"},
              {"CLUSTERCOMM_HOST_ID", one_host ? "mac" : "mac" + std::to_string(r)},
              {"CLUSTERCOMM_TRANSPORT", one_host ? "auto" : kind}};
    };
    std::vector<Rank> ranks;
    const int port = start_rank0(ranks, "collectives", env(0, 0));
    ranks.push_back(spawn("collectives", env(1, port)));
    wait_all(ranks, Clock::now() + milliseconds(120000));
    for (int r = 0; r < 2; ++r) {
      const std::string log = read_file(ranks[static_cast<size_t>(r)].log);
      INFO("rank ", r, " stderr: ", log);
      if (kind == "one host") {
        CHECK(ranks[static_cast<size_t>(r)].status == 0);
        CHECK(count_lines(log, "rank " + std::to_string(r) +
                                   " transport: shm (2 ranks on this host)") == 1);
        CHECK(count_lines(log, "on this host) +") == 0);  // no cable transport beside it
        CHECK(count_lines(log, "using TCP") == 0);
        CHECK(count_lines(log, "rdma_en2") == 0);
        ::unlink(ranks[static_cast<size_t>(r)].log.c_str());
        continue;
      }
      if (kind == "auto") {
        CHECK(ranks[static_cast<size_t>(r)].status == 0);
        CHECK(count_lines(log, "using TCP, not RDMA") == 1);
        CHECK(count_lines(log, "clustercomm: rank " + std::to_string(r) +
                                   ": using TCP, not RDMA: rank 0: ") == 1);
        CHECK(count_lines(log, "rank " + std::to_string(r) + " transport: tcp") == 1);
      } else {
        CHECK(ranks[static_cast<size_t>(r)].status != 0);
        CHECK(log.find("CLUSTERCOMM_TRANSPORT=verbs, but rank 0: ") != std::string::npos);
        CHECK(count_lines(log, "using TCP") == 0);
      }
      // The reason names rank 0's device, rdma_en2 (no RDMA stack here, or no such device).
      CHECK(log.find("rdma_en2") != std::string::npos);
      ::unlink(ranks[static_cast<size_t>(r)].log.c_str());
    }
  }
  ::unlink(matrix.c_str());
}

}  // namespace cc::comm::test

namespace cc::comm::test {
namespace {

// Opens `count` hostile connections at `to` from 4 threads, by i % 4: silent; 2000 bytes of
// garbage; a well-formed answer to the challenge under another token (nonce, MAC, hello:
// rank 0 reads it all and the MAC does not match); half an answer, then silence. All stay
// open (the caller holds them). Returns those that connected before `deadline`.
std::vector<tcp::Fd> flood(const tcp::Address& to, int count, Deadline deadline) {
  std::mutex mu;
  std::vector<tcp::Fd> out;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < count; i += 4) {
        try {
          tcp::Fd fd = tcp::connect_to(to, nullptr, deadline, "rank 0");
          std::string bytes;
          if (i % 4 == 1) bytes.assign(2000, 'x');
          if (i % 4 == 2) bytes = std::string(64, 'w') + std::string("\x05\0\0\0hello", 9);
          if (i % 4 == 3) bytes.assign(40, 'h');
          // The kernel's socket buffer takes these few bytes at once, or rank 0 closed it.
          if (!bytes.empty()) {
            [[maybe_unused]] const ssize_t n =
                ::send(fd.get(), bytes.data(), bytes.size(), tcp::send_flags());
          }
          std::lock_guard lock(mu);
          out.push_back(std::move(fd));
        } catch (const Error&) {
          // not connected before the deadline: counted by the caller
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  return out;
}

}  // namespace

// The hostile-input trial: rank 0 at RLIMIT_NOFILE 64 spun at 100% in accept() (EMFILE) and
// the real rank 1 was refused. Now 200 hostile connections opened before rank 1 starts must
// neither keep it out nor make rank 0 spin, at 64 and 1024 descriptors and with rank 0 started
// at its limit (16 descriptors free: accept() hits EMFILE).
TEST_CASE("a flood of 200 silent, garbage and wrong-token connections: the real world of 2 forms") {
  struct Case {
    std::string nofile, free_fds;
  };
  for (const Case& c : {Case{"64", ""}, Case{"1024", ""}, Case{"64", "16"}}) {
    CAPTURE(c.nofile);
    CAPTURE(c.free_fds);
    const auto timeout = milliseconds(20000);
    auto env0 = env_for(0, 2, 0, std::to_string(timeout.count()));
    env0["CLUSTERCOMM_TRANSPORT"] = "tcp";
    env0["CLUSTERCOMM_TEST_NOFILE"] = c.nofile;
    if (!c.free_fds.empty()) env0["CLUSTERCOMM_TEST_FREE_FDS"] = c.free_fds;
    std::vector<Rank> ranks;
    const int port = start_rank0(ranks, "join", env0);
    const tcp::Address coord = tcp::resolve("127.0.0.1:" + std::to_string(port));
    {
      // Rank 0 is up once its coordinator port accepts.
      tcp::Fd probe = tcp::connect_to(coord, nullptr, Clock::now() + milliseconds(10000), "rank 0");
    }
    const std::vector<tcp::Fd> hostile = flood(coord, 200, Clock::now() + milliseconds(8000));
    auto env1 = env_for(1, 2, port, std::to_string(timeout.count()));
    env1["CLUSTERCOMM_TRANSPORT"] = "tcp";
    ranks.push_back(spawn("join", env1));
    wait_all(ranks, Clock::now() + timeout + milliseconds(10000));
    const std::string at_limit = c.free_fds.empty() ? "" : ", at the limit";
    MESSAGE("RLIMIT_NOFILE ", c.nofile, at_limit, ": ",
            hostile.size(), " of 200 hostile connections opened; rank 0 used ",
            ranks[0].cpu_seconds, " s CPU in ",
            std::chrono::duration<double>(ranks[0].exited - ranks[0].started).count(), " s");
    CHECK(hostile.size() >= 150);  // the flood did reach rank 0
    // join: barrier, then all_reduce of the ranks' numbers checked against 0 + 1 (exit 1 if not)
    require_success(ranks);
    CHECK(ranks[1].exited - ranks[1].started < timeout);
    // No spin: a core at 100% in accept() would make this close to 1.
    const double wall = std::chrono::duration<double>(ranks[0].exited - ranks[0].started).count();
    CHECK(ranks[0].cpu_seconds < 0.5 * wall);
  }
}

TEST_CASE("without a token: loopback works, any other address is refused naming CLUSTERCOMM_TOKEN") {
  {
    std::vector<Rank> ranks;
    const int port = start_rank0(ranks, "join", env_for(0, 2, 0, "20000", ""));
    ranks.push_back(spawn("join", env_for(1, 2, port, "20000", "")));
    wait_all(ranks, Clock::now() + milliseconds(30000));
    require_success(ranks);
  }
  {
    // A coordinator outside loopback (TEST-NET-1: refused before anything is bound or sent,
    // so the port is never used).
    const int port = 29500;
    std::vector<Rank> ranks;
    const auto started = Clock::now();
    for (int r = 0; r < 2; ++r) {
      auto env = env_for(r, 2, port, "20000", "");
      env["CLUSTERCOMM_COORDINATOR"] = "192.0.2.1:" + std::to_string(port);
      ranks.push_back(spawn("join", env));
    }
    wait_all(ranks, Clock::now() + milliseconds(30000));
    for (Rank& r : ranks) {
      const std::string log = read_file(r.log);
      INFO("stderr: ", log);
      CHECK(r.status == 3);
      CHECK(log.find("CLUSTERCOMM_TOKEN is unset or empty") != std::string::npos);
      CHECK(log.find("coordinator address (CLUSTERCOMM_COORDINATOR) 192.0.2.1:") !=
            std::string::npos);
      CHECK(log.find("Set CLUSTERCOMM_TOKEN") != std::string::npos);
      CHECK(r.exited - started < milliseconds(10000));  // at once, not at the timeout
      ::unlink(r.log.c_str());
    }
  }
  {
    // A loopback coordinator, but a rank that would accept peers on every address (refused
    // before anything is bound or sent: the port is never used).
    const int port = 29500;
    auto env = env_for(1, 2, port, "20000", "");
    env["CLUSTERCOMM_LISTEN"] = "0.0.0.0:0";
    std::vector<Rank> ranks{spawn("join", env)};
    wait_all(ranks, Clock::now() + milliseconds(30000));
    const std::string log = read_file(ranks[0].log);
    INFO("stderr: ", log);
    CHECK(ranks[0].status == 3);
    CHECK(log.find("rank 1: CLUSTERCOMM_TOKEN is unset or empty, but the listen address "
                   "(CLUSTERCOMM_LISTEN) 0.0.0.0:0 is not a loopback address") !=
          std::string::npos);
    ::unlink(ranks[0].log.c_str());
  }
}

TEST_CASE(
    "rank 0 listens on the coordinator address only (all when told 0.0.0.0), routes reach its peer listener") {
  const std::vector<std::string> ips = non_loopback_ipv4();
  // Other local addresses: 127.0.0.2 is this host on Linux (all of 127/8), and its interfaces.
  std::vector<std::string> others{"127.0.0.2"};
  others.insert(others.end(), ips.begin(), ips.end());
  const auto reachable = [](const std::string& host, int port) {
    try {
      tcp::connect_to(tcp::resolve(host + ":" + std::to_string(port)), nullptr,
                      Clock::now() + milliseconds(300), "rank 0");
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  {
    std::vector<Rank> ranks;
    const int port = start_rank0(ranks, "join", env_for(0, 2, 0));
    tcp::connect_to(tcp::resolve("127.0.0.1:" + std::to_string(port)), nullptr,
                    Clock::now() + milliseconds(10000), "rank 0");
    for (const std::string& host : others) {
      CAPTURE(host);
      CHECK(!reachable(host, port));
    }
    ranks.push_back(spawn("join", env_for(1, 2, port)));
    wait_all(ranks, Clock::now() + milliseconds(30000));
    require_success(ranks);
  }
  if (ips.empty()) {
    MESSAGE("skipped the 0.0.0.0 half: this host has no IPv4 address but loopback");
    return;
  }
  {
    // Rank 0 told 0.0.0.0:P; the others name it 127.0.0.1:P. Rank 2 connects to rank 0's
    // advertised 0.0.0.0:P, which it must read as the coordinator's host.
    std::vector<Rank> ranks;
    auto env0 = env_for(0, 3, 0);
    env0["CLUSTERCOMM_COORDINATOR"] = "0.0.0.0:0";
    const int port = start_rank0(ranks, "join", env0);
    tcp::connect_to(tcp::resolve(ips[0] + ":" + std::to_string(port)), nullptr,
                    Clock::now() + milliseconds(10000), "rank 0");
    for (int r = 1; r < 3; ++r) ranks.push_back(spawn("join", env_for(r, 3, port)));
    wait_all(ranks, Clock::now() + milliseconds(30000));
    require_success(ranks);
  }
  {
    // Coordinator on this host's address, but rank 2 reaches ranks 0 and 1 over another
    // ("cable") address, 127.0.0.1, as CLUSTERCOMM_PEER_ADDRS routes do: rank 0's peer
    // listener is not the coordinator's.
    std::vector<Rank> ranks;
    int port = 0;
    for (int r = 0; r < 3; ++r) {
      auto env = env_for(r, 3, port);
      env["CLUSTERCOMM_COORDINATOR"] = ips[0] + ":" + std::to_string(port);
      if (r == 2) env["CLUSTERCOMM_PEER_ADDRS"] = "127.0.0.1,127.0.0.1,";
      if (r == 0) {
        port = start_rank0(ranks, "join", env);
      } else {
        ranks.push_back(spawn("join", env));
      }
    }
    wait_all(ranks, Clock::now() + milliseconds(30000));
    require_success(ranks);
  }
  {
    // Rank 0 told a host name ("localhost", which means loopback on rank 0's own host, as a
    // Mac's or Debian's own name may), the others its real address: a name is not where the
    // others reach it, so rank 0 listens on every address at the port.
    std::vector<Rank> ranks;
    auto env0 = env_for(0, 2, 0);
    env0["CLUSTERCOMM_COORDINATOR"] = "localhost:0";
    const int port = start_rank0(ranks, "join", env0);
    auto env1 = env_for(1, 2, port);
    env1["CLUSTERCOMM_COORDINATOR"] = ips[0] + ":" + std::to_string(port);
    ranks.push_back(spawn("join", env1));
    wait_all(ranks, Clock::now() + milliseconds(30000));
    require_success(ranks);
  }
}

}  // namespace cc::comm::test
