#include "comm/config.h"

#include <doctest/doctest.h>

#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "comm/error.h"

namespace cc::comm {
namespace {

GetEnv env_of(std::map<std::string, std::string> m) {
  return [m = std::move(m)](const char* k) -> const char* {
    const auto it = m.find(k);
    return it == m.end() ? nullptr : it->second.c_str();
  };
}

std::string temp_file(const std::string& content) {
  char name[] = "/tmp/clustercomm-test-XXXXXX";
  const int fd = mkstemp(name);
  REQUIRE(fd >= 0);
  std::ofstream(name) << content;
  ::close(fd);
  return name;
}

// config_from_env(env) in a child process, so that a start-up read that hangs (a FIFO opened
// without O_NONBLOCK waits for a writer forever) fails the test instead of hanging it: the
// error's kind and text, "no error", or "hung" after 10 s (the child is then killed).
std::string config_error_in_child(const GetEnv& env) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    std::string msg = "no error";
    try {
      config_from_env(env);
    } catch (const Error& e) {
      msg = std::string(to_string(e.kind())) + ": " + e.what();
    } catch (...) {
      msg = "another exception";
    }
    [[maybe_unused]] const ssize_t w = ::write(fds[1], msg.data(), msg.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    pollfd p{fds[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) {
      ::kill(pid, SIGKILL);
      got = "hung";
      break;
    }
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return got;
}

}  // namespace

TEST_CASE("start-up files must be regular files of at most 16 MiB: a FIFO, directory, device or "
          "huge file is named at once") {
  char dir_name[] = "/tmp/clustercomm-test-dir-XXXXXX";
  REQUIRE(::mkdtemp(dir_name) != nullptr);
  const std::string dir = dir_name;
  const std::string fifo = dir + "/hosts.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string huge = dir + "/huge.json";
  {
    std::ofstream(huge) << "[";
    REQUIRE(::truncate(huge.c_str(), (off_t{16} << 20) + 1) == 0);  // sparse: 16 MiB + 1
  }
  // Exactly 16 MiB (a hostfile padded with spaces) is still read.
  const std::string just_right = dir + "/ok.json";
  {
    std::ofstream out(just_right);
    const std::string json = R"([["10.0.0.1:5000"], ["10.0.0.2:5000"]])";
    out << json << std::string((size_t{16} << 20) - json.size(), ' ');
  }
  const Config ok = config_from_env(env_of({{"MLX_RANK", "1"}, {"MLX_HOSTFILE", just_right}}));
  CHECK(ok.size == 2);
  CHECK(ok.coordinator == "10.0.0.1:5000");
  struct Case {
    std::string path;
    std::string says;
  };
  const std::vector<Case> cases = {
      {fifo, "is a FIFO (named pipe): it must be the path of a regular JSON file"},
      {dir, "is a directory: it must be the path of a regular JSON file"},
      {"/dev/null", "is a character device: it must be the path of a regular JSON file"},
      {huge, "is larger than 16 MiB"},
  };
  for (const char* var : {"MLX_HOSTFILE", "MLX_IBV_DEVICES"}) {
    for (const Case& k : cases) {
      CAPTURE(var);
      CAPTURE(k.path);
      const auto started = std::chrono::steady_clock::now();
      const std::string got = config_error_in_child(env_of(
          {{"MLX_RANK", "0"}, {var, k.path}, {"MLX_JACCL_COORDINATOR", "127.0.0.1:1"}}));
      CAPTURE(got);
      CHECK(got.rfind("invalid argument: ", 0) == 0);
      CHECK(got.find("environment variable " + std::string(var) + " names '" + k.path + "', ") !=
            std::string::npos);
      CHECK(got.find(k.says) != std::string::npos);
      CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
    }
  }
  std::remove(fifo.c_str());
  std::remove(huge.c_str());
  std::remove(just_right.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("no environment: a world of size 1") {
  const Config c = config_from_env(env_of({}));
  CHECK(c.rank == 0);
  CHECK(c.size == 1);
  CHECK(c.timeout == std::chrono::milliseconds(30000));
}

TEST_CASE("CLUSTERCOMM_* variables") {
  const Config c = config_from_env(env_of({{"CLUSTERCOMM_RANK", "2"},
                                           {"CLUSTERCOMM_SIZE", "4"},
                                           {"CLUSTERCOMM_COORDINATOR", "10.0.0.1:5000"},
                                           {"CLUSTERCOMM_TOKEN", "s3cret"},
                                           {"CLUSTERCOMM_TIMEOUT_MS", "1500"},
                                           {"CLUSTERCOMM_PEER_ADDRS", "10.1.0.2>10.1.0.1,,,x"},
                                           {"CLUSTERCOMM_CONNS_PER_PEER", "2"},
                                           {"CLUSTERCOMM_TOPOLOGY", "ring"}}));
  CHECK(c.rank == 2);
  CHECK(c.size == 4);
  CHECK(c.coordinator == "10.0.0.1:5000");
  CHECK(c.token == "s3cret");
  CHECK(c.timeout == std::chrono::milliseconds(1500));
  REQUIRE(c.routes.size() == 4);
  CHECK(c.routes[0].local == "10.1.0.2");
  CHECK(c.routes[0].remote == "10.1.0.1");
  CHECK(c.routes[3].remote == "x");
  CHECK(c.connections_per_peer == 2);
  CHECK(c.topology == Topology::kRing);
}

TEST_CASE("CLUSTERCOMM_SHM_SINGLE_COPY_MIN: off by default, bytes when set, malformed named") {
  CHECK(config_from_env(env_of({})).tuning.shm_single_copy_min == 0);
  CHECK(config_from_env(env_of({{"CLUSTERCOMM_SHM_SINGLE_COPY_MIN", "65536"}}))
            .tuning.shm_single_copy_min == 65536);
  CHECK_THROWS_WITH_AS(config_from_env(env_of({{"CLUSTERCOMM_SHM_SINGLE_COPY_MIN", "64K"}})),
                       doctest::Contains("CLUSTERCOMM_SHM_SINGLE_COPY_MIN"), Error);
  CHECK_THROWS_WITH_AS(config_from_env(env_of({{"CLUSTERCOMM_SHM_SINGLE_COPY_MIN", "-1"}})),
                       doctest::Contains("CLUSTERCOMM_SHM_SINGLE_COPY_MIN"), Error);
}

TEST_CASE("where the coordinator came from: the variable, or what the launcher says") {
  const std::map<std::string, std::string> base{{"CLUSTERCOMM_RANK", "0"},
                                                {"CLUSTERCOMM_SIZE", "2"},
                                                {"CLUSTERCOMM_COORDINATOR", "10.0.0.1:5000"}};
  CHECK(config_from_env(env_of(base)).coordinator_from == "CLUSTERCOMM_COORDINATOR");
  auto launched = base;
  launched["CLUSTERCOMM_COORDINATOR_FROM"] = "`coordinator_port:` in job.yaml (now 5000)";
  CHECK(config_from_env(env_of(launched)).coordinator_from ==
        "`coordinator_port:` in job.yaml (now 5000)");
  CHECK(config_from_env(env_of({})).coordinator_from.empty());
}

TEST_CASE("an interface name or NCCL's interface list where addresses go is named as one") {
  // aws-do-eks#51: NCCL_SOCKET_IFNAME's "^lo,docker" given to Gloo. Here such a value was looked
  // up as a host name, and each rank failed at start with only "cannot resolve '^lo'".
  CHECK_THROWS_WITH_AS(config_from_env(env_of({{"CLUSTERCOMM_LISTEN", "^lo,docker0"}})),
                       "clustercomm: environment variable CLUSTERCOMM_LISTEN has '^lo', an "
                       "interface list as "
                       "NCCL_SOCKET_IFNAME writes it: it takes addresses (ip[:port], "
                       "comma-separated), not interface names",
                       Error);
  // An interface of this host (lo on Linux, lo0 on macOS: whichever comes first).
  struct if_nameindex* names = ::if_nameindex();
  REQUIRE(names != nullptr);
  REQUIRE(names[0].if_name != nullptr);
  const std::string iface = names[0].if_name;
  ::if_freenameindex(names);
  CAPTURE(iface);
  CHECK_THROWS_WITH_AS(
      config_from_env(env_of({{"CLUSTERCOMM_LISTEN", "127.0.0.1:0," + iface}})),
      doctest::Contains(("environment variable CLUSTERCOMM_LISTEN has '" + iface +
                         "', the name of a network interface of this host: it takes addresses")
                            .c_str()),
      Error);
  CHECK_THROWS_WITH_AS(
      config_from_env(env_of({{"CLUSTERCOMM_RANK", "0"},
                              {"CLUSTERCOMM_SIZE", "2"},
                              {"CLUSTERCOMM_COORDINATOR", "10.0.0.1:5000"},
                              {"CLUSTERCOMM_PEER_ADDRS", "," + iface + ">10.0.0.2"}})),
      doctest::Contains(("CLUSTERCOMM_PEER_ADDRS has '" + iface + "'").c_str()), Error);
  // The loopback interface (lo, lo0): its address is said, ready to use.
  if (iface.rfind("lo", 0) == 0) {
    CHECK_THROWS_WITH_AS(
        config_from_env(env_of({{"CLUSTERCOMM_LISTEN", iface}})),
        ("clustercomm: environment variable CLUSTERCOMM_LISTEN has '" + iface +
         "', the name of a network interface of this host: it takes addresses (ip[:port], "
         "comma-separated), not interface names: " +
         iface +
         "'s is 127.0.0.1 (127.0.0.1:0 for "
         "any port)")
            .c_str(),
        Error);
  }
  // Addresses and names pass as before.
  CHECK(config_from_env(env_of({{"CLUSTERCOMM_LISTEN", "127.0.0.1:0,0.0.0.0:0,[::1]:0"}}))
            .listen.size() == 3);
  CHECK(config_from_env(env_of({{"CLUSTERCOMM_RANK", "0"},
                                {"CLUSTERCOMM_SIZE", "2"},
                                {"CLUSTERCOMM_COORDINATOR", "10.0.0.1:5000"},
                                {"CLUSTERCOMM_PEER_ADDRS", ",10.0.0.1>studio2"}}))
            .routes.size() == 2);
}

TEST_CASE("malformed variables name themselves") {
  CHECK_THROWS_WITH_AS(config_from_env(env_of({{"CLUSTERCOMM_RANK", "x"}})),
                       doctest::Contains("CLUSTERCOMM_RANK"), Error);
  CHECK_THROWS_WITH_AS(
      config_from_env(env_of({{"CLUSTERCOMM_RANK", "1"}, {"CLUSTERCOMM_SIZE", "2"}})),
      doctest::Contains("CLUSTERCOMM_COORDINATOR"), Error);
  CHECK_THROWS_WITH_AS(config_from_env(env_of({{"CLUSTERCOMM_RANK", "3"},
                                               {"CLUSTERCOMM_SIZE", "2"},
                                               {"CLUSTERCOMM_COORDINATOR", "a:1"}})),
                       doctest::Contains("below"), Error);
}

TEST_CASE("an mlx.launch hostfile given as MLX_HOSTFILE or MLX_IBV_DEVICES is named as one") {
  // Ranks started without mlx.launch, its hostfile (mlx.distributed_config's output) in the
  // variables: before, "must hold a non-empty JSON list" / "an N x N JSON matrix".
  const std::string object = temp_file(
      R"({"backend": "ring", "hosts": [{"ssh": "m1", "ips": ["10.0.0.1"]},
                                        {"ssh": "m2", "ips": ["10.0.0.2"]}]})");
  const std::string list = temp_file(R"([{"ssh": "m1", "ips": ["10.0.0.1"], "rdma": [null]}])");
  for (const std::string& path : {object, list}) {
    CAPTURE(path);
    CHECK_THROWS_WITH_AS(
        config_from_env(env_of({{"MLX_RANK", "0"}, {"MLX_HOSTFILE", path}})),
        ("clustercomm: environment variable MLX_HOSTFILE names '" + path +
         "', which is an mlx.launch hostfile (hosts with \"ssh\" and \"ips\"), not the list of "
         "each rank's \"ip:port\" addresses that mlx.launch writes from it for the ring "
         "backend: start the ranks with `mlx.launch --hostfile " + path +
         "` (or clusterctl launch, runtime mlx-ring), or write one entry per rank, "
         "[[\"10.0.0.1:5000\"], [\"10.0.0.2:5000\"], ...]")
            .c_str(),
        Error);
    CHECK_THROWS_WITH_AS(
        config_from_env(env_of({{"MLX_RANK", "0"},
                                {"MLX_IBV_DEVICES", path},
                                {"MLX_JACCL_COORDINATOR", "10.0.0.1:32323"}})),
        doctest::Contains("which is an mlx.launch hostfile (hosts with \"ssh\" and \"ips\"), "
                          "not the N x N device matrix"),
        Error);
  }
  std::remove(object.c_str());
  std::remove(list.c_str());
}

TEST_CASE("MLX ring hostfile: MLX_RANK beyond it names both numbers") {
  const std::string path = temp_file(R"([["10.0.0.1:5000"], ["10.0.0.2:5000"]])");
  CHECK_THROWS_WITH_AS(config_from_env(env_of({{"MLX_RANK", "5"}, {"MLX_HOSTFILE", path}})),
                       ("clustercomm: environment variable MLX_RANK is 5, not below the 2 ranks of "
                        "MLX_HOSTFILE ('" + path + "')")
                           .c_str(),
                       Error);
  std::remove(path.c_str());
}

TEST_CASE("MLX ring hostfile") {
  const std::string path =
      temp_file(R"([["10.0.0.1:5000"], ["10.0.0.2:5000"], ["10.0.0.3:5000", "10.0.1.3:5000"]])");
  const Config c = config_from_env(env_of({{"MLX_RANK", "2"}, {"MLX_HOSTFILE", path}}));
  CHECK(c.rank == 2);
  CHECK(c.size == 3);
  CHECK(c.coordinator == "10.0.0.1:5000");
  CHECK(c.topology == Topology::kRing);
  CHECK(c.listen == std::vector<std::string>{"10.0.0.3:5000", "10.0.1.3:5000"});
  // Cable ends that only the ring neighbours reach: the other pairs connect elsewhere.
  CHECK(c.listen_ring_neighbours_only);
  const Config own = config_from_env(env_of(
      {{"MLX_RANK", "2"}, {"MLX_HOSTFILE", path}, {"CLUSTERCOMM_LISTEN", "0.0.0.0:0"}}));
  CHECK(own.listen == std::vector<std::string>{"0.0.0.0:0"});
  CHECK_FALSE(own.listen_ring_neighbours_only);
  CHECK_FALSE(config_from_env(env_of({{"CLUSTERCOMM_RANK", "0"}, {"CLUSTERCOMM_SIZE", "1"}}))
                  .listen_ring_neighbours_only);
  std::remove(path.c_str());
}

TEST_CASE("MLX jaccl device matrix") {
  const std::string mesh = temp_file(
      R"([[null, "rdma_en2", "rdma_en3"], ["rdma_en2", null, "rdma_en4"], ["rdma_en3", "rdma_en4", null]])");
  const Config c = config_from_env(env_of(
      {{"MLX_RANK", "1"}, {"MLX_IBV_DEVICES", mesh}, {"MLX_JACCL_COORDINATOR", "10.0.0.1:32323"}}));
  CHECK(c.size == 3);
  CHECK(c.rank == 1);
  CHECK(c.coordinator == "10.0.0.1:32323");
  CHECK(c.topology == Topology::kMesh);
  const std::string ring = temp_file(
      R"([[null, "a", null, "b"], ["a", null, "c", null], [null, "c", null, "d"], ["b", null, "d", null]])");
  const Config r = config_from_env(
      env_of({{"MLX_RANK", "0"}, {"MLX_IBV_DEVICES", ring}, {"MLX_JACCL_COORDINATOR", "h:1"}}));
  CHECK(r.topology == Topology::kRing);
  CHECK_THROWS_AS(config_from_env(env_of({{"MLX_RANK", "0"}, {"MLX_IBV_DEVICES", ring}})), Error);
  std::remove(mesh.c_str());
  std::remove(ring.c_str());
}

TEST_CASE("transport choice, device rows and verbs frames from the environment") {
  const std::string m = temp_file(
      R"([[null, "rxe0_1", ["rxe0_2a", "rxe0_2b"]], ["rxe1_0", null, null], ["x", "y", null]])");
  const Config c = config_from_env(
      env_of({{"MLX_RANK", "0"}, {"MLX_IBV_DEVICES", m}, {"MLX_JACCL_COORDINATOR", "h:1"}}));
  CHECK(c.transport == TransportKind::kAuto);
  REQUIRE(c.devices.size() == 3);
  CHECK(c.devices[0].empty());
  CHECK(c.devices[1] == std::vector<std::string>{"rxe0_1"});
  CHECK(c.devices[2] == std::vector<std::string>{"rxe0_2a", "rxe0_2b"});
  const Config d = config_from_env(env_of({{"CLUSTERCOMM_RANK", "1"},
                                           {"CLUSTERCOMM_SIZE", "3"},
                                           {"CLUSTERCOMM_COORDINATOR", "h:1"},
                                           {"MLX_IBV_DEVICES", m},
                                           {"CLUSTERCOMM_TRANSPORT", "verbs"},
                                           {"CLUSTERCOMM_IBV_FRAME_BYTES", "8192"},
                                           {"CLUSTERCOMM_IBV_RECV_FRAMES", "63"},
                                           {"CLUSTERCOMM_IBV_PROFILE", "rc"},
                                           {"CLUSTERCOMM_IBV_PAD_FRAMES", "on"}}));
  CHECK(d.transport == TransportKind::kVerbs);
  const Config shm = config_from_env(env_of({{"CLUSTERCOMM_TRANSPORT", "shm"},
                                             {"CLUSTERCOMM_HOST_ID", "rack1-node7"}}));
  CHECK(shm.transport == TransportKind::kShm);
  CHECK(shm.host_id == "rack1-node7");
  CHECK(c.host_id.empty());  // the default: each rank finds its host
  try {
    config_from_env(env_of({{"CLUSTERCOMM_TRANSPORT", "shared"}}));
    FAIL("CLUSTERCOMM_TRANSPORT=shared was accepted");
  } catch (const Error& err) {
    CHECK(std::string(err.what()).find("CLUSTERCOMM_TRANSPORT") != std::string::npos);
    CHECK(std::string(err.what()).find("expected auto, shm, tcp or verbs") != std::string::npos);
  }
  CHECK(d.ibv_profile == VerbsProfile::kRc);
  CHECK(c.ibv_profile == VerbsProfile::kApple);  // the default
  CHECK(d.devices[0] == std::vector<std::string>{"rxe1_0"});
  CHECK(d.devices[2].empty());
  CHECK(d.ibv_frame_bytes == 8192);
  CHECK(d.ibv_recv_frames == 63);
  CHECK(d.ibv_pad_frames == std::optional<bool>(true));
  CHECK_FALSE(c.ibv_pad_frames.has_value());  // unset: the profile decides
  const auto base = std::map<std::string, std::string>{
      {"CLUSTERCOMM_RANK", "0"}, {"CLUSTERCOMM_SIZE", "2"}, {"CLUSTERCOMM_COORDINATOR", "h:1"}};
  auto with = [&](const char* k, const char* v) {
    auto e = base;
    e[k] = v;
    return e;
  };
  CHECK_THROWS_AS(config_from_env(env_of(with("CLUSTERCOMM_TRANSPORT", "rdma"))), Error);
  CHECK_THROWS_AS(config_from_env(env_of(with("CLUSTERCOMM_IBV_FRAME_BYTES", "6000"))), Error);
  CHECK_THROWS_AS(config_from_env(env_of(with("CLUSTERCOMM_IBV_FRAME_BYTES", "16777216"))), Error);
  CHECK_THROWS_AS(config_from_env(env_of(with("CLUSTERCOMM_IBV_RECV_FRAMES", "64"))), Error);
  CHECK(config_from_env(env_of(with("CLUSTERCOMM_IBV_PAD_FRAMES", "0"))).ibv_pad_frames ==
        std::optional<bool>(false));
  CHECK_THROWS_WITH_AS(config_from_env(env_of(with("CLUSTERCOMM_IBV_PAD_FRAMES", "yes"))),
                       doctest::Contains("expected 1 (on) or 0 (off)"), Error);
  // Unset: the platform decides (verbs_setup.cc: per message on Linux, off on macOS).
  CHECK_FALSE(config_from_env(env_of(base)).ibv_zero_copy.has_value());
  CHECK(config_from_env(env_of(with("CLUSTERCOMM_IBV_ZERO_COPY", "message"))).ibv_zero_copy ==
        ZeroCopy::kPerMessage);
  CHECK(config_from_env(env_of(with("CLUSTERCOMM_IBV_ZERO_COPY", "1"))).ibv_zero_copy ==
        ZeroCopy::kCached);
  CHECK(config_from_env(env_of(with("CLUSTERCOMM_IBV_ZERO_COPY", "on"))).ibv_zero_copy ==
        ZeroCopy::kCached);
  CHECK(config_from_env(env_of(with("CLUSTERCOMM_IBV_ZERO_COPY", "cached"))).ibv_zero_copy ==
        ZeroCopy::kCached);
  CHECK(config_from_env(env_of(with("CLUSTERCOMM_IBV_ZERO_COPY", "0"))).ibv_zero_copy ==
        ZeroCopy::kOff);
  CHECK_THROWS_WITH_AS(config_from_env(env_of(with("CLUSTERCOMM_IBV_ZERO_COPY", "true"))),
                       doctest::Contains("CLUSTERCOMM_IBV_ZERO_COPY is 'true', expected message "
                                         "(per message), 1 or cached"),
                       Error);
  CHECK_THROWS_WITH_AS(config_from_env(env_of(with("CLUSTERCOMM_IBV_PROFILE", "ud"))),
                       doctest::Contains("expected apple (UC) or rc"), Error);
  CHECK_THROWS_AS(config_from_env(env_of(with("MLX_IBV_DEVICES", m.c_str()))), Error);  // 3 rows, size 2
  std::remove(m.c_str());
}

}  // namespace cc::comm
