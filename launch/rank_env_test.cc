#include "launch/rank_env.h"
#include "provision/hostfile_test_states.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "util/atomic_file.h"

using namespace cc::launch;
namespace fs = std::filesystem;

namespace {
std::string get(const std::vector<EnvVar>& env, const std::string& name) {
  auto it = std::find_if(env.begin(), env.end(), [&](const EnvVar& v) { return v.first == name; });
  return it == env.end() ? "<unset>" : it->second;
}

cc::provision::MlxHostfile mesh3() {
  cc::provision::MlxHostfile hf;
  hf.backend = "jaccl";
  hf.envs = {"MLX_METAL_FAST_SYNCH=1"};
  hf.hosts = {{"mac1", {"10.0.0.11"}, {{}, {"rdma_en1"}, {"rdma_en2", "rdma_en3"}}},
              {"mac2", {"10.0.0.12"}, {{"rdma_en4"}, {}, {"rdma_en5"}}},
              {"mac3", {"10.0.0.13"}, {{"rdma_en6", "rdma_en7"}, {"rdma_en8"}, {}}}};
  return hf;
}
}  // namespace

TEST_CASE("rank_env: clustercomm gets rank, size, rank 0's address and the token") {
  WorldPlan p;
  p.hosts = {{"h1", "10.9.0.1", ""}, {"h2", "10.9.0.2", ""}};
  p.ranks_per_host = 2;
  p.coordinator_port = 4000;
  p.token = "t0k";
  p.env = {{"A", "1"}};
  p.secrets = {{"S", "secret"}};
  CHECK(p.world_size() == 4);
  CHECK(p.host_of(2) == 1);
  auto env = rank_env(p, 3, "/tmp/j");
  CHECK(get(env, "CLUSTERCOMM_RANK") == "3");
  CHECK(get(env, "CLUSTERCOMM_SIZE") == "4");
  CHECK(get(env, "CLUSTERCOMM_COORDINATOR") == "10.9.0.1:4000");
  CHECK(get(env, "CLUSTERCOMM_TOKEN") == "t0k");
  CHECK(get(env, "A") == "1");
  CHECK(get(env, "S") == "secret");
  CHECK(get(env, "MLX_RANK") == "<unset>");
  CHECK(runtime_files(p).empty());
}

TEST_CASE("rank_env: the coordinator's origin reaches the ranks, so messages name the job file") {
  WorldPlan p;
  p.hosts = {{"h1", "10.9.0.1", ""}, {"h2", "10.9.0.2", ""}};
  p.token = "t0k";
  CHECK(get(rank_env(p, 1, "/tmp/j"), "CLUSTERCOMM_COORDINATOR_FROM") == "<unset>");
  p.coordinator_from = "`coordinator_port:` in job.yaml (now 32323)";
  CHECK(get(rank_env(p, 1, "/tmp/j"), "CLUSTERCOMM_COORDINATOR_FROM") == p.coordinator_from);
  p.runtime = Runtime::kMlxRing;
  p.mlx = mesh3();
  p.hosts.push_back({"h3", "10.9.0.3", ""});
  CHECK(get(rank_env(p, 1, "/tmp/j"), "CLUSTERCOMM_COORDINATOR_FROM") == p.coordinator_from);
}

TEST_CASE("rank_env: mlx-jaccl as mlx.launch: MLX_RANK, device file, coordinator, envs") {
  WorldPlan p;
  p.runtime = Runtime::kMlxJaccl;
  p.hosts = {{"mac1", "", ""}, {"mac2", "", ""}, {"mac3", "", ""}};
  p.mlx = mesh3();
  REQUIRE(check_world(p).ok());
  auto env = rank_env(p, 1, "/tmp/j");
  CHECK(get(env, "MLX_RANK") == "1");
  CHECK(get(env, "MLX_IBV_DEVICES") == "/tmp/j/mlx-ibv-devices.json");
  CHECK(get(env, "MLX_JACCL_COORDINATOR") == "10.0.0.11:32323");
  CHECK(get(env, "MLX_JACCL_RING") == "<unset>");
  CHECK(get(env, "MLX_METAL_FAST_SYNCH") == "1");
  p.token = "t0k";
  CHECK(get(rank_env(p, 1, "/tmp/j"), "CLUSTERCOMM_TOKEN") == "t0k");  // for libclustercomm jobs
  auto files = runtime_files(p);
  REQUIRE(files.size() == 1);
  CHECK(files[0].content ==
        "[[null,\"rdma_en1\",[\"rdma_en2\",\"rdma_en3\"]],[\"rdma_en4\",null,\"rdma_en5\"],"
        "[[\"rdma_en6\",\"rdma_en7\"],\"rdma_en8\",null]]\n");
  p.runtime = Runtime::kMlxJacclRing;
  CHECK(get(rank_env(p, 0, "/tmp/j"), "MLX_JACCL_RING") == "1");
  p.ranks_per_host = 2;
  CHECK_FALSE(check_world(p).ok());
}

