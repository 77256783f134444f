// The runner end to end on this machine: LocalExecutor "hosts" (fork/exec of the same wrapper
// that runs over SSH). The lab tests (tests/integration/launch/) run it over real sshd.
#include "launch/runner.h"

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "provision/mlx_hostfile.h"
#include "remote/local_executor.h"
#include "remote/outcomes.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace cc::launch;
namespace fs = std::filesystem;

namespace {

JobSpec spec_of(const std::string& yaml) {
  auto s = parse_job_spec(yaml, "/tmp/job.yaml");
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
  return *s;
}

// Real time that a test can move ahead at once: real ranks start and end in real time, and a
// timeout or grace period that the test wants passed is skipped rather than waited for.
class SkipClock final : public cc::util::Clock {
 public:
  std::chrono::steady_clock::time_point now() override {
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(skipped_.load());
  }
  void sleep_for(std::chrono::milliseconds d) override { std::this_thread::sleep_for(d); }
  void skip(std::chrono::milliseconds d) { skipped_ += d.count(); }

 private:
  std::atomic<std::chrono::milliseconds::rep> skipped_{0};
};

// A status callback that skips `d` once, when the status line first contains `when`.
std::function<void(const std::string&)> skip_when(SkipClock& clock, std::string when,
                                                  std::chrono::milliseconds d) {
  auto done = std::make_shared<bool>(false);
  return [&clock, when = std::move(when), d, done](const std::string& line) {
    if (*done || line.find(when) == std::string::npos) return;
    *done = true;
    clock.skip(d);
  };
}

// A TCP socket on 127.0.0.1, bound to a port the kernel picks (listening when `listen`): a
// port that is free (closed at once) or one that is held.
struct HeldPort {
  int fd = -1;
  int port = 0;
  explicit HeldPort(bool listen) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port = ntohs(a.sin_port);
    if (listen) REQUIRE(::listen(fd, 1) == 0);
  }
  ~HeldPort() { ::close(fd); }
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;
};

// A port no one held a moment ago: the jobs here never listen on it, but launch checks that
// nothing else does (another test's listener on 32323 must not fail these).
int free_port() {
  return HeldPort(false).port;
}

struct LocalJob {
  SkipClock clock;
  std::function<void(const std::string&)> status;
  fs::path logs = fs::temp_directory_path() / ("cc-runner-test-" + random_hex(4));
  std::string id = "t" + random_hex(6);
  ExecutorFactory connect;  // empty: LocalExecutor "local0", "local1", ...
  int port = 0;             // the coordinator port; 0: free_port()
  std::function<void(WorldPlan&)> adjust;  // changes the plan before the run, if set
  std::FILE* err = nullptr;                // clusterctl's own lines (OutputOptions::err)
  ~LocalJob() { fs::remove_all(logs); }

  cc::util::Result<JobOutcome> run(const JobSpec& spec, int hosts) {
    WorldPlan plan;
    for (int h = 0; h < hosts; ++h)
      plan.hosts.push_back({"local" + std::to_string(h), "127.0.0.1", ""});
    plan.ranks_per_host = spec.ranks_per_host;
    plan.runtime = spec.runtime;
    plan.env = spec.env;
    plan.token = "tok";
    if (port <= 0) port = free_port();
    plan.coordinator_port = port;
    if (adjust) adjust(plan);
    OutputOptions o;
    o.out = nullptr;
    o.err = err;
    std::vector<std::string> labels;
    for (int r = 0; r < plan.world_size(); ++r) labels.push_back(plan.hosts[plan.host_of(r)].name);
    auto mux = OutputMux::open(logs, labels, o);
    REQUIRE(mux.ok());
    RunnerOptions ro;
    ro.job_id = id;
    ro.clock = &clock;
    ro.status = status;
    ExecutorFactory local =
        [](size_t h) -> cc::util::Result<std::unique_ptr<cc::remote::Executor>> {
      return std::unique_ptr<cc::remote::Executor>(
          std::make_unique<cc::remote::LocalExecutor>("local" + std::to_string(h)));
    };
    return run_job(spec, plan, **mux, connect ? connect : local, ro);
  }
  // Any job directory of this job's runs (JOBID-RANDOM-hH, or -mpirun) still in /tmp.
  std::vector<std::string> dirs() const {
    std::vector<std::string> out;
    const std::string prefix = "clusterctl-job-" + id + "-";
    for (const auto& e : fs::directory_iterator("/tmp")) {
      if (e.path().filename().string().starts_with(prefix)) out.push_back(e.path().string());
    }
    return out;
  }
  bool dirs_left(int /*hosts*/) const { return !dirs().empty(); }
};

// `n` ranks, rank r on host "h{r+1}", each started and still running (the watcher's view
// during the job), for failure_cause.
std::vector<RankOutcome> running_ranks(int n) {
  std::vector<RankOutcome> ranks(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    ranks[static_cast<size_t>(r)].rank = r;
    ranks[static_cast<size_t>(r)].host = "h" + std::to_string(r + 1);
    ranks[static_cast<size_t>(r)].started = true;
  }
  return ranks;
}

}  // namespace

TEST_CASE("runner: every rank exits 0 -> ok, per-rank logs, job directories removed") {
  JobSpec spec = spec_of(
      "name: ok\nhosts: [a, b]\nranks_per_host: 2\n"
      "command: {shell: 'echo \"rank $CLUSTERCOMM_RANK of $CLUSTERCOMM_SIZE $X\"; echo e >&2'}\n"
      "env: {X: \"x y\"}\n");
  LocalJob job;
  auto out = job.run(spec, 2);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kOk);
  REQUIRE(out->ranks.size() == 4);
  for (int r = 0; r < 4; ++r) {
    CHECK(out->ranks[static_cast<size_t>(r)].exit_status == 0);
    CHECK(out->ranks[static_cast<size_t>(r)].started);
    CHECK(*cc::util::read_file(job.logs / fmt::format("rank-{}.out", r)) ==
          fmt::format("rank {} of 4 x y\n", r));
    CHECK(*cc::util::read_file(job.logs / fmt::format("rank-{}.err", r)) == "e\n");
  }
  CHECK(out->ranks[3].host == "local1");
  CHECK(out->first_failed == -1);
  CHECK_FALSE(job.dirs_left(2));
  CHECK(render_summary(*out).find("job succeeded: 4 ranks exited 0") != std::string::npos);
}

TEST_CASE("runner: the first failing rank ends the others (SIGTERM) -> job failed, named") {
  JobSpec spec = spec_of(
      "name: fail\nhosts: [a, b, c]\n"
      "command: {shell: 'if [ $CLUSTERCOMM_RANK = 1 ]; then sleep 0.3; exit 3; fi; exec sleep "
      "60'}\n"
      "timeouts: {grace: 2}\n");
  LocalJob job;
  auto out = job.run(spec, 3);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kJobFailed);
  CHECK(out->first_failed == 1);
  CHECK(out->ranks[1].exit_status == 3);
  CHECK(out->ranks[0].exit_status == 128 + 15);
  CHECK(out->ranks[0].ended_by_us);
  CHECK(out->ranks[2].exit_status == 128 + 15);
  CHECK(out->duration < std::chrono::seconds(10));
  CHECK_FALSE(job.dirs_left(3));
  std::string summary = render_summary(*out);
  CHECK(summary.find("rank 1 on local1 failed (exit 3)") != std::string::npos);
  CHECK(summary.find("<- failed first") != std::string::npos);
  CHECK(summary.find("SIGTERM") != std::string::npos);
}

TEST_CASE("runner: the rank that ended first on its host failed first, not the first reported") {
  // mlx-ring: rank 1 exited 3, its peers failed on the closed connection (exit 1), and rank
  // 0's exit reached the launcher first: the summary blamed rank 0. Here rank 1's exit status
  // is held back as a rank's daemon holding its output holds it (up to the relays' 2 s; a
  // process group of its own, or the wrapper's SIGKILL of the rank's group would end it),
  // while rank 0 fails 0.2 s after rank 1 ended and is reported at once.
  const fs::path flag = fs::temp_directory_path() / ("cc-first-" + random_hex(4));
  JobSpec spec = spec_of(fmt::format(
      "name: order\nhosts: [a, b, c]\n"
      "command: {{shell: 'case $CLUSTERCOMM_RANK in 1) perl -e \"setpgrp(0, 0); sleep 3\" & sleep 0.3; : >{0}; exit 3;; "
      "0) while [ ! -e {0} ]; do sleep 0.05; done; sleep 0.2; echo failed >&2; exit 1;; "
      "*) exec sleep 60;; esac'}}\n"
      "timeouts: {{grace: 2}}\n",
      flag.string()));
  LocalJob job;
  auto out = job.run(spec, 3);
  fs::remove(flag);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kJobFailed);
  CHECK(out->ranks[1].exit_status == 3);
  CHECK(out->ranks[0].exit_status == 1);
  REQUIRE(out->ranks[1].exited_at.has_value());
  REQUIRE(out->ranks[0].exited_at.has_value());
  CHECK(*out->ranks[1].exited_at < *out->ranks[0].exited_at);
  CHECK(out->first_failed == 1);
  CHECK_FALSE(out->ranks[1].ended_by_us);
  CHECK(out->reason == "rank 1 on local1 failed (exit 3)");
  CHECK_FALSE(job.dirs_left(3));
}

