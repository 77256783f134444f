#include "comm/config.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

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

}  // namespace

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

TEST_CASE("MLX ring hostfile") {
  const std::string path =
      temp_file(R"([["10.0.0.1:5000"], ["10.0.0.2:5000"], ["10.0.0.3:5000", "10.0.1.3:5000"]])");
  const Config c = config_from_env(env_of({{"MLX_RANK", "2"}, {"MLX_HOSTFILE", path}}));
  CHECK(c.rank == 2);
  CHECK(c.size == 3);
  CHECK(c.coordinator == "10.0.0.1:5000");
  CHECK(c.topology == Topology::kRing);
  CHECK(c.listen == std::vector<std::string>{"10.0.0.3:5000", "10.0.1.3:5000"});
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