TEST_CASE("rank_env: mlx-ring: MLX_HOSTFILE lists ip:port per rank, ports counting up") {
  WorldPlan p;
  p.runtime = Runtime::kMlxRing;
  p.coordinator_port = 5000;
  p.hosts = {{"a", "", ""}, {"b", "", ""}};
  cc::provision::MlxHostfile hf;
  hf.backend = "ring";
  hf.hosts = {{"a", {"10.1.0.1", "10.1.1.1"}, {}}, {"b", {"10.1.0.2", "10.1.1.2"}, {}}};
  p.mlx = hf;
  auto env = rank_env(p, 0, "/x");
  CHECK(get(env, "MLX_HOSTFILE") == "/x/mlx-hostfile.json");
  CHECK(get(env, "MLX_RANK") == "0");
  // A libclustercomm program under mlx-ring is given rank 0's host, as under clustercomm: the
  // hostfile's first address (10.1.0.1, a cable's end) is reached by its ring neighbour only.
  CHECK(get(env, "CLUSTERCOMM_COORDINATOR") == "a:5000");
  p.hosts[0].address = "192.168.1.10";
  CHECK(get(rank_env(p, 1, "/x"), "CLUSTERCOMM_COORDINATOR") == "192.168.1.10:5000");
  auto files = runtime_files(p);
  REQUIRE(files.size() == 1);
  CHECK(files[0].content ==
        "[[\"10.1.0.1:5000\",\"10.1.1.1:5001\"],[\"10.1.0.2:5002\",\"10.1.1.2:5003\"]]\n");
}

TEST_CASE("rank_env: an mlx runtime without a hostfile is refused with what to do") {
  WorldPlan p;
  p.runtime = Runtime::kMlxJaccl;
  p.hosts = {{"a", "", ""}};
  auto st = check_world(p);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find("hostfile:FILE") != std::string::npos);
}