TEST_CASE("runner: a failure whose error names the coordinator is a consequence of rank 0's") {
  // Two launches of one job at once: this one's rank 0 cannot listen on the coordinator port,
  // its rank 1 reaches the other job's coordinator there and fails auth first. The cause is
  // rank 0's failure (it still gets its error out during the teardown: it traps SIGTERM here
  // so that it reports after rank 1, whatever the machine's load).
  const std::string ready = "/tmp/cc-coord-" + random_hex(6);
  JobSpec spec = spec_of(fmt::format(
      "name: two\nhosts: [a, b, c]\n"
      "command: {{shell: 'case $CLUSTERCOMM_RANK in 0) trap \"\" TERM; : >{0}; sleep 0.5; echo "
      "\"clustercomm.WorldError: rank 0: cannot listen on 127.0.0.1:42503: Address already in "
      "use\" >&2; exit 1;; 1) while [ ! -e {0} ]; do sleep 0.05; done; echo "
      "\"clustercomm.AuthError: "
      "rank 1: the coordinator (rank 0) at 127.0.0.1:42503 refused this rank\" >&2; exit 1;; "
      "*) exec sleep 60;; esac'}}\n"
      "timeouts: {{grace: 5}}\n",
      ready));
  LocalJob job;
  auto out = job.run(spec, 3);
  std::filesystem::remove(ready);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kJobFailed);
  CHECK(out->ranks[1].exit_status == 1);
  CHECK(out->ranks[0].exit_status == 1);
  CHECK(out->first_failed == 0);
  CHECK(out->consequence == 1);
  CHECK(job_reason(*out) ==
        "rank 0 on local0 failed (exit 1); rank 1 on local1 failed before it (exit 1), but its "
        "error names rank 0: a consequence");
  const std::string summary = render_summary(*out);
  CHECK(summary.find("<- the cause (the others' errors name it)") != std::string::npos);
  CHECK(summary.find("failed first, a consequence: its error names rank 0") != std::string::npos);
}

TEST_CASE("runner: a coordinator port held on rank 0's host fails the job before any rank starts") {
  // Rank 0 named the port only about a second after every rank had started, or another job's
  // coordinator there refused the others first.
  for (const bool listening : {true, false}) {  // a listener, or a socket only bound to it
    CAPTURE(listening);
    HeldPort held(listening);
    const std::string ran = "/tmp/cc-port-ran-" + random_hex(6);
    JobSpec spec = spec_of(fmt::format("name: port\nhosts: [a, b]\ncommand: {{shell: ': >{}'}}\n",
                                       ran));
    LocalJob job;
    job.port = held.port;
    const auto t0 = std::chrono::steady_clock::now();
    auto out = job.run(spec, 2);
    REQUIRE_FALSE(out.ok());
    CHECK(out.error().code == cc::util::ExitCode::kCheckFailed);
    const std::string& msg = out.error().message;
    CHECK(msg.find(fmt::format("the coordinator port 127.0.0.1:{} on local0 (rank 0's host) is "
                               "held by another program",
                               held.port)) != std::string::npos);
    CHECK(msg.find("`ss -ltnp` on Linux") != std::string::npos);
    CHECK(msg.find("choose another port: `coordinator_port:` in the job file (now " +
                   std::to_string(held.port) + ")") != std::string::npos);
    CHECK_FALSE(fs::exists(ran));  // no rank ran
    std::filesystem::remove(ran);
    CHECK_FALSE(job.dirs_left(2));
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  }
  // Free: the job runs.
  JobSpec spec = spec_of("name: port\nhosts: [a]\ncommand: [true]\n");
  LocalJob job;
  auto out = job.run(spec, 1);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kOk);
}

TEST_CASE("runner: the coordinator port is checked for mlx-ring and at the address a name gives") {
  // mlx-ring's rank 0 listens on its ips from coordinator_port up: it was never checked. A
  // name was bound as 0.0.0.0, so a program on another address of the host (127.0.0.2) failed
  // a job whose rank 0 would listen on the name's (127.0.0.1) without trouble.
  {
    HeldPort held(true);
    const std::string ran = "/tmp/cc-port-ran-" + random_hex(6);
    // (The job file of an MLX runtime names a hostfile, which this test gives the plan.)
    JobSpec spec = spec_of(fmt::format("name: port\nhosts: [a, b]\n"
                                       "command: {{shell: ': >{}'}}\n",
                                       ran));
    spec.runtime = cc::launch::Runtime::kMlxRing;
    LocalJob job;
    job.port = held.port;
    job.adjust = [](WorldPlan& p) {
      cc::provision::MlxHostfile hf;
      hf.backend = "ring";
      hf.hosts = {{"local0", {"127.0.0.1"}, {}}, {"local1", {"127.0.0.1"}, {}}};
      p.mlx = hf;
    };
    auto out = job.run(spec, 2);
    REQUIRE_FALSE(out.ok());
    CHECK(out.error().code == cc::util::ExitCode::kCheckFailed);
    CHECK(out.error().message.find(fmt::format("the coordinator port 127.0.0.1:{} on local0 "
                                               "(rank 0's host) is held by another program",
                                               held.port)) != std::string::npos);
    CHECK_FALSE(fs::exists(ran));
    fs::remove(ran);
  }
  // A listener on 127.0.0.2 only (Linux routes all of 127/8 to lo; macOS has 127.0.0.1 alone).
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(0x7f000002);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    ::close(fd);
    MESSAGE("127.0.0.2 is not an address of this machine: the name case is not tested here");
    return;
  }
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  REQUIRE(::listen(fd, 1) == 0);
  JobSpec spec = spec_of("name: port\nhosts: [a]\ncommand: [true]\n");
  LocalJob job;
  job.port = ntohs(a.sin_port);
  job.adjust = [](WorldPlan& p) { p.hosts.front().address = "localhost"; };
  auto out = job.run(spec, 1);
  ::close(fd);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kOk);
}

TEST_CASE("runner: mlx-ring checks every rank's ports, not only rank 0's, before any rank starts") {
  // MLX's ring backend has every rank listen on its own ips (MLX_HOSTFILE, the ports counting up
  // from coordinator_port across the ranks). Only rank 0's were checked: a port held on rank 2's
  // host started every rank, and the job failed with exit 4 once rank 2 could not bind.
  // A held port P whose two ports below are free: ranks 0, 1, 2 get P-2, P-1, P.
  std::unique_ptr<HeldPort> held;
  for (int attempt = 0; attempt < 50 && !held; ++attempt) {
    auto h = std::make_unique<HeldPort>(true);
    auto bindable = [](int port) {
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<uint16_t>(port));
      const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      ::close(fd);
      return ok;
    };
    if (h->port > 1026 && bindable(h->port - 1) && bindable(h->port - 2)) held = std::move(h);
  }
  REQUIRE(held);
  const std::string ran = "/tmp/cc-port-ran-" + random_hex(6);
  // (The job file of an MLX runtime names a hostfile, which this test gives the plan.)
  JobSpec spec = spec_of(fmt::format("name: port\nhosts: [a, b, c]\n"
                                     "command: {{shell: ': >{}'}}\n",
                                     ran));
  spec.runtime = cc::launch::Runtime::kMlxRing;
  LocalJob job;
  job.port = held->port - 2;
  job.adjust = [](WorldPlan& p) {
    cc::provision::MlxHostfile hf;
    hf.backend = "ring";
    hf.hosts = {{"local0", {"127.0.0.1"}, {}},
                {"local1", {"127.0.0.1"}, {}},
                {"local2", {"127.0.0.1"}, {}}};
    p.mlx = hf;
  };
  auto out = job.run(spec, 3);
  REQUIRE_FALSE(out.ok());
  CHECK(out.error().code == cc::util::ExitCode::kCheckFailed);
  const std::string& msg = out.error().message;
  CAPTURE(msg);
  CHECK(msg.find(fmt::format("the port 127.0.0.1:{} on local2 (rank 2's host) is held by another "
                             "program: rank 2 could not listen there, so no rank was started",
                             held->port)) != std::string::npos);
  CHECK(msg.find(fmt::format("choose another port: `coordinator_port:` in the job file (now {}); "
                             "under mlx-ring every rank listens on ports of its own, {} to {} "
                             "here",
                             job.port, job.port, held->port)) != std::string::npos);
  CHECK(msg.find("local0") == std::string::npos);  // rank 0's and rank 1's ports are free
  CHECK(msg.find("local1") == std::string::npos);
  CHECK_FALSE(fs::exists(ran));  // no rank ran
  fs::remove(ran);
  CHECK_FALSE(job.dirs_left(3));
}

namespace {
// This machine, but the check of the coordinator port answers as a host without perl and
// python3 does (wrapper.h, port_held_argv).
class NoPortCheck final : public cc::remote::Executor {
 public:
  explicit NoPortCheck(std::string host) : local_(host), host_(std::move(host)) {}
  const std::string& host() const override { return host_; }
  cc::util::Result<cc::remote::CommandResult> run(const cc::remote::Command& cmd,
                                                  const cc::remote::RunOptions& opts) override {
    if (!opts.what.starts_with("the check of port")) return local_.run(cmd, opts);
    cc::remote::CommandResult r;
    r.exit_status = 0;
    r.out = "unchecked\n";
    return r;
  }
  cc::util::Status upload(const fs::path& local, const std::string& remote_path, unsigned mode,
                          std::chrono::milliseconds timeout) override {
    return local_.upload(local, remote_path, mode, timeout);
  }

 private:
  cc::remote::LocalExecutor local_;
  std::string host_;
};
}  // namespace

TEST_CASE("runner: a coordinator port that cannot be checked is said once, and the job runs") {
  // A host without perl was not checked, and nothing said so.
  JobSpec spec = spec_of("name: port\nhosts: [a, b]\ncommand: [true]\n");
  LocalJob job;
  job.connect = [](size_t h) -> cc::util::Result<std::unique_ptr<cc::remote::Executor>> {
    return std::unique_ptr<cc::remote::Executor>(
        std::make_unique<NoPortCheck>("local" + std::to_string(h)));
  };
  std::FILE* err = std::tmpfile();
  REQUIRE(err != nullptr);
  job.err = err;
  auto out = job.run(spec, 2);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kOk);
  std::rewind(err);
  std::string text;
  for (int c; (c = std::fgetc(err)) != EOF;) text += static_cast<char>(c);
  std::fclose(err);
  const std::string line = fmt::format(
      "clusterctl: warning: the coordinator port 127.0.0.1:{} on local0 (rank 0's host) was not "
      "checked before the ranks start: that host has neither perl nor python3; if another "
      "program holds it, rank 0 will say so once it starts\n",
      job.port);
  CAPTURE(text);
  CHECK(text.find(line) != std::string::npos);
  CHECK(text.find("not checked") == text.rfind("not checked"));  // once
}

