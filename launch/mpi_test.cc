#include "launch/mpi.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "launch/runner.h"
#include "remote/local_executor.h"

using namespace cc::launch;

namespace {

WorldPlan plan4x2() {
  WorldPlan p;
  p.runtime = Runtime::kMpi;
  p.ranks_per_host = 2;
  p.hosts = {{"h1", "10.9.0.2", ""}, {"h2", "10.9.0.3", "root@h2"}, {"h3", "", ""}};
  p.env = {{"OMPI_MCA_btl", "self,tcp"}, {"A", "x y"}};
  p.secrets = {{"TOKEN", "s3cret"}};
  return p;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

}  // namespace

TEST_CASE("mpi: the hostfile is provision's Open MPI format, ssh names, slots=ranks_per_host") {
  auto hf = mpi_hostfile(plan4x2());
  REQUIRE(hf.ok());
  CHECK(*hf == "h1 slots=2\nroot@h2 slots=2\nh3 slots=2\n");
}

TEST_CASE("mpi: mpirun's argv: hostfile, -np, flags, -x names only, the rank script") {
  WorldPlan p = plan4x2();
  MpiLaunch m;
  m.job_id = "j1";
  m.local_dir = "/tmp/clusterctl-job-j1-mpirun";
  m.nonce = "abc";
  m.grace_s = 7;
  m.rsh_agent = mpi_rsh_agent("/lab/ssh_config", "/lab/known_hosts");
  m.tcp_include = "10.9.0.0/24";
  m.run_as_root = true;
  m.command = {"./perf", "-b", "8"};
  auto a = mpirun_argv(p, m);
  std::string s = joined(a);
  CHECK(s.starts_with("mpirun --hostfile /tmp/clusterctl-job-j1-mpirun/mpi-hostfile -np 6 "
                      "--map-by slot --bind-to none --tag-output --allow-run-as-root "));
  CHECK(s.find("--mca plm_rsh_agent ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -F "
               "/lab/ssh_config -o UserKnownHostsFile=/lab/known_hosts --mca "
               "plm_rsh_no_tree_spawn 1 --mca orte_keep_fqdn_hostnames 1") != std::string::npos);
  CHECK(s.find("--mca oob_tcp_if_include 10.9.0.0/24 --mca btl_tcp_if_include 10.9.0.0/24") !=
        std::string::npos);
  CHECK(s.find("-x PYTHONUNBUFFERED -x A -x OMPI_MCA_btl -x TOKEN sh -c ") != std::string::npos);
  CHECK(s.find("s3cret") == std::string::npos);  // secrets only in mpirun's environment
  CHECK(s.find("x y") == std::string::npos);
  CHECK(s.find("clusterctl-mpi-rank --job-dirs /tmp/clusterctl-job-j1-h --ranks-per-host 2 "
               "--cwd  --nonce abc --waiter use POSIX") != std::string::npos);
  CHECK(s.ends_with(" -- ./perf -b 8"));
  auto env = mpirun_env(p);
  CHECK(std::find(env.begin(), env.end(), EnvVar{"TOKEN", "s3cret"}) != env.end());

  p.env["OMPI_MCA_btl_tcp_if_include"] = "eth1";  // the job's own choice wins
  s = joined(mpirun_argv(p, m));
  CHECK(s.find("--mca oob_tcp_if_include 10.9.0.0/24") != std::string::npos);
  CHECK(s.find("--mca btl_tcp_if_include") == std::string::npos);
  m.run_as_root = false;
  CHECK(joined(mpirun_argv(p, m)).find("--allow-run-as-root") == std::string::npos);
}

TEST_CASE("mpi: ranks get every runtime's defaults, and loader and perl variables renamed") {
  // mpirun forwarded only the job's env: its ranks missed PYTHONUNBUFFERED=1, which every
  // other runtime's get (rank_env_defaults); and a job's LD_PRELOAD or PERL5OPT reached mpirun,
  // Open MPI's daemons and the rank script's perl waiter.
  WorldPlan p = plan4x2();
  p.env["LD_PRELOAD"] = "/no/such/lib.so";
  p.secrets["PERL5OPT"] = "-Mstrict=nonexistent";
  auto env = mpirun_env(p);
  auto has = [&](const EnvVar& v) { return std::find(env.begin(), env.end(), v) != env.end(); };
  CHECK(has({"PYTHONUNBUFFERED", "1"}));
  CHECK(has({"_ccw_x_LD_PRELOAD", "/no/such/lib.so"}));
  CHECK(has({"_ccw_x_PERL5OPT", "-Mstrict=nonexistent"}));
  CHECK(std::none_of(env.begin(), env.end(), [](const EnvVar& v) {
    return v.first == "LD_PRELOAD" || v.first == "PERL5OPT";
  }));
  MpiLaunch m;
  m.job_id = "j1";
  m.nonce = "abc";
  m.command = {"true"};
  const std::string s = joined(mpirun_argv(p, m));
  CHECK(s.find("-x _ccw_x_LD_PRELOAD") != std::string::npos);
  CHECK(s.find("-x PYTHONUNBUFFERED") != std::string::npos);
  p.env["PYTHONUNBUFFERED"] = "";  // the job's own value, once
  env = mpirun_env(p);
  CHECK(std::count_if(env.begin(), env.end(),
                      [](const EnvVar& v) { return v.first == "PYTHONUNBUFFERED"; }) == 1);
  CHECK(has({"PYTHONUNBUFFERED", ""}));
}

TEST_CASE("mpi: the rank script gives the rank what mpirun forwarded renamed, not its perl") {
  namespace fs = std::filesystem;
  const std::string id = "mpitest-" + random_hex(4);
  const std::string dir = job_dir(id, 0);
  fs::create_directories(dir);
  WorldPlan p;
  p.runtime = Runtime::kMpi;
  p.hosts = {{"h1", "", ""}};
  MpiLaunch m;
  m.job_id = id;
  m.nonce = "n0nce";
  m.command = {"sh", "-c", "printf '%s|%s|%s' \"$PERL5OPT\" \"$LD_PRELOAD\" \"$PYTHONUNBUFFERED\""};
  const auto a = mpirun_argv(p, m);
  // What Open MPI's daemon runs: the rank script, with the forwarded variables and its rank.
  std::vector<std::string> argv = {"env", "OMPI_COMM_WORLD_RANK=0",
                                   "_ccw_x_PERL5OPT=-Mstrict=nonexistent",
                                   "_ccw_x_LD_PRELOAD=/no/such/lib-mpi.so", "PYTHONUNBUFFERED=1"};
  argv.insert(argv.end(), std::find(a.begin(), a.end(), "sh"), a.end());
  cc::remote::LocalExecutor local;
  auto r = local.run(cc::remote::Command{argv}, {});
  REQUIRE(r.ok());
  CAPTURE(r->err);
  CHECK(r->exit_status == 0);
  CHECK(r->out == "-Mstrict=nonexistent|/no/such/lib-mpi.so|1");
  CHECK(r->err.find("n0nce end exit 0") != std::string::npos);
  // Both markers carry the host's time (this machine's perl has Time::HiRes): a rank's
  // duration is its own run's.
  MpiDemux demux("n0nce");
  std::string tagged;  // as mpirun's --tag-output passes the script's stderr on
  for (size_t at = 0, nl; (nl = r->err.find('\n', at)) != std::string::npos; at = nl + 1) {
    tagged += "[1,0]<stderr>:" + r->err.substr(at, nl + 1 - at);
  }
  auto ev = demux.feed(2, tagged);
  auto rest = demux.flush();
  ev.insert(ev.end(), rest.begin(), rest.end());
  int timed = 0;
  for (const auto& e : ev) {
    const bool marker = e.kind == MpiEvent::Kind::kStarted || e.kind == MpiEvent::Kind::kEnded;
    if (marker && e.at) ++timed;
  }
  CHECK(timed == 2);
  CHECK(r->err.find("Unknown 'strict'") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("mpi: the loopback address's network is found on this machine") {
  CHECK(local_network_of("127.0.0.1") == "127.0.0.0/8");
  CHECK(local_network_of("not-an-address").empty());
}

TEST_CASE("mpi: demux splits --tag-output into rank lines, glued partial lines, markers") {
  MpiDemux d("n0");
  std::vector<MpiEvent> ev;
  auto add = [&](int fd, std::string_view bytes) {
    auto e = d.feed(fd, bytes);
    ev.insert(ev.end(), e.begin(), e.end());
  };
  add(2, "[1,0]<stderr>:n0 start 41\n[1,1]<stderr>:n0 st");
  add(2, "art 42\n");
  add(1, "[1,0]<stdout>:out 0\n[1,0]<stdout>:part[1,1]<stdout>:out 1\n[1,1]<stdout>:tail");
  add(2, "------\nmpirun noticed that process rank 1 exited\n");
  add(2, "[1,1]<stderr>:boom[1,1]<stderr>:n0 end exit 3\n[1,0]<stderr>:n0 end signal 15\n");
  auto rest = d.flush();
  ev.insert(ev.end(), rest.begin(), rest.end());
  using K = MpiEvent::Kind;
  std::vector<std::string> seen;
  for (const auto& e : ev) {
    switch (e.kind) {
      case K::kLine:
        seen.push_back(fmt::format("{}.{}:{}", e.rank, e.fd, e.text));
        break;
      case K::kStarted:
        seen.push_back(fmt::format("start {} {}", e.rank, e.value));
        break;
      case K::kEnded:
        seen.push_back(fmt::format("end {} {}{}", e.rank, e.value, e.signaled ? " signal" : ""));
        break;
      case K::kMpirun:
        seen.push_back("mpirun:" + e.text);
        break;
    }
  }
  CHECK(seen == std::vector<std::string>{"start 0 41", "start 1 42", "0.1:out 0", "1.1:out 1",
                                         "mpirun:------",
                                         "mpirun:mpirun noticed that process rank 1 exited",
                                         "1.2:boom", "end 1 3", "end 0 143 signal", "0.1:part",
                                         "1.1:tail"});
}

TEST_CASE("mpi: a marker with another nonce or no number is an ordinary line") {
  MpiDemux d("n0");
  auto ev = d.feed(2, "[1,0]<stderr>:x1 end exit 3\n[1,0]<stderr>:n0 end x\n[2,0]<err>:no tag\n");
  REQUIRE(ev.size() == 3);
  CHECK(ev[0].kind == MpiEvent::Kind::kLine);
  CHECK(ev[1].text == "n0 end x");
  CHECK(ev[2].kind == MpiEvent::Kind::kMpirun);
}

TEST_CASE("mpi: the markers' host times are read, a marker with something else after is a line") {
  MpiDemux d("n0");
  auto ev = d.feed(2, "[1,0]<stderr>:n0 start 41 1765130000.250000\n"
                      "[1,0]<stderr>:n0 end signal 15 1765130002.750000\n"
                      "[1,1]<stderr>:n0 end exit 3\n"
                      "[1,1]<stderr>:n0 end exit 3 soon\n");
  REQUIRE(ev.size() == 4);
  CHECK(ev[0].kind == MpiEvent::Kind::kStarted);
  CHECK(ev[0].value == 41);
  REQUIRE(ev[0].at);
  CHECK(*ev[0].at == doctest::Approx(1765130000.25));
  CHECK(ev[1].kind == MpiEvent::Kind::kEnded);
  CHECK(ev[1].value == 143);
  CHECK(ev[1].signaled);
  REQUIRE(ev[1].at);
  CHECK(*ev[1].at - *ev[0].at == doctest::Approx(2.5));
  CHECK(ev[2].kind == MpiEvent::Kind::kEnded);  // a waiter without Time::HiRes: no time
  CHECK_FALSE(ev[2].at);
  CHECK(ev[3].kind == MpiEvent::Kind::kLine);
  CHECK(ev[3].text == "n0 end exit 3 soon");
}

TEST_CASE("mpi: Open MPI's warnings are told from its reasons") {
  // The line a new user's trial quoted as why a rank had no exit status.
  CHECK(mpirun_warning("[vm:20026] plm:rsh: Warning: setpgid(20032,20032) failed in parent with "
                       "errno=Permission denied(13)"));
  CHECK(mpirun_warning("WARNING: There was an error initializing an OpenFabrics device."));
  CHECK_FALSE(mpirun_warning("mpirun detected that one or more processes exited with non-zero "
                             "status, thus causing"));
  CHECK_FALSE(mpirun_warning("  Exit code:    7"));
  CHECK_FALSE(mpirun_warning("[vm:20026] ORTE has lost communication with a remote daemon."));
}