TEST_CASE("rank_env: clustercomm over the cables of a cluster state: peer addresses, devices") {
  // The 3-Mac mesh of tests/data/bundles/mac-mesh3: m1-m2 doubled, each Thunderbolt port with a
  // routable address of its own (10.254.<host><receptacle>.<host>).
  const cc::discovery::ClusterState s = cc::provision::testing::mesh3();
  WorldPlan p;
  p.hosts = {{"m1", "10.0.0.11", ""}, {"m2", "10.0.0.12", ""}, {"m3", "10.0.0.13", ""}};
  p.token = "t";
  add_cable_links(p, s);
  REQUIRE(check_world(p).ok());
  REQUIRE(p.routes.size() == 3);
  // Each pair's first cable in state order: m1 en2 - m2 en3, m1 en4 - m3 en2, m2 en4 - m3 en3.
  CHECK(get(rank_env(p, 0, "/j"), "CLUSTERCOMM_PEER_ADDRS") ==
        ",10.254.11.1>10.254.22.2,10.254.13.1>10.254.31.3");
  CHECK(get(rank_env(p, 1, "/j"), "CLUSTERCOMM_PEER_ADDRS") ==
        "10.254.22.2>10.254.11.1,,10.254.23.2>10.254.32.3");
  CHECK(get(rank_env(p, 2, "/j"), "CLUSTERCOMM_PEER_ADDRS") ==
        "10.254.31.3>10.254.13.1,10.254.32.3>10.254.23.2,");
  CHECK(get(rank_env(p, 2, "/j"), "MLX_IBV_DEVICES") == "/j/mlx-ibv-devices.json");
  auto files = runtime_files(p);
  REQUIRE(files.size() == 1);
  CHECK(files[0].content ==
        "[[null,[\"rdma_en2\",\"rdma_en3\"],\"rdma_en4\"],[[\"rdma_en3\",\"rdma_en2\"],null,"
        "\"rdma_en4\"],[\"rdma_en2\",\"rdma_en3\",null]]\n");

  // Two ranks per host: same-host peers take the advertised address; the device matrix has a
  // row and a column per rank: the host pair's cell between hosts, null inside a host (shared
  // memory carries those pairs).
  p.ranks_per_host = 2;
  CHECK(get(rank_env(p, 3, "/j"), "CLUSTERCOMM_PEER_ADDRS") ==
        "10.254.22.2>10.254.11.1,10.254.22.2>10.254.11.1,,,"
        "10.254.23.2>10.254.32.3,10.254.23.2>10.254.32.3");
  CHECK(get(rank_env(p, 3, "/j"), "MLX_IBV_DEVICES") == "/j/mlx-ibv-devices.json");
  files = runtime_files(p);
  REQUIRE(files.size() == 1);
  const auto m = nlohmann::json::parse(files[0].content);
  REQUIRE(m.size() == 6);
  for (const auto& row : m) REQUIRE(row.size() == 6);
  CHECK(m[0].dump() == R"([null,null,["rdma_en2","rdma_en3"],["rdma_en2","rdma_en3"],"rdma_en4","rdma_en4"])");
  CHECK(m[3].dump() == R"([["rdma_en3","rdma_en2"],["rdma_en3","rdma_en2"],null,null,"rdma_en4","rdma_en4"])");
  CHECK(m[5].dump() == R"(["rdma_en2","rdma_en2","rdma_en3","rdma_en3",null,null])");
}

TEST_CASE("rank_env: a lab without RDMA gets peer addresses only, no addresses, neither") {
  WorldPlan p;
  p.hosts = {{"h1", "", ""}, {"h2", "", ""}, {"h3", "", ""}};
  add_cable_links(p, cc::provision::testing::addressed_lab(3));
  CHECK_FALSE(p.devices);
  CHECK(get(rank_env(p, 1, "/j"), "CLUSTERCOMM_PEER_ADDRS") ==
        "192.0.2.21>192.0.2.11,,192.0.2.22>192.0.2.32");
  CHECK(get(rank_env(p, 1, "/j"), "MLX_IBV_DEVICES") == "<unset>");
  WorldPlan bare;
  bare.hosts = p.hosts;
  add_cable_links(bare, cc::provision::testing::macs(3, 0));
  CHECK(bare.routes.empty());
  CHECK(get(rank_env(bare, 1, "/j"), "CLUSTERCOMM_PEER_ADDRS") == "<unset>");
}

TEST_CASE("rank_env: an IPv6 coordinator and ring addresses reach the ranks in brackets") {
  WorldPlan p;
  p.hosts = {{"h1", "2001:db8::1", ""}, {"h2", "2001:db8::2", ""}};
  p.coordinator_port = 5000;
  CHECK(get(rank_env(p, 1, "/j"), "CLUSTERCOMM_COORDINATOR") == "[2001:db8::1]:5000");
  p.hosts[0].address = "fe80::1%eth0";
  CHECK(get(rank_env(p, 1, "/j"), "CLUSTERCOMM_COORDINATOR") == "[fe80::1%eth0]:5000");

  p.runtime = Runtime::kMlxJaccl;
  p.mlx = mesh3();
  p.mlx->hosts[0].ips = {"fe80::1%en0"};
  p.hosts.push_back({"h3", "", ""});
  CHECK(get(rank_env(p, 2, "/j"), "MLX_JACCL_COORDINATOR") == "[fe80::1%en0]:5000");

  cc::provision::MlxHostfile hf;
  hf.backend = "ring";
  hf.hosts = {{"a", {"2001:db8::1", "10.1.0.1"}, {}}, {"b", {"fe80::2%en1"}, {}}};
  CHECK(mlx_ring_hostfile_json(hf, 7000) ==
        "[[\"[2001:db8::1]:7000\",\"10.1.0.1:7001\"],[\"[fe80::2%en1]:7002\"]]\n");
}