TEST_CASE("runner: a coordinator name rank 0's host resolves to loopback is refused first") {
  // Gloo's connectFullMesh "timed out connecting ... remote=[127.0.0.1]" on a cluster whose
  // host names resolved to loopback on their own hosts (aws-samples/aws-do-eks#69; Debian's
  // `127.0.1.1 HOSTNAME` in /etc/hosts does it too): rank 0 bound the coordinator's name there,
  // and every rank on another host waited for it until its timeout. `localhost` stands for
  // such a name: this machine resolves it to 127.0.0.1.
  const std::string ran = "/tmp/cc-loopback-ran-" + random_hex(6);
  JobSpec spec = spec_of(fmt::format("name: lo\nhosts: [a, b]\ncommand: [touch, {}]\n", ran));
  LocalJob job;
  job.adjust = [](WorldPlan& p) {
    for (LaunchHost& h : p.hosts) h.address = "localhost";
  };
  auto out = job.run(spec, 2);
  REQUIRE_FALSE(out.ok());
  CHECK(out.error().code == cc::util::ExitCode::kCheckFailed);
  CHECK(out.error().message ==
        "rank 0's coordinator address 'localhost' resolves on local0 (rank 0's host) to "
        "127.0.0.1, a loopback address (as a line `127.0.1.1 localhost` in its /etc/hosts makes "
        "it): rank 0 would listen there, where the ranks on the other 1 host cannot reach it, "
        "and they would wait for it until their timeout. Give local0 an `address:` in the "
        "inventory that every host reaches, or have localhost resolve to such an address on "
        "local0; no rank was started");
  CHECK_FALSE(fs::exists(ran));  // no rank ran
  CHECK_FALSE(job.dirs_left(2));

  // One host: its ranks all reach it there. An address written as 127.0.0.1 is taken as meant
  // (every other runner test runs so).
  JobSpec one = spec_of(fmt::format("name: lo\nhosts: [a]\ncommand: [touch, {}]\n", ran));
  LocalJob single;
  single.adjust = [](WorldPlan& p) { p.hosts.front().address = "localhost"; };
  auto ok = single.run(one, 1);
  REQUIRE(ok.ok());
  CHECK(ok->code == cc::util::ExitCode::kOk);
  CHECK(fs::exists(ran));
  fs::remove(ran);
}

TEST_CASE("first_cause: a first failure that only says a peer went away is a consequence") {
  // mlx-ring, rank 1 sys.exit(3) after init: its ring connections closed before its process
  // ended, and rank 0, failing on them, was both reported and ended first: the summary blamed
  // rank 0 ("exit 1", "[ring] Receiving from socket 3 failed with errno 104").
  std::vector<RankOutcome> ranks(4);
  for (int r = 0; r < 4; ++r) {
    ranks[static_cast<size_t>(r)].rank = r;
    ranks[static_cast<size_t>(r)].host = "h" + std::to_string(r + 1);
  }
  ranks[0].exit_status = 1;
  ranks[0].exited_at = 100.1;
  ranks[1].exit_status = 3;
  ranks[1].exited_at = 100.3;
  ranks[1].ended_by_us = true;  // reported during the teardown
  ranks[2].exit_status = 1;
  ranks[2].exited_at = 100.2;
  ranks[3].exit_status = 128 + 15;
  ranks[3].signaled = true;
  const std::vector<std::string> lines = {"[ring] Receiving from socket 3 failed with errno 104",
                                          "", "RuntimeError: [ring] connection to a peer was lost",
                                          ""};
  CHECK(peer_loss(lines[0]));
  CHECK(peer_loss(lines[2]));
  CHECK(peer_loss("recv: Connection reset by peer"));
  CHECK(peer_loss("[ring] Too many send/recv errors. Failing pending tasks..."));
  CHECK(peer_loss("[ring] Sending to socket 4 failed with errno 32"));
  CHECK_FALSE(peer_loss("ValueError: bad shape"));
  CHECK(first_cause(ranks, 0, lines) == 1);
  CHECK(first_cause(ranks, 2, lines) == 1);
  // A first failure of its own stays the first.
  CHECK(first_cause(ranks, 1, lines) == 1);
  std::vector<std::string> own = lines;
  own[0] = "ValueError: bad shape";
  CHECK(first_cause(ranks, 0, own) == 0);
  // No other rank failed on its own (rank 3 is the teardown's SIGTERM): the first stays.
  ranks[1].exit_status = 128 + 15;
  ranks[1].signaled = true;
  CHECK(first_cause(ranks, 0, lines) == 0);
}

TEST_CASE("root_cause: the rank a first failure's error names, if it failed on its own") {
  std::vector<RankOutcome> ranks(3);
  for (int r = 0; r < 3; ++r) ranks[static_cast<size_t>(r)].rank = r;
  ranks[0].exit_status = 1;  // its own error
  ranks[1].exit_status = 1;
  ranks[2].exit_status = 128 + 15;
  ranks[2].signaled = true;  // ended by clusterctl
  const std::vector<std::string> coord = {"", "rank 1: the coordinator (rank 0) at h1:1 refused",
                                          ""};
  CHECK(root_cause(ranks, 1, coord) == 0);
  CHECK(root_cause(ranks, 1, {"", "rank 1: rank 2 closed the connection", ""}) == 1);  // 2: ours
  // A list names its ranks as one "rank K" does: rank 0 failed on its own, rank 2 was ours.
  CHECK(root_cause(ranks, 1, {"", "rank 1: ranks 0, 2 never arrived", ""}) == 0);
  CHECK(root_cause(ranks, 1, {"", "rank 1: ranks 2 and 0 never arrived", ""}) == 0);
  CHECK(root_cause(ranks, 1, {"", "rank 1: timed out waiting for ranks 2", ""}) == 1);
  CHECK(root_cause(ranks, 1, {"", "Traceback: crank 0 failed", ""}) == 1);  // no word "rank"
  CHECK(root_cause(ranks, 1, {"", "", ""}) == 1);
  // Rank 1 compared its data with rank 0's, and rank 0 failed on its own naming rank 1: rank 0
  // is the consequence (templates/python-sgd.yaml with SGD_CORRUPT_RANK).
  CHECK(root_cause(ranks, 1,
                   {"rank 0: rank 1 closed the connection",
                    "rank 1: FAIL: weights differ from rank 0's", ""}) == 1);
  CHECK(root_cause(ranks, -1, coord) == -1);
  ranks[0].signaled = true;  // rank 0 died by clusterctl's SIGTERM: it caused nothing
  ranks[0].exit_status = 128 + 15;
  CHECK(root_cause(ranks, 1, coord) == 1);
}

TEST_CASE("failure_cause: the rank a first failure waited for, still running, is named beside it") {
  // nccl-tests#102's shape: rank 2 never joined (it hung before init); rank 0 gave up naming it
  // and the summary blamed rank 0 alone ("coordinator" names rank 0, and rank 2, ended by
  // clusterctl, failed on nothing of its own).
  std::vector<RankOutcome> ranks = running_ranks(3);
  ranks[0].finished = true;
  ranks[0].exit_status = 3;
  const std::vector<std::string> lines = {
      "clustercomm: rank 2 never joined the coordinator within 4000 ms", "", ""};
  // During the job (the watcher's "ending the job" line): rank 2 still runs.
  const FailureCause during = failure_cause(ranks, 0, lines);
  CHECK(during.cause == 0);
  CHECK(during.reason ==
        "rank 0 on h1 failed (exit 3); its error names rank 2 on h3, still running: look there "
        "first");
  CHECK(during.brief == during.reason);
  // After it (the summary): clusterctl ended ranks 1 and 2.
  for (int r : {1, 2}) {
    ranks[static_cast<size_t>(r)].finished = ranks[static_cast<size_t>(r)].signaled = true;
    ranks[static_cast<size_t>(r)].ended_by_us = true;
    ranks[static_cast<size_t>(r)].exit_status = 128 + 15;
  }
  CHECK(failure_cause(ranks, 0, lines).reason ==
        "rank 0 on h1 failed (exit 3); its error names rank 2 on h3, which was still running "
        "until clusterctl ended it: look there first");
  // A named rank that had ended well, or that is the failed rank itself, adds nothing.
  ranks[2].exit_status = 0;
  ranks[2].signaled = ranks[2].ended_by_us = false;
  CHECK(failure_cause(ranks, 0, lines).reason == "rank 0 on h1 failed (exit 3)");
  CHECK(failure_cause(ranks, 0, {"rank 0: bad shape", "", ""}).reason ==
        "rank 0 on h1 failed (exit 3)");
}

TEST_CASE("failure_cause: each rank of a list the first failure waited for is named") {
  // comm's describe_ranks: "ranks 1, 2 never joined the coordinator" (bootstrap.cc), "timed out
  // waiting for ranks 1, 3" (tcp_transport.cc). Only a single "rank K" was read as naming one.
  std::vector<RankOutcome> ranks = running_ranks(7);
  ranks[0].finished = true;
  ranks[0].exit_status = 3;
  std::vector<std::string> lines(7);
  lines[0] = "clustercomm: ranks 1, 2 never joined the coordinator within 4000 ms (are they "
             "running, with this coordinator's address h1:29500 and the same job token?)";
  CHECK(failure_cause(ranks, 0, lines).reason ==
        "rank 0 on h1 failed (exit 3); its error names rank 1 on h2 and rank 2 on h3, still "
        "running: look there first");
  // Rank 3 is waiting too (a rank that ended well is no lead), and another library's English.
  ranks[2].finished = true;
  ranks[2].exit_status = 0;
  lines[0] = "timed out waiting for ranks 1, 2, and 3";
  CHECK(failure_cause(ranks, 0, lines).reason ==
        "rank 0 on h1 failed (exit 3); its error names rank 1 on h2 and rank 3 on h4, still "
        "running: look there first");
  // After the job: clusterctl ended them; and one that had ended already by then, apart.
  ranks[1].finished = ranks[1].signaled = ranks[1].ended_by_us = true;
  ranks[1].exit_status = 128 + 15;
  lines[0] = "clustercomm: ranks 1, 3 never connected to rank 0 within 4000 ms";
  CHECK(failure_cause(ranks, 0, lines).reason ==
        "rank 0 on h1 failed (exit 3); its error names rank 3 on h4, still running; and rank 1 "
        "on h2, which was still running until clusterctl ended it: look there first");
  ranks[3] = ranks[1];
  ranks[3].rank = 3;
  ranks[3].host = "h4";
  CHECK(failure_cause(ranks, 0, lines).brief ==
        "rank 0 on h1 failed (exit 3); its error names rank 1 on h2 and rank 3 on h4, which were "
        "still running until clusterctl ended them: look there first");
  // A long list is cut after four.
  lines[0] = "clustercomm: ranks 1, 3, 4, 5, 6 never joined the coordinator within 4000 ms";
  CHECK(failure_cause(ranks, 0, lines).reason ==
        "rank 0 on h1 failed (exit 3); its error names rank 4 on h5 and rank 5 on h6, still "
        "running; and rank 1 on h2 and rank 3 on h4, which were still running until clusterctl "
        "ended them (and 1 more): look there first");
}

TEST_CASE("runner: a rank that ignores SIGTERM gets SIGKILL after the grace period") {
  // Rank 0 fails only once rank 1 ignores SIGTERM (on a loaded machine rank 1's shell may not
  // have reached its trap when rank 0's failure starts the teardown).
  const std::string ready = "/tmp/cc-stubborn-" + random_hex(6);
  JobSpec spec = spec_of(fmt::format(
      "name: stubborn\nhosts: [a, b]\n"
      "command: {{shell: 'if [ $CLUSTERCOMM_RANK = 0 ]; then while [ ! -e {0} ]; do sleep 0.05; "
      "done; exit 1; fi; trap \"\" TERM; : >{0}; while :; do sleep 0.1; done'}}\n"
      "timeouts: {{grace: 30}}\n",
      ready));
  LocalJob job;
  job.status = skip_when(job.clock, "(ending)", std::chrono::seconds(30));  // the grace, skipped
  auto out = job.run(spec, 2);
  fs::remove(ready);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kJobFailed);
  CHECK(out->first_failed == 0);
  CHECK(out->ranks[1].exit_status == 128 + 9);
  CHECK(out->duration >= std::chrono::seconds(30));  // in the job's clock
  CHECK_FALSE(job.dirs_left(2));
}

TEST_CASE("runner: uploads land in the job directory, the rank's working directory") {
  auto src = fs::temp_directory_path() / ("cc-upload-" + random_hex(4));
  REQUIRE(cc::util::write_file_atomic(src, "payload\n", 0600).ok());
  JobSpec spec =
      spec_of(fmt::format("name: up\nhosts: [a]\ncommand: [cat, data.txt]\n"
                          "upload: [{{src: {}, dest: data.txt, mode: \"0640\"}}]\n",
                          src.string()));
  LocalJob job;
  auto out = job.run(spec, 1);
  fs::remove(src);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kOk);
  CHECK(*cc::util::read_file(job.logs / "rank-0.out") == "payload\n");
  CHECK_FALSE(job.dirs_left(1));
}

namespace {
// A LocalExecutor whose upload is cut short by Ctrl-C, as SshExecutor's is.
class InterruptedUpload final : public cc::remote::Executor {
 public:
  explicit InterruptedUpload(std::string host) : local_(host), host_(std::move(host)) {}
  const std::string& host() const override { return host_; }
  cc::util::Result<cc::remote::CommandResult> run(const cc::remote::Command& cmd,
                                                  const cc::remote::RunOptions& opts) override {
    return local_.run(cmd, opts);
  }
  cc::util::Status upload(const fs::path& local, const std::string&, unsigned,
                          std::chrono::milliseconds) override {
    cc::util::set_interrupted(true);
    return cc::util::error(cc::util::ExitCode::kInterrupted,
                           fmt::format("{}: interrupted (Ctrl-C); upload of {} stopped", host_,
                                       local.string()));
  }

 private:
  cc::remote::LocalExecutor local_;
  std::string host_;
};
}  // namespace

TEST_CASE("runner: Ctrl-C during an upload says interrupted, not a host or job file problem") {
  auto src = fs::temp_directory_path() / ("cc-upload-" + random_hex(4));
  REQUIRE(cc::util::write_file_atomic(src, "payload\n", 0600).ok());
  JobSpec spec = spec_of(fmt::format("name: upl\nhosts: [a, b]\ncommand: [true]\n"
                                     "upload: [{{src: {}, dest: data.txt}}]\n",
                                     src.string()));
  LocalJob job;
  job.connect = [](size_t h) -> cc::util::Result<std::unique_ptr<cc::remote::Executor>> {
    return std::unique_ptr<cc::remote::Executor>(
        std::make_unique<InterruptedUpload>("local" + std::to_string(h)));
  };
  auto out = job.run(spec, 2);
  cc::util::set_interrupted(false);
  fs::remove(src);
  REQUIRE_FALSE(out.ok());
  CHECK(out.error().code == cc::util::ExitCode::kInterrupted);
  // Worded as every command words it (util::interrupted_error), naming the signal.
  CHECK(out.error().message ==
        "interrupted (Ctrl-C) while the hosts were set up: no rank was started");
  CHECK_FALSE(job.dirs_left(2));
}

namespace {
// A LocalExecutor that, like SshExecutor when it must connect, refuses to run while the
// Ctrl-C flag is set: the cleanup after an interrupt must set the flag aside to reach it.
class RefusesWhileInterrupted final : public cc::remote::Executor {
 public:
  explicit RefusesWhileInterrupted(std::string host) : local_(host), host_(std::move(host)) {}
  const std::string& host() const override { return host_; }
  cc::util::Result<cc::remote::CommandResult> run(const cc::remote::Command& cmd,
                                                  const cc::remote::RunOptions& opts) override {
    if (cc::util::interrupted()) {
      return cc::util::error(cc::util::ExitCode::kInterrupted,
                             fmt::format("{}: cannot connect to root@10.0.0.3:22: {} while "
                                         "connecting",
                                         host_, cc::util::interruption()));
    }
    return local_.run(cmd, opts);
  }
  cc::util::Status upload(const fs::path& local, const std::string& remote, unsigned mode,
                          std::chrono::milliseconds timeout) override {
    return local_.upload(local, remote, mode, timeout);
  }

 private:
  cc::remote::LocalExecutor local_;
  std::string host_;
};
}  // namespace

TEST_CASE("runner: SIGTERM while the ranks connect: no host lost, every job directory removed") {
  // `launch` killed 0.4 s in: the ranks' connects gave up on the signal, each host was
  // reported "connection lost: host h1 lost: ... terminated (SIGTERM) while looking up", passed
  // by as lost by the cleanup, and its job directory stayed (no wrapper, so no watchdog).
  JobSpec spec = spec_of("name: sig\nhosts: [a, b]\ncommand: [sleep, '60']\n");
  std::atomic<int> calls[2] = {0, 0};
  LocalJob job;
  job.connect = [&calls](size_t h) -> cc::util::Result<std::unique_ptr<cc::remote::Executor>> {
    const std::string name = "local" + std::to_string(h);
    if (calls[h]++ > 0) {  // a rank's session: the signal comes while it connects
      cc::util::set_interrupted(true, SIGTERM);
    }
    return std::unique_ptr<cc::remote::Executor>(std::make_unique<RefusesWhileInterrupted>(name));
  };
  auto out = job.run(spec, 2);
  const bool still_interrupted = cc::util::interrupted();
  const int signal = cc::util::interrupt_signal();
  cc::util::set_interrupted(false);
  REQUIRE(out.ok());
  CHECK(still_interrupted);  // set back after the cleanup: main() exits 130
  CHECK(signal == SIGTERM);
  CHECK(out->code == cc::util::ExitCode::kInterrupted);
  CHECK(out->first_failed == -1);
  CHECK(out->cleanup_problems.empty());
  CHECK_FALSE(job.dirs_left(2));
  for (const auto& r : out->ranks) {
    CHECK_FALSE(r.started);
    CHECK(r.ended_by_us);
    CHECK(r.problem == fmt::format("never started: terminated (SIGTERM) while connecting to {}",
                                   r.host));
  }
  const std::string summary = render_summary(*out);
  CHECK(summary.find("lost") == std::string::npos);
  CHECK(summary.find("failed first") == std::string::npos);
  CHECK(summary.find("never started") != std::string::npos);
}