TEST_CASE("launch_env_names: exactly what rank_env sets, whatever the runtime") {
  const auto& names = launch_env_names();
  CHECK(std::is_sorted(names.begin(), names.end()));
  for (const char* n : {"CLUSTERCOMM_RANK", "CLUSTERCOMM_SIZE", "CLUSTERCOMM_COORDINATOR",
                        "CLUSTERCOMM_COORDINATOR_FROM", "CLUSTERCOMM_TOKEN",
                        "CLUSTERCOMM_PEER_ADDRS", "MLX_RANK", "MLX_HOSTFILE",
                        "MLX_IBV_DEVICES", "MLX_JACCL_COORDINATOR", "MLX_JACCL_RING"}) {
    CAPTURE(n);
    CHECK(std::binary_search(names.begin(), names.end(), std::string(n)));
  }
  // Variables a job sets for itself stay allowed.
  for (const char* n : {"MLX_METAL_FAST_SYNCH", "CLUSTERCOMM_TIMEOUT_MS", "PATH", "A"}) {
    CAPTURE(n);
    CHECK_FALSE(env_name_problem(n).has_value());
  }
  // Every variable any runtime sets on a plan (less the job's env, secrets and hostfile envs)
  // is in the list.
  WorldPlan p;
  p.hosts = {{"mac1", "10.0.0.11", ""}, {"mac2", "10.0.0.12", ""}, {"mac3", "10.0.0.13", ""}};
  p.mlx = mesh3();
  p.devices = mesh3();
  p.token = "t";
  p.coordinator_from = "x";
  p.routes = {{"", "a>b", "a>c"}, {"b>a", "", "b>c"}, {"c>a", "c>b", ""}};
  for (Runtime r : {Runtime::kClusterComm, Runtime::kMlxJaccl, Runtime::kMlxJacclRing,
                    Runtime::kMlxRing, Runtime::kMpi, Runtime::kNone}) {
    p.runtime = r;
    for (const auto& v : rank_env(p, 2, "/j")) {
      if (v.first == "MLX_METAL_FAST_SYNCH") continue;  // the hostfile's envs
      if (v.first == "PYTHONUNBUFFERED") continue;      // a default a job may replace
      CAPTURE(v.first);
      CHECK(std::binary_search(names.begin(), names.end(), v.first));
    }
  }
}

TEST_CASE("rank_env: Python writes each line (PYTHONUNBUFFERED=1) unless the job says otherwise") {
  // A rank's stdout is a pipe: Python held its prints until exit (8 KiB at a time), so a job's
  // progress came at its end and a busy, printing rank drew the stall warning. mlx.launch's
  // ranks run under `ssh -tt`, a terminal, where Python writes each line.
  WorldPlan p;
  p.hosts = {{"h1", "10.9.0.1", ""}};
  p.token = "t";
  for (Runtime r : {Runtime::kClusterComm, Runtime::kNone}) {
    p.runtime = r;
    auto env = rank_env(p, 0, "/j");
    CHECK(get(env, "PYTHONUNBUFFERED") == "1");
  }
  p.env = {{"PYTHONUNBUFFERED", ""}};  // the job's own value, once
  auto env = rank_env(p, 0, "/j");
  CHECK(std::count_if(env.begin(), env.end(),
                      [](const EnvVar& v) { return v.first == "PYTHONUNBUFFERED"; }) == 1);
  CHECK(get(env, "PYTHONUNBUFFERED") == "");
  p.env.clear();
  p.secrets = {{"PYTHONUNBUFFERED", "x"}};
  CHECK(get(rank_env(p, 0, "/j"), "PYTHONUNBUFFERED") == "x");
  p.secrets.clear();
  p.runtime = Runtime::kMlxRing;
  p.mlx = mesh3();
  p.hosts = {{"mac1", "10.0.0.11", ""}, {"mac2", "10.0.0.12", ""}, {"mac3", "10.0.0.13", ""}};
  p.mlx->envs = {"PYTHONUNBUFFERED=0"};
  CHECK(get(rank_env(p, 0, "/j"), "PYTHONUNBUFFERED") == "0");
  // A job may set it: it is no variable of launch's own.
  CHECK_FALSE(env_name_problem("PYTHONUNBUFFERED").has_value());
  const auto& names = launch_env_names();
  CHECK_FALSE(std::binary_search(names.begin(), names.end(), std::string("PYTHONUNBUFFERED")));
}