TEST_CASE("runner: a second Ctrl-C while the job ends sends SIGKILL at once, not after the grace") {
  // Both ranks ignore SIGTERM; the first "Ctrl-C" comes once both are running with their trap
  // set, the second once the watcher says the job is ending. Without the second, the job
  // would wait the whole grace period (30 s) for them.
  const std::string ready = "/tmp/cc-twice-" + random_hex(6);
  JobSpec spec = spec_of(fmt::format(
      "name: twice\nhosts: [a, b]\n"
      "command: {{shell: 'trap \"\" TERM; : >{0}-$CLUSTERCOMM_RANK; while :; do sleep 0.1; "
      "done'}}\n"
      "timeouts: {{grace: 30}}\n",
      ready));
  LocalJob job;
  job.status = [&ready](const std::string& line) {
    const int n = cc::util::interrupt_count();
    if (n == 0 && fs::exists(ready + "-0") && fs::exists(ready + "-1")) {
      cc::util::set_interrupt_count(1);
    } else if (n == 1 && line.find("(ending)") != std::string::npos) {
      cc::util::set_interrupt_count(2);
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto out = job.run(spec, 2);
  const auto took = std::chrono::steady_clock::now() - t0;
  cc::util::set_interrupted(false);
  fs::remove(ready + "-0");
  fs::remove(ready + "-1");
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kInterrupted);
  CHECK(out->ranks[0].exit_status == 128 + 9);
  CHECK(out->ranks[1].exit_status == 128 + 9);
  CHECK(took < std::chrono::seconds(15));
  CHECK_FALSE(job.dirs_left(2));
}

TEST_CASE("runner: a cwd missing on a host starts no rank, and names its absolute path") {
  // It was found by each rank's wrapper once the job had started: every rank exit 126, the job
  // exit 4, and a relative cwd named as written, not where it was looked for.
  const std::string ran = "/tmp/cc-cwd-ran-" + random_hex(6);
  for (const char* cwd : {"/nonexistent-cc-cwd", "work dir"}) {
    CAPTURE(cwd);
    JobSpec spec = spec_of(fmt::format(
        "name: nocwd\nhosts: [a, b]\nranks_per_host: 2\ncommand: {{shell: ': >{}'}}\n"
        "cwd: '{}'\n",
        ran, cwd));
    LocalJob job;
    auto out = job.run(spec, 2);
    REQUIRE_FALSE(out.ok());
    CHECK(out.error().code == cc::util::ExitCode::kCheckFailed);
    const std::string message = out.error().message;
    CAPTURE(message);
    if (std::string_view(cwd).starts_with('/')) {
      CHECK(out.error().message.find("the working directory /nonexistent-cc-cwd does not exist "
                                     "on ") != std::string::npos);
    } else {
      // /tmp/clusterctl-job-...-h0/work dir: the job directory on that host, then the cwd.
      CHECK(out.error().message.find("the working directory /tmp/clusterctl-job-") !=
            std::string::npos);
      CHECK(out.error().message.find("/work dir does not exist on ") != std::string::npos);
      CHECK(out.error().message.find("(cwd: work dir is relative to the job's directory on the "
                                     "host, /tmp/clusterctl-job-") != std::string::npos);
    }
    // At the job file's `cwd:` (line 5, its value at column 6), as every job file mistake is.
    CHECK(out.error().message.find(fmt::format("\n  /tmp/job.yaml:5:6: `cwd: {}`: local0: the "
                                               "working directory ",
                                               cwd)) != std::string::npos);
    CHECK_FALSE(fs::exists(ran));  // no rank ran
    CHECK_FALSE(job.dirs_left(2));
  }
  // A cwd that an upload creates inside the job directory is there in time.
  const fs::path src = fs::temp_directory_path() / ("cc-cwd-up-" + random_hex(6));
  { std::ofstream(src) << "x"; }
  JobSpec spec = spec_of(fmt::format("name: upcwd\nhosts: [a]\ncommand: [cat, f]\ncwd: sub\n"
                                     "upload: [{{src: {}, dest: sub/f}}]\n",
                                     src.string()));
  LocalJob job;
  auto out = job.run(spec, 1);
  fs::remove(src);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kOk);
}

TEST_CASE("runner: a daemon the rank leaves (setsid, holding its output) does not hold the job") {
  // The daemon: a new session (perl's POSIX::setsid, as on macOS), stdout and stderr those of
  // the rank, its pid in a file so the test ends it by its id. The rank exits once the daemon
  // runs (else the wrapper's SIGKILL to the rank's group can come first).
  const fs::path pidfile = fs::temp_directory_path() / ("cc-daemon-" + random_hex(6));
  JobSpec spec = spec_of(fmt::format(
      "name: daemon\nhosts: [a]\n"
      "command: {{shell: 'perl -MPOSIX -e \"POSIX::setsid(); exec @ARGV\" sh -c \"echo \\$\\$ "
      ">{0}; exec sleep 30\" & while [ ! -s {0} ]; do sleep 0.05; done; echo rank-done'}}\n",
      pidfile.string()));
  LocalJob job;
  const auto t0 = std::chrono::steady_clock::now();
  auto out = job.run(spec, 1);
  const auto took = std::chrono::steady_clock::now() - t0;
  if (auto pid = cc::util::read_file(pidfile); pid && std::atoi(pid->c_str()) > 1) {
    ::kill(static_cast<pid_t>(std::atoi(pid->c_str())), SIGKILL);
  }
  fs::remove(pidfile);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kOk);
  CHECK(took < std::chrono::seconds(10));  // the daemon sleeps 30 s
  CHECK(*cc::util::read_file(job.logs / "rank-0.out") == "rank-done\n");
  CHECK_FALSE(job.dirs_left(1));
}

namespace {
// An unreachable host whose every command fails to connect, as SshExecutor's do; counts them.
class Unreachable final : public cc::remote::Executor {
 public:
  Unreachable(std::string host, std::atomic<int>& tries) : host_(std::move(host)), tries_(tries) {}
  const std::string& host() const override { return host_; }
  cc::util::Result<cc::remote::CommandResult> run(const cc::remote::Command&,
                                                  const cc::remote::RunOptions&) override {
    ++tries_;
    return cc::util::error(cc::util::ExitCode::kUnreachable,
                           host_ + ": no answer from root@10.0.0.3:22 within 10 s (connect "
                                   "timeout)");
  }
  cc::util::Status upload(const fs::path&, const std::string&, unsigned,
                          std::chrono::milliseconds) override {
    ++tries_;
    return cc::util::error(cc::util::ExitCode::kUnreachable, host_ + ": unreachable");
  }

 private:
  std::string host_;
  std::atomic<int>& tries_;
};
}  // namespace

TEST_CASE("runner: an unreachable host is tried once while the hosts are set up, then named") {
  // A launch with one host down took two connect timeouts (23 s) to say so: the janitor's
  // listing failed to connect, was ignored, and the set-up connected again.
  JobSpec spec = spec_of("name: down\nhosts: [a, b]\ncommand: [true]\n");
  std::atomic<int> tries{0};
  LocalJob job;
  job.connect = [&tries](size_t h) -> cc::util::Result<std::unique_ptr<cc::remote::Executor>> {
    if (h == 1) {
      return std::unique_ptr<cc::remote::Executor>(std::make_unique<Unreachable>("local1", tries));
    }
    return std::unique_ptr<cc::remote::Executor>(
        std::make_unique<cc::remote::LocalExecutor>("local" + std::to_string(h)));
  };
  auto out = job.run(spec, 2);
  REQUIRE_FALSE(out.ok());
  CHECK(out.error().code == cc::util::ExitCode::kUnreachable);
  CHECK(out.error().message.find("local1: no answer from root@10.0.0.3:22") != std::string::npos);
  CHECK(tries == 1);
  CHECK_FALSE(job.dirs_left(2));
}

namespace {
bool have_mpirun() {
  return std::system("command -v mpirun >/dev/null 2>&1") == 0;
}

cc::util::Result<JobOutcome> run_mpi(const JobSpec& spec, LocalJob& job) {
  WorldPlan plan;
  plan.hosts.push_back({"localhost", "127.0.0.1", ""});  // Open MPI's own node: no ssh
  plan.ranks_per_host = spec.ranks_per_host;
  plan.runtime = Runtime::kMpi;
  plan.env = spec.env;
  OutputOptions o;
  o.out = nullptr;
  o.err = nullptr;
  auto mux = OutputMux::open(job.logs, std::vector<std::string>(2, "localhost"), o);
  REQUIRE(mux.ok());
  RunnerOptions ro;
  ro.job_id = job.id;
  ro.clock = &job.clock;
  ro.status = job.status;
  ro.mpi.run_as_root = ::geteuid() == 0;
  ro.connect_local = []() -> cc::util::Result<std::unique_ptr<cc::remote::Executor>> {
    return std::unique_ptr<cc::remote::Executor>(
        std::make_unique<cc::remote::LocalExecutor>("local"));
  };
  ExecutorFactory connect = [](size_t) -> cc::util::Result<std::unique_ptr<cc::remote::Executor>> {
    return std::unique_ptr<cc::remote::Executor>(
        std::make_unique<cc::remote::LocalExecutor>("localhost"));
  };
  return run_job(spec, plan, **mux, connect, ro);
}
}  // namespace

TEST_CASE("runner: runtime mpi runs mpirun here, per-rank logs and exit statuses come back") {
  if (!have_mpirun()) {
    MESSAGE("SKIPPED: no mpirun (apt-get install openmpi-bin)");
    return;
  }
  JobSpec spec = spec_of(
      "name: mpi\nhosts: [localhost]\nranks_per_host: 2\nruntime: mpi\n"
      "command: {shell: 'echo \"rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE $X\"; "
      "echo e >&2; pwd'}\n"
      "env: {X: \"x  y\"}\n");
  LocalJob job;
  auto out = run_mpi(spec, job);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kOk);
  REQUIRE(out->ranks.size() == 2);
  for (int r = 0; r < 2; ++r) {
    CHECK(out->ranks[static_cast<size_t>(r)].exit_status == 0);
    CHECK(out->ranks[static_cast<size_t>(r)].started);
    auto text = *cc::util::read_file(job.logs / fmt::format("rank-{}.out", r));
    const std::string head = fmt::format("rank {} of 2 x  y\n/tmp/clusterctl-job-{}-", r, job.id);
    CHECK(text.starts_with(head));
    CHECK(text.ends_with("-h0\n"));
    CHECK(text.size() == head.size() + 16 + 4);  // 16 random hex digits, "-h0\n"
    CHECK(*cc::util::read_file(job.logs / fmt::format("rank-{}.err", r)) == "e\n");
  }
  CHECK_FALSE(job.dirs_left(1));
}

TEST_CASE("runner: runtime mpi: a failing rank fails the job, named, with its exit status") {
  if (!have_mpirun()) {
    MESSAGE("SKIPPED: no mpirun (apt-get install openmpi-bin)");
    return;
  }
  JobSpec spec = spec_of(
      "name: mpifail\nhosts: [localhost]\nranks_per_host: 2\nruntime: mpi\n"
      "command: {shell: 'if [ $OMPI_COMM_WORLD_RANK = 1 ]; then sleep 0.5; exit 3; fi; exec "
      "sleep 60'}\n"
      "timeouts: {grace: 2}\n");
  LocalJob job;
  auto out = run_mpi(spec, job);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kJobFailed);
  CHECK(out->first_failed == 1);
  CHECK(out->ranks[1].exit_status == 3);
  CHECK(out->ranks[0].ended_by_us);
  CHECK(out->duration < std::chrono::seconds(10));
  CHECK(render_summary(*out).find("rank 1 on localhost failed (exit 3)") != std::string::npos);
  CHECK_FALSE(job.dirs_left(1));
}

TEST_CASE("runner: runtime mpi: mpirun ends the others, each rank's duration is its own run") {
  if (!have_mpirun()) {
    MESSAGE("SKIPPED: no mpirun (apt-get install openmpi-bin)");
    return;
  }
  JobSpec spec = spec_of(
      "name: mpiend\nhosts: [localhost]\nranks_per_host: 2\nruntime: mpi\n"
      "command: {shell: 'if [ $OMPI_COMM_WORLD_RANK = 1 ]; then sleep 1; exit 3; fi; exec "
      "sleep 60'}\n"
      "timeouts: {grace: 20}\n");
  LocalJob job;
  // This machine's clock jumps 100 s while the ranks run: their durations are taken by their
  // host's clock from their start to their end, not from when mpirun's output reached us.
  job.status = skip_when(job.clock, "2/2 running", std::chrono::seconds(100));
  auto out = run_mpi(spec, job);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kJobFailed);
  CHECK(out->first_failed == 1);
  for (const auto& r : out->ranks) {
    CAPTURE(r.rank);
    CHECK(r.duration >= std::chrono::milliseconds(900));
    CHECK(r.duration < std::chrono::seconds(15));  // well before the grace's SIGKILL
  }
  // Open MPI ended rank 0 (SIGTERM), clusterctl sent it nothing: the summary says whose.
  CHECK(out->ranks[0].signaled);
  CHECK(out->ranks[0].ended_by_us);
  CHECK(out->ranks[0].ended_by_launcher);
  CHECK(render_summary(*out).find("ended by mpirun") != std::string::npos);
  CHECK_FALSE(job.dirs_left(1));
}

TEST_CASE("runner: a rank exiting 128+N is reported as that exit, not as signal N") {
  JobSpec spec = spec_of(
      "name: exit130\nhosts: [a, b]\n"
      "command: {shell: 'if [ $CLUSTERCOMM_RANK = 1 ]; then exit 130; fi; exec sleep 60'}\n"
      "timeouts: {grace: 2}\n");
  LocalJob job;
  auto out = job.run(spec, 2);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kJobFailed);
  CHECK(out->first_failed == 1);
  CHECK(out->ranks[1].exit_status == 130);
  CHECK_FALSE(out->ranks[1].signaled);
  CHECK(describe_status(out->ranks[1]) == "exit 130");
  CHECK(out->ranks[0].signaled);  // ended by clusterctl's SIGTERM: a real signal
  CHECK(describe_status(out->ranks[0]) == "SIGTERM");
  CHECK(render_summary(*out).find("rank 1 on local1 failed (exit 130)") != std::string::npos);
  CHECK_FALSE(job.dirs_left(2));
}

TEST_CASE("runner: runtime mpi: exit 128+N and a real signal are told apart too") {
  if (!have_mpirun()) {
    MESSAGE("SKIPPED: no mpirun (apt-get install openmpi-bin)");
    return;
  }
  JobSpec spec = spec_of(
      "name: mpi137\nhosts: [localhost]\nranks_per_host: 2\nruntime: mpi\n"
      "command: {shell: 'if [ $OMPI_COMM_WORLD_RANK = 1 ]; then exit 137; fi; exec sleep 60'}\n"
      "timeouts: {grace: 2}\n");
  LocalJob job;
  auto out = run_mpi(spec, job);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kJobFailed);
  CHECK(out->first_failed == 1);
  CHECK(describe_status(out->ranks[1]) == "exit 137");
  CHECK(out->ranks[0].ended_by_us);  // ended by mpirun or clusterctl
}

TEST_CASE("runner: runtime mpi: an mpirun that exits 0 without starting the ranks fails the job") {
  // open-mpi/ompi#1344: mpirun that could not place the ranks (too few slots) exited 0, and a
  // script that ran it took the job for done. The ranks report their start through mpirun's
  // output (mpi_backend.cc): mpirun ending, whatever its status, before they did leaves them
  // never started, and the job failed. An mpirun here that only exits 0 stands for it.
  const fs::path bin = fs::temp_directory_path() / ("cc-fake-mpirun-" + random_hex(4));
  fs::create_directories(bin);
  REQUIRE(cc::util::write_file_atomic(bin / "mpirun", "#!/bin/sh\nexit 0\n").ok());
  fs::permissions(bin / "mpirun", fs::perms::owner_all);
  const char* was = std::getenv("PATH");
  const std::string old_path = was != nullptr ? was : "/usr/bin:/bin";
  ::setenv("PATH", (bin.string() + ":" + old_path).c_str(), 1);
  JobSpec spec = spec_of(
      "name: mpi0\nhosts: [localhost]\nranks_per_host: 2\nruntime: mpi\n"
      "command: [true]\n");
  LocalJob job;
  auto out = run_mpi(spec, job);
  ::setenv("PATH", old_path.c_str(), 1);
  fs::remove_all(bin);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kJobFailed);
  REQUIRE(out->ranks.size() == 2);
  for (const auto& r : out->ranks) {
    CAPTURE(r.rank);
    CHECK_FALSE(r.started);
    CHECK(r.problem == "never started: mpirun ended (exit 0)");
  }
  CHECK(job_reason(*out) ==
        "rank 0 on localhost failed first (never started: mpirun ended (exit 0))");
  CHECK_FALSE(job.dirs_left(1));
}

TEST_CASE("runner: runtime mpi: timeouts.total ends mpirun and its ranks, nothing left") {
  if (!have_mpirun()) {
    MESSAGE("SKIPPED: no mpirun (apt-get install openmpi-bin)");
    return;
  }
  JobSpec spec = spec_of(
      "name: mpitotal\nhosts: [localhost]\nranks_per_host: 2\nruntime: mpi\n"
      "command: [sleep, '61']\ntimeouts: {total: 600, grace: 3}\n");
  LocalJob job;
  // Once both ranks run, ten minutes pass at once: the total timeout, not waited for.
  job.status = skip_when(job.clock, "2/2 running", std::chrono::seconds(600));
  auto out = run_mpi(spec, job);
  REQUIRE(out.ok());
  CHECK(out->code == cc::util::ExitCode::kJobFailed);
  // Both ranks named as the deadline found them (silent all along: sleep prints nothing).
  CHECK(out->reason.starts_with("the job ran longer than timeouts.total (600 s): still running "
                                "at the deadline: rank 0 on localhost (silent for 60"));
  CHECK(out->reason.find("rank 1 on localhost (silent for 60") != std::string::npos);
  CHECK(out->duration < std::chrono::seconds(610));
  // Each rank's own end, by clusterctl's SIGTERM: mpirun, also signalled while it ended the job
  // itself, crashed (exit 139) and left the rank it had not ended without a status.
  for (const auto& r : out->ranks) {
    CAPTURE(r.rank);
    CHECK(r.ended_by_us);
    CHECK(r.signaled);
    CHECK(r.exit_status == 128 + 15);
    CHECK(r.problem == "");
  }
  CHECK(std::system("pgrep -f '^sleep 61$' >/dev/null") != 0);  // no rank left
  CHECK_FALSE(job.dirs_left(1));
}

TEST_CASE("summary: who failed first, who we ended, who exited by itself during teardown") {
  JobOutcome o;
  o.code = cc::util::ExitCode::kJobFailed;
  o.first_failed = 1;
  o.duration = std::chrono::milliseconds(2500);
  auto rank = [](int r, int status, bool signaled) {
    RankOutcome x;
    x.rank = r;
    x.host = "h" + std::to_string(r + 1);
    x.started = x.finished = true;
    x.exit_status = status;
    x.signaled = signaled;
    x.ended_by_us = r != 1 && status != 0;
    x.duration = std::chrono::milliseconds(1200);
    return x;
  };
  o.ranks = {rank(0, 128 + 15, true), rank(1, 3, false), rank(2, 1, false), rank(3, 130, false)};
  const std::string s = render_summary(o);
  CHECK(
      s.find("    0  h1                SIGTERM                     1.2 s  ended by clusterctl\n") !=
      std::string::npos);
  CHECK(s.find("    1  h2                exit 3                      1.2 s  <- failed first\n") !=
        std::string::npos);
  CHECK(s.find("    2  h3                exit 1                      1.2 s  exited during "
               "teardown\n") != std::string::npos);
  CHECK(s.find("    3  h4                exit 130                    1.2 s  exited during "
               "teardown\n") != std::string::npos);
  CHECK(s.find("job failed: rank 1 on h2 failed first (exit 3); 0/4 ranks exited 0\n") !=
        std::string::npos);
}

TEST_CASE("summary: a long reason every rank shares is printed once, no status is cut") {
  const std::string venv =
      "cannot run /opt/venv/bin/python: this host has no Python venv at /opt/venv (the job's "
      "command names it): make it on every host (python3 -m venv /opt/venv) or fix `command:`";
  JobOutcome o;
  o.code = cc::util::ExitCode::kJobFailed;
  o.first_failed = 0;
  o.reason = "rank 0 on h1 failed (exit 127: " + venv + ")";  // as the watcher words it
  for (int r = 0; r < 4; ++r) {
    RankOutcome x;
    x.rank = r;
    x.host = "h" + std::to_string(r + 1);
    x.started = x.finished = true;
    x.exit_status = 127;
    x.problem = venv;
    x.duration = std::chrono::milliseconds(100);
    o.ranks.push_back(x);
  }
  std::string s = render_summary(o);
  CAPTURE(s);
  int times = 0;
  for (auto at = s.find(venv); at != std::string::npos; at = s.find(venv, at + 1)) ++times;
  CHECK(times == 1);
  CHECK(s.find("    0  h1                exit 127                    0.1 s  <- failed first\n"
               "       " +
               venv + "\n") != std::string::npos);
  CHECK(s.find("    3  h4                exit 127                    0.1 s  \n"
               "       same as rank 0\n") != std::string::npos);
  CHECK(s.find("job failed: rank 0 on h1 failed (exit 127: as under rank 0 above); 0/4 ranks "
               "exited 0\n") != std::string::npos);

  // A connection lost: the cell says so in words, never "connection lost: host" cut mid-word;
  // the whole reason is on the line below.
  o.ranks.resize(2);
  o.first_failed = 1;
  o.reason.clear();
  o.ranks[0].problem.clear();
  o.ranks[1].exit_status = -1;
  o.ranks[1].problem = "connection lost: host h2 lost: no answer within 30 s";
  s = render_summary(o);
  CHECK(s.find("    1  h2                connection lost             0.1 s  <- failed first\n"
               "       connection lost: host h2 lost: no answer within 30 s\n") !=
        std::string::npos);
  CHECK(s.find("connection lost: host  ") == std::string::npos);
}