TEST_CASE("clustercomm_tuning_names: with launch's own, every CLUSTERCOMM_ variable comm reads") {
  // comm/config.cc is libclustercomm's one reader of its variables; launch cannot link comm/, so
  // it keeps the names and this test keeps them true: a variable added there and not here would
  // draw a job file's "reads no variable" warning although it is read.
  const fs::path config = fs::path(CLUSTERCTL_TEST_DATA) / ".." / ".." / "comm" / "config.cc";
  auto text = cc::util::read_file(config);
  REQUIRE(text.ok());
  std::set<std::string> in_comm;
  const std::regex quoted("\"(CLUSTERCOMM_[A-Z0-9_]+)\"");
  for (auto it = std::sregex_iterator(text->begin(), text->end(), quoted);
       it != std::sregex_iterator(); ++it) {
    in_comm.insert((*it)[1].str());
  }
  REQUIRE(in_comm.size() > 10);
  std::set<std::string> known(clustercomm_tuning_names().begin(), clustercomm_tuning_names().end());
  for (const std::string& n : launch_env_names()) {
    if (n.starts_with("CLUSTERCOMM_")) known.insert(n);
  }
  CHECK(in_comm == known);
  CHECK(std::is_sorted(clustercomm_tuning_names().begin(), clustercomm_tuning_names().end()));

  CHECK_FALSE(unread_clustercomm_name("CLUSTERCOMM_TIMEOUT_MS").has_value());
  CHECK_FALSE(unread_clustercomm_name("CLUSTERCOMM_RANK").has_value());  // launch's own
  CHECK_FALSE(unread_clustercomm_name("OMP_NUM_THREADS").has_value());
  CHECK(unread_clustercomm_name("CLUSTERCOMM_TIMEOUT") ==
        "libclustercomm reads no variable CLUSTERCOMM_TIMEOUT, so it changes nothing (did you "
        "mean 'CLUSTERCOMM_TIMEOUT_MS'?)");
  // Where else an operator's variable reaches the ranks ("NAME=VALUE": a hostfile's "envs",
  // `hostfile --env`, the launching shell's environment): named, never the value.
  const auto w = unread_clustercomm_warnings(
      {"CLUSTERCOMM_TRANSPROT=tcp", "CLUSTERCOMM_TIMEOUT_MS=9", "PATH=/bin",
       "CLUSTERCOMM_SPINUS=secret-ish", "CLUSTERCOMM_X"},
      "hosts.json: warning: \"envs\"");
  REQUIRE(w.size() == 3);
  CHECK(w[0] ==
        "hosts.json: warning: \"envs\": CLUSTERCOMM_TRANSPROT: libclustercomm reads no variable "
        "CLUSTERCOMM_TRANSPROT, so it changes nothing (did you mean 'CLUSTERCOMM_TRANSPORT'?)");
  CHECK(w[1].starts_with("hosts.json: warning: \"envs\": CLUSTERCOMM_SPINUS: "));
  CHECK(w[1].find("secret-ish") == std::string::npos);
  CHECK(w[2].starts_with("hosts.json: warning: \"envs\": CLUSTERCOMM_X: "));
}