TEST_CASE("summary: a rank seen stopped is marked as what the others waited for") {
  JobOutcome o;
  o.code = cc::util::ExitCode::kJobFailed;
  o.first_failed = 0;
  o.reason =
      "rank 1 on h2 was stopped (SIGSTOP, Ctrl-Z or a debugger) and the others waited "
      "for it; then rank 0 on h1 failed (exit 1)";
  RankOutcome a;
  a.rank = 0;
  a.host = "h1";
  a.started = a.finished = true;
  a.exit_status = 1;
  a.duration = std::chrono::milliseconds(4000);
  RankOutcome b = a;
  b.rank = 1;
  b.host = "h2";
  b.exit_status = 128 + 15;
  b.signaled = b.ended_by_us = b.stopped = true;
  o.ranks = {a, b};
  const std::string s = render_summary(o);
  CHECK(s.find("    0  h1                exit 1                      4.0 s  <- failed first\n") !=
        std::string::npos);
  CHECK(s.find("    1  h2                SIGTERM                     4.0 s  <- was stopped: the "
               "others waited for it\n") != std::string::npos);
  CHECK(s.find("job failed: rank 1 on h2 was stopped (SIGSTOP, Ctrl-Z or a debugger) and the "
               "others waited for it; then rank 0 on h1 failed (exit 1); 0/2 ranks exited 0\n") !=
        std::string::npos);
}

TEST_CASE("summary: an exit 127, 126 or a signal not ours says why under the rank") {
  // A rank whose command was not found showed only "exit 127": the reason was in its log.
  JobOutcome o;
  o.code = cc::util::ExitCode::kJobFailed;
  o.first_failed = 0;
  RankOutcome a;
  a.rank = 0;
  a.host = "h1";
  a.started = a.finished = true;
  a.exit_status = 127;
  a.problem = "command not found: python3 (looked for in PATH=/opt/venv/bin)";  // exec_failure
  a.duration = std::chrono::milliseconds(100);
  RankOutcome b = a;
  b.rank = 1;
  b.host = "h2";
  b.exit_status = 126;
  b.problem.clear();  // a shell's 126, no waiter line
  RankOutcome c = a;
  c.rank = 2;
  c.host = "h3";
  c.exit_status = 128 + 9;
  c.signaled = true;
  c.problem.clear();
  RankOutcome d = c;
  d.rank = 3;
  d.host = "h4";
  d.exit_status = 128 + 15;
  d.ended_by_us = true;  // ours: nothing to explain
  o.ranks = {a, b, c, d};
  const std::string s = render_summary(o);
  CHECK(s.find("    0  h1                exit 127                    0.1 s  <- failed first\n"
               "       command not found: python3 (looked for in PATH=/opt/venv/bin)\n") !=
        std::string::npos);
  CHECK(s.find("       found but not executable (a shell's exit 126: its log names it)\n") !=
        std::string::npos);
  CHECK(s.find("    2  h3                SIGKILL                     0.1 s  \n"
               "       killed by SIGKILL, not by clusterctl: the kernel's out-of-memory killer "
               "(see `dmesg` on the host) or a kill -9\n") != std::string::npos);
  CHECK(s.find("    3  h4                SIGTERM                     0.1 s  ended by clusterctl\n"
               "job failed") != std::string::npos);
  CHECK(job_reason(o) ==
        "rank 0 on h1 failed first (exit 127: command not found: python3 (looked for in "
        "PATH=/opt/venv/bin))");
  a.problem.clear();
  CHECK(describe_failure(a) ==
        "exit 127: command not found (a shell's exit 127: its log names it)");
  CHECK(describe_failure(c) == "SIGKILL");  // the name says it; the summary's line says more
  CHECK(status_reason(d).empty());
}

TEST_CASE("summary: a command not found says once where and what to do (ompi#599, #8870)") {
  // A program on a login shell's PATH only (~/.local/bin, /opt/homebrew/bin, a conda env) is
  // not found by a non-interactive SSH session: the summary named the PATH but not the fix.
  JobOutcome o;
  o.code = cc::util::ExitCode::kJobFailed;
  o.first_failed = 1;
  RankOutcome ok;
  ok.rank = 0;
  ok.host = "h1";
  ok.started = ok.finished = true;
  RankOutcome a = ok;
  a.rank = 1;
  a.host = "h2";
  a.exit_status = 127;
  a.problem = "command not found: mytool (looked for in PATH=/usr/bin:/bin)";
  RankOutcome b = a;
  b.rank = 2;  // a second rank on h2: the host is named once
  RankOutcome c = a;
  c.rank = 3;
  c.host = "h3";
  c.problem.clear();  // a shell's own 127
  o.ranks = {ok, a, b, c};
  const std::string s = render_summary(o);
  CHECK(s.find("to fix: a command not found on h2, h3: a non-interactive SSH session reads no "
               "login profile") != std::string::npos);
  CHECK(s.find("give the command's absolute path in `command:`, or set the whole PATH in the "
               "job's `env:`") != std::string::npos);
  CHECK(not_found_advice(o) == s.substr(s.find("to fix: ")));
  o.ranks = {ok};
  CHECK(not_found_advice(o).empty());
  // A command given by its path was not looked for in PATH: the advice about PATH does not
  // apply (the job of a venv missing on every host got it, after the venv's own fix).
  a.problem = "command not found: /opt/venv/bin/python: this host has no Python venv at /opt/venv";
  b.problem = "command not found: /opt/x/run.sh";
  o.ranks = {ok, a, b};
  CHECK(not_found_advice(o).empty());
  a.problem = "command not found: python3 (looked for in PATH=/usr/bin:/bin)";
  o.ranks = {ok, a, b};
  CHECK(not_found_advice(o).find("to fix: a command not found on h2: ") == 0);
}

TEST_CASE("summary: a relative command path is blamed on the working directory, not on PATH") {
  // `command: [../../build/release/bench/clustercomm-perf, ...]`, written as from the job file:
  // the "to fix" line spoke of a non-interactive SSH session's PATH, which is never searched
  // for a name with a '/'.
  JobOutcome o;
  o.code = cc::util::ExitCode::kJobFailed;
  o.first_failed = 0;
  RankOutcome a;
  a.host = "h1";
  a.started = a.finished = true;
  a.exit_status = 127;
  a.problem =  // exec_failure of the waiter's line
      "command not found: ../../build/release/bench/clustercomm-perf (relative to the working "
      "directory /tmp/clusterctl-job-x-h0)";
  RankOutcome b = a;
  b.rank = 1;
  b.host = "h2";
  o.ranks = {a, b};
  const std::string advice = not_found_advice(o);
  CHECK(advice ==
        "to fix: ../../build/release/bench/clustercomm-perf was not found on h1, h2: a command "
        "given by a relative path is looked for from the rank's working directory on its host "
        "(the job's directory there, or `cwd:`), not from the job file's directory; give its "
        "absolute path on the hosts in `command:`, or copy it to every host with `upload:` (- "
        "{src: PATH, dest: clustercomm-perf, mode: \"0755\"}, `src` relative to the job file; "
        "then command: [./clustercomm-perf, ...])\n");
  CHECK(advice.find("PATH of") == std::string::npos);
  CHECK(advice.find("login profile") == std::string::npos);
  CHECK(render_summary(o).ends_with(advice));
  // A relative path beside a name looked for in PATH: each has its own line.
  b.problem = "command not found: python3 (looked for in PATH=/usr/bin:/bin)";
  o.ranks = {a, b};
  const std::string both = not_found_advice(o);
  CHECK(both.find("to fix: a command not found on h2: a non-interactive SSH session") == 0);
  CHECK(both.find("\nto fix: ../../build/release/bench/clustercomm-perf was not found on h1: ") !=
        std::string::npos);
}

TEST_CASE("summary: a PATH from env: with a '$' in it is said to be literal") {
  // `env: {PATH: "$PATH:/opt/x/bin"}`: every rank failed "looked for in PATH=$PATH:/opt/x/bin"
  // and the "to fix" line blamed the SSH session's PATH.
  JobOutcome o;
  o.code = cc::util::ExitCode::kJobFailed;
  o.first_failed = 0;
  RankOutcome a;
  a.host = "h1";
  a.started = a.finished = true;
  a.exit_status = 127;
  a.problem = "command not found: python3 (looked for in PATH=$PATH:/opt/x/bin)";
  o.ranks = {a};
  CHECK(not_found_advice(o) ==
        "to fix: a command not found on h1: the PATH it was looked for in, $PATH:/opt/x/bin, "
        "holds a '$': a value in the job's `env:` is passed exactly as written (no shell expands "
        "`$NAME` in it); set the whole PATH there instead (PATH: "
        "\"/usr/local/bin:/usr/bin:/bin:/opt/x/bin\", with your hosts' own directories)\n");
  // ${PATH} too; another variable: no example, whose directories only the operator knows.
  o.ranks[0].problem = "command not found: x (looked for in PATH=/a:${PATH})";
  CHECK(not_found_advice(o).find("(PATH: \"/a:/usr/local/bin:/usr/bin:/bin\", ") !=
        std::string::npos);
  o.ranks[0].problem = "command not found: x (looked for in PATH=$HOME/bin:$PATH)";
  CHECK(not_found_advice(o).ends_with("set the whole PATH there instead\n"));
}

TEST_CASE("summary: a command not executable says how to make it so (upload mode, chmod)") {
  // An uploaded script without its x bit failed with a bare "Permission denied".
  JobOutcome o;
  o.code = cc::util::ExitCode::kJobFailed;
  o.first_failed = 0;
  RankOutcome a;
  a.host = "h1";
  a.started = a.finished = true;
  a.exit_status = 126;
  a.problem = "not executable: ./run.sh: Permission denied";  // exec_failure
  RankOutcome b = a;
  b.rank = 1;
  b.host = "h2";
  o.ranks = {a, b};
  const std::string s = render_summary(o);
  CHECK(s.ends_with(
      "to fix: ./run.sh is not executable on h1, h2: an uploaded file keeps its local mode "
      "unless its `upload:` entry gives one: add mode: \"0755\" to that entry, or `chmod +x` the "
      "file (here before the upload, or on the hosts); a file that is executable there sits on "
      "a file system mounted noexec: run it through its interpreter (command: [sh, ./run.sh] "
      "for a shell script)\n"));
  b.problem.clear();  // a shell's 126: its log names the file
  o.ranks = {b};
  CHECK(not_executable_advice(o).empty());
}

TEST_CASE("summary: a job of one rank is counted in the singular, and failed, not first") {
  // "1 ranks exited 0", and "failed first" of the only rank there was.
  JobOutcome o;
  o.duration = std::chrono::milliseconds(1000);
  RankOutcome a;
  a.host = "h1";
  a.started = a.finished = true;
  a.exit_status = 0;
  a.duration = std::chrono::milliseconds(1000);
  o.ranks = {a};
  CHECK(render_summary(o).find("job succeeded: 1 rank exited 0 in 1.0 s\n") != std::string::npos);
  o.code = cc::util::ExitCode::kJobFailed;
  o.first_failed = 0;
  o.ranks[0].exit_status = 2;
  const std::string s = render_summary(o);
  CAPTURE(s);
  CHECK(s.find("    0  h1                exit 2                      1.0 s  <- failed\n") !=
        std::string::npos);
  CHECK(s.find("first") == std::string::npos);
  CHECK(job_reason(o) == "rank 0 on h1 failed (exit 2)");
  CHECK(s.find("job failed: rank 0 on h1 failed (exit 2); 0/1 rank exited 0\n") !=
        std::string::npos);
}

TEST_CASE("summary: launch and exec give one cause for a command not found over SSH") {
  // Two texts said it two ways ("a conda env is often not on its PATH" in exec, "a conda or
  // venv bin directory is often missing from it" in launch); each now adds its own fix to one.
  const std::string cause =
      "a non-interactive SSH session reads no login profile (~/.zprofile, ~/.bash_profile, "
      "conda activate), so ~/.local/bin, /opt/homebrew/bin or a conda or venv bin directory is "
      "often missing from its PATH";
  JobOutcome o;
  o.code = cc::util::ExitCode::kJobFailed;
  RankOutcome a;
  a.host = "h1";
  a.started = a.finished = true;
  a.exit_status = 127;
  o.ranks = {a};
  CHECK(not_found_advice(o) ==
        "to fix: a command not found on h1: " + cause +
            ": give the command's absolute path in `command:`, or set the whole PATH in the "
            "job's `env:` (PATH: \"/opt/homebrew/bin:/usr/bin:/bin\"), or install it there\n");
  cc::remote::CommandResult r;
  r.exit_status = 127;
  const auto lines = cc::remote::problem_lines({cc::remote::HostOutcome{"h1", r}}, 1);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("h1: exit status 127 (command not found: " + cause + ": ") == 0);
}

TEST_CASE("summary: a script whose #! interpreter is missing names host, rank, script and fix") {
  // The waiter said "command not found: ./run.sh" and the summary gave PATH advice, as if the
  // script itself were missing.
  JobOutcome o;
  o.code = cc::util::ExitCode::kJobFailed;
  o.first_failed = 0;
  std::vector<RankOutcome> ranks(3);
  for (int r = 0; r < 3; ++r) {
    RankOutcome& x = ranks[static_cast<size_t>(r)];
    x.rank = r;
    x.host = "h" + std::to_string(r + 1);
    x.started = x.finished = true;
    x.exit_status = 127;
    x.problem = "interpreter not found: /usr/bin/python9, named by the #! line of ./run.sh";
  }
  ranks[2].problem =
      "interpreter not found: /bin/bash\\r, named by the #! line of ./go.sh; that line ends in a "
      "carriage return (\\r): ./go.sh has Windows (CRLF) line endings";
  o.ranks = ranks;
  CHECK(interpreter_advice(o) ==
        "to fix: on h1 (rank 0), h2 (rank 1): the interpreter /usr/bin/python9 named on the #! "
        "line of ./run.sh is missing there (the script itself was found): install it, or change "
        "that line to an interpreter the host has (`#!/usr/bin/env python3` finds one in PATH)\n"
        "to fix: on h3 (rank 2): ./go.sh has Windows (CRLF) line endings: its #! line ends in a "
        "carriage return, so the interpreter looked for is \"/bin/bash\\r\", which no host has; "
        "convert the file with `dos2unix ./go.sh` or `sed -i 's/\\r$//' ./go.sh` (macOS: "
        "`sed -i '' $'s/\\r$//' ./go.sh`), where it is kept and where it runs\n");
  const std::string s = render_summary(o);
  CHECK(s.find("       interpreter not found: /usr/bin/python9, named by the #! line of "
               "./run.sh\n") != std::string::npos);
  CHECK(s.find(interpreter_advice(o)) != std::string::npos);
  CHECK(not_found_advice(o).empty());  // no PATH advice: the script was found
}

TEST_CASE("summary: a Python missing a module names the interpreter and how to install it") {
  // A system python3 without the package: before, a bare "exit 1" in the summary.
  JobOutcome o;
  o.code = cc::util::ExitCode::kJobFailed;
  o.first_failed = 0;
  o.command = {"python3", "train.py"};
  for (int r = 0; r < 3; ++r) {
    RankOutcome x;
    x.rank = r;
    x.host = "h" + std::to_string(r + 1);
    x.started = x.finished = true;
    x.exit_status = 1;
    x.last_error = "ModuleNotFoundError: No module named 'clustercomm'";
    o.ranks.push_back(x);
  }
  o.ranks[2].exit_status = 0;  // a rank that ended well is not named
  const std::string s = render_summary(o);
  CAPTURE(s);
  const std::string want =
      "to fix: on h1 (rank 0), h2 (rank 1): no module named 'clustercomm': the interpreter that "
      "ran is python3 (as the rank's PATH on the host found it), a Python without it (not a "
      "venv's python); make a venv with it as README.md, \"Python\", says: in a checkout of "
      "clusterctl on the host, `python3 -m venv /opt/clustercomm/venv && "
      "/opt/clustercomm/venv/bin/pip install ./python` (on every host at once: `clusterctl exec "
      "--hosts all --shell -- '...'`; a lab's hosts share this machine's file system: run it "
      "once, here), and give `/opt/clustercomm/venv/bin/python` in `command:`\n";
  CHECK(module_advice(o) == want);
  CHECK(s.find(want) != std::string::npos);

  // A venv's python without MLX (import mlx.core): install it into that venv.
  o.command = {"/srv/env/bin/python3.12", "m.py"};
  for (auto& r : o.ranks) r.last_error = "ModuleNotFoundError: No module named 'mlx.core'";
  o.ranks[1].last_error = "ModuleNotFoundError: No module named 'mlx'";
  CHECK(module_advice(o) ==
        "to fix: on h1 (rank 0), h2 (rank 1): no module named 'mlx': the interpreter that ran "
        "is /srv/env/bin/python3.12, whose venv /srv/env lacks it; install it into that venv: "
        "`/srv/env/bin/pip install mlx` (on Linux: 'mlx[cpu]')\n");
  // /usr/bin/python3 is the system's, not a venv; a shell command's first word is the program.
  o.command = {"sh", "-c", "/usr/bin/python3 -u m.py"};
  for (auto& r : o.ranks) r.last_error = "ModuleNotFoundError: No module named 'clustercomm'";
  CHECK(module_advice(o).find(": the interpreter that ran is /usr/bin/python3, a Python without "
                              "it (not a venv's python); make a venv") != std::string::npos);
  // Any other module: its own package from the registry, in a venv made anywhere (no checkout
  // of clusterctl), the exec hint carrying the options that select the job's hosts.
  o.command = {"python3", "m.py"};
  o.global_words = "--lab t3a";
  for (auto& r : o.ranks) r.last_error = "ModuleNotFoundError: No module named 'numpy'";
  CHECK(module_advice(o) ==
        "to fix: on h1 (rank 0), h2 (rank 1): no module named 'numpy': the interpreter that ran "
        "is python3 (as the rank's PATH on the host found it), a Python without it (not a "
        "venv's python); make a venv with it: `python3 -m venv /opt/clustercomm/venv && "
        "/opt/clustercomm/venv/bin/pip install numpy` (on every host at once: `clusterctl --lab "
        "t3a exec --hosts all --shell -- '...'`; a lab's hosts share this machine's file system: "
        "run it once, here), and give `/opt/clustercomm/venv/bin/python` in `command:`\n");
  // MLX alone needs no clustercomm; a module whose package is named otherwise says which.
  for (auto& r : o.ranks) r.last_error = "ModuleNotFoundError: No module named 'mlx.core'";
  const std::string mlx = module_advice(o);
  CHECK(mlx.find("pip install mlx` (on Linux: 'mlx[cpu]')") != std::string::npos);
  CHECK(mlx.find("./python") == std::string::npos);
  for (auto& r : o.ranks) r.last_error = "ModuleNotFoundError: No module named 'yaml'";
  CHECK(module_advice(o).find("pip install PyYAML` (the module 'yaml' comes in the package "
                              "'PyYAML')") != std::string::npos);
  // Not a module name, or no missing module: nothing.
  for (auto& r : o.ranks) r.last_error = "ModuleNotFoundError: No module named '$(id)'";
  CHECK(module_advice(o).empty());
  for (auto& r : o.ranks) r.last_error = "ValueError: bad";
  CHECK(module_advice(o).empty());
}