TEST_CASE("env_name_problem: launch's variables, the wrapper's, and malformed names") {
  CHECK(env_name_problem("MLX_RANK") == EnvNameProblem::kSetByLaunch);
  CHECK(env_name_problem("MLX_HOSTFILE") == EnvNameProblem::kSetByLaunch);
  CHECK(env_name_problem("CLUSTERCOMM_TOKEN") == EnvNameProblem::kSetByLaunch);
  CHECK(env_name_problem("_ccw_d") == EnvNameProblem::kWrapperOwn);
  CHECK(env_name_problem("_ccw_anything") == EnvNameProblem::kWrapperOwn);
  CHECK(env_name_problem("1BAD") == EnvNameProblem::kInvalid);
  CHECK(env_name_problem("") == EnvNameProblem::kInvalid);
  CHECK(rank_env_entry_problem("MLX_RANK=0", "--env") ==
        "'MLX_RANK' is set by launch for each rank (each rank gets its own value; one set here "
        "would be every rank's): remove it from --env");
  CHECK(rank_env_entry_problem("_ccw_d=/tmp", "--env") ==
        "'_ccw_d': names beginning with '_ccw_' are the rank wrapper's own: rename it, or remove "
        "it from --env");
  CHECK(rank_env_entry_problem("NOEQ", "--env") ==
        "expected NAME=VALUE, but there is no '=' (an empty value is NAME=)");
  CHECK_FALSE(rank_env_entry_problem("MLX_METAL_FAST_SYNCH=1", "--env").has_value());
}

TEST_CASE("read_hostfile: a hostfile's envs may not set what launch sets, naming file and entry") {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("cc-rank-env-" + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/hosts.json";
  auto read_with = [&](const std::string& envs) {
    const std::string text = "{\"backend\": \"ring\", \"envs\": [" + envs +
                             "], \"hosts\": [{\"ssh\": \"a\", \"ips\": [\"10.0.0.1\"]}, "
                             "{\"ssh\": \"b\", \"ips\": [\"10.0.0.2\"]}]}";
    REQUIRE(cc::util::write_file_atomic(path, text).ok());
    auto hf = read_hostfile(path);
    return hf.ok() ? std::string("ok") : hf.error().message;
  };
  CHECK(read_with("\"MLX_METAL_FAST_SYNCH=1\"") == "ok");
  CHECK(read_with("\"A=1\", \"MLX_RANK=0\"") ==
        path +
            ": envs[1] = \"MLX_RANK=0\": 'MLX_RANK' is set by launch for each rank (each rank "
            "gets its own value; one set here would be every rank's): remove it from the "
            "hostfile's \"envs\"");
  for (const char* owned : {"MLX_JACCL_RING=1", "MLX_HOSTFILE=/x", "CLUSTERCOMM_TOKEN=x",
                            "CLUSTERCOMM_COORDINATOR=1.2.3.4:5", "MLX_IBV_DEVICES=/d"}) {
    CAPTURE(owned);
    CHECK(read_with(std::string("\"") + owned + "\"")
              .starts_with(path + ": envs[0] = \"" + owned + "\": '"));
    CHECK(read_with(std::string("\"") + owned + "\"").find("is set by launch for each rank") !=
          std::string::npos);
  }
  CHECK(read_with("\"_ccw_d=/data\"") ==
        path +
            ": envs[0] = \"_ccw_d=/data\": '_ccw_d': names beginning with '_ccw_' are the "
            "rank wrapper's own: rename it, or remove it from the hostfile's \"envs\"");
  CHECK(read_with("\"NOEQ\"").starts_with(path + ": envs[0] = \"NOEQ\": expected NAME=VALUE"));
  // Every bad entry in one run: launch's own check and the reader's, in entry order.
  CHECK(read_with("\"MLX_RANK=0\", \"NOEQ\", \"OK=1\", \"_ccw_d=1\"") ==
        path +
            ": envs[0] = \"MLX_RANK=0\": 'MLX_RANK' is set by launch for each rank (each rank "
            "gets its own value; one set here would be every rank's): remove it from the "
            "hostfile's \"envs\"\n" +
            path +
            ": envs[1] = \"NOEQ\": expected NAME=VALUE, but there is no '=' (an empty "
            "value is NAME=)\n" +
            path +
            ": envs[3] = \"_ccw_d=1\": '_ccw_d': names beginning with '_ccw_' are the "
            "rank wrapper's own: rename it, or remove it from the hostfile's \"envs\"");
  std::filesystem::remove_all(dir);
}
