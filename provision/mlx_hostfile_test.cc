#include "provision/mlx_hostfile.h"

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "provision/hostfile.h"
#include "provision/hostfile_test_states.h"
#include "util/atomic_file.h"

namespace cc::provision {
namespace {

using util::ExitCode;
using Cells = std::vector<MlxCell>;

const std::string kShape =
    "an MLX hostfile is {\"backend\": ..., \"envs\": [...], \"hosts\": [{\"ssh\": NAME, \"ips\": "
    "[...], \"rdma\": [...]}, ...]} or a list of host objects";

std::string parse_error(const std::string& text) {
  auto hf = parse_mlx_hostfile(text, "h.json");
  REQUIRE(!hf.ok());
  CHECK(hf.error().code == ExitCode::kUsage);
  return hf.error().message;
}

MlxHostfile generated(const discovery::ClusterState& s, HostfileFormat f) {
  auto hf = make_mlx_hostfile(s, f);
  REQUIRE(hf.ok());
  hf->path = "hosts.json";
  return *hf;
}

TEST_CASE("mlx hostfile: object form") {
  auto hf = parse_mlx_hostfile(R"({"backend": "jaccl", "envs": ["A=1", "B="],
    "hosts": [{"ssh": "a", "ips": ["10.0.0.1"], "rdma": [null, ["x1", "x2"]]},
              {"ssh": "b", "ips": [], "rdma": [["y1", "y2"], null], "extra": 1}]})",
                               "h.json");
  REQUIRE(hf.ok());
  CHECK(hf->path == "h.json");
  CHECK(hf->backend == "jaccl");
  CHECK(hf->envs == std::vector<std::string>{"A=1", "B="});
  REQUIRE(hf->hosts.size() == 2);
  CHECK(hf->hosts[0].ssh == "a");
  CHECK(hf->hosts[0].ips == std::vector<std::string>{"10.0.0.1"});
  CHECK(hf->hosts[0].rdma == Cells{{}, {"x1", "x2"}});
  CHECK(hf->hosts[1].ips.empty());
  CHECK(hf->hosts[1].rdma == Cells{{"y1", "y2"}, {}});
  CHECK(rank_label(*hf, 1) == "rank 1 (b)");
}

TEST_CASE("mlx hostfile: bare list, ring, and an empty list cell read as null") {
  auto bare = parse_mlx_hostfile(R"([{"ssh": "a", "ips": ["10.0.0.1"]}, {"ssh": "b"}])", "h.json");
  REQUIRE(bare.ok());
  CHECK(bare->backend.empty());
  CHECK(bare->envs.empty());
  REQUIRE(bare->hosts.size() == 2);
  CHECK(bare->hosts[1].ssh == "b");
  CHECK(bare->hosts[1].ips.empty());
  CHECK(bare->hosts[1].rdma.empty());

  auto ring = parse_mlx_hostfile(R"({"backend": "ring", "hosts": [
    {"ssh": "a", "ips": ["192.0.2.1", "192.0.2.2"], "rdma": []},
    {"ssh": "b", "ips": ["192.0.2.3", "192.0.2.4"], "rdma": []}]})",
                                 "h.json");
  REQUIRE(ring.ok());
  CHECK(ring->hosts[1].ips == std::vector<std::string>{"192.0.2.3", "192.0.2.4"});

  auto empty = parse_mlx_hostfile(R"([{"ssh": "a", "rdma": [[], "x"]},
                                      {"ssh": "b", "rdma": ["y", null]}])",
                                  "h.json");
  REQUIRE(empty.ok());
  CHECK(empty->hosts[0].rdma == Cells{{}, {"x"}});
}

TEST_CASE("mlx hostfile: render then parse gives the same hostfile") {
  MlxHostfile hf{"jaccl-ring", {"A=1"}, {}, ""};
  hf.hosts.push_back({"a", {"10.0.0.1"}, {{}, {"x1", "x2"}, {"x3", "x4"}}});
  hf.hosts.push_back({"b", {}, {{"y1", "y2"}, {}, {"y3", "y4"}}});
  hf.hosts.push_back({"c", {"10.0.0.3"}, {{"z1", "z2"}, {"z3", "z4"}, {}}});
  auto back = parse_mlx_hostfile(render_mlx_hostfile(hf), "h.json");
  REQUIRE(back.ok());
  CHECK(back->backend == hf.backend);
  CHECK(back->envs == hf.envs);
  REQUIRE(back->hosts.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(back->hosts[i].ssh == hf.hosts[i].ssh);
    CHECK(back->hosts[i].ips == hf.hosts[i].ips);
    CHECK(back->hosts[i].rdma == hf.hosts[i].rdma);
  }
}

TEST_CASE("mlx hostfile: malformed files, each message naming the file and the rank") {
  CHECK(parse_error("{\n  \"hosts\": [\n    {\"ssh\": \"a\",}\n  ]\n}") ==
        "h.json: not valid JSON at line 3, column 16: trailing comma after the last entry "
        "(before the '}' at line 3, column 17): JSON allows none; remove it; " +
            kShape);
  CHECK(parse_error("[]") ==
        "h.json: \"hosts\" must be a non-empty list of host objects; " + kShape);
  CHECK(parse_error("42") ==
        "h.json: \"hosts\" must be a non-empty list of host objects; " + kShape);
  CHECK(parse_error(R"({"backend": "jaccl"})") == "h.json: no \"hosts\" list; " + kShape);
  CHECK(parse_error(R"({"backend": "nccl", "hosts": [{"ssh": "a"}]})") ==
        "h.json: unknown backend \"nccl\": use \"jaccl\", \"jaccl-ring\", \"ring\" or \"\"");
  CHECK(parse_error(R"({"envs": ["A"], "hosts": [{"ssh": "a"}]})") ==
        "h.json: envs[0] = \"A\": expected NAME=VALUE, but there is no '=' (an empty value is "
        "NAME=)");
  CHECK(parse_error(R"({"envs": ["=1"], "hosts": [{"ssh": "a"}]})") ==
        "h.json: envs[0] = \"=1\": expected NAME=VALUE, but there is no name before '='");
  CHECK(parse_error(R"({"envs": ["OK=1", "MY-VAR=1"], "hosts": [{"ssh": "a"}]})") ==
        "h.json: envs[1] = \"MY-VAR=1\": expected NAME=VALUE, but 'MY-VAR' is not a valid "
        "environment variable name: use letters, digits and '_', not starting with a digit");
  CHECK(parse_error(R"({"envs": [7], "hosts": [{"ssh": "a"}]})") ==
        "h.json: envs[0] = 7 is not a \"NAME=VALUE\" string");
  CHECK(parse_error(R"([{"ssh": "a"}, {"ips": ["10.0.0.2"]}])") ==
        "h.json: rank 1 has no \"ssh\" name (hosts[1]); " + kShape);
  CHECK(parse_error(R"([{"ssh": "a"}, {"ssh": "b"}, {"ssh": "a"}])") ==
        "h.json: a is named twice (ranks 0 and 2): one rank per host");
  CHECK(parse_error(R"([{"ssh": "a", "ips": "10.0.0.1"}])") ==
        "h.json: rank 0 (a): \"ips\" must be a list");
  CHECK(parse_error(R"([{"ssh": "a", "ips": [1]}])") ==
        "h.json: rank 0 (a): ips[0] must be an address string");
  CHECK(parse_error(R"([{"ssh": "a", "rdma": {"b": "x"}}])") ==
        "h.json: rank 0 (a): \"rdma\" must be a list");
  CHECK(parse_error(R"([{"ssh": "a", "rdma": [null, 5]}, {"ssh": "b", "rdma": [5, null]}])") ==
        "h.json: rank 0 (a): rdma[0][1] must be null, a device name or a list of device names "
        "(found JSON number)\n"
        "h.json: rank 1 (b): rdma[1][0] must be null, a device name or a list of device names "
        "(found JSON number)");
  CHECK(parse_error(R"([{"ssh": "a", "rdma": [null, ["x", ""]]}])") ==
        "h.json: rank 0 (a): rdma[0][1] has an entry that is not a device name");
}

TEST_CASE("mlx hostfile: device matrix shape, diagonal and symmetry") {
  CHECK(parse_error(R"([{"ssh": "a", "rdma": [null, "x"]}, {"ssh": "b", "rdma": [null]}])") ==
        "h.json: rank 1 (b): \"rdma\" is a list of 1, want 2 cells (one per rank)");
  CHECK(parse_error(R"([{"ssh": "a", "rdma": [null, "x"]}, {"ssh": "b", "rdma": []}])") ==
        "h.json: rank 1 (b): \"rdma\" is a list of 0, want 2 cells (one per rank)");
  CHECK(parse_error(R"([{"ssh": "a", "rdma": ["x", "y"]}, {"ssh": "b", "rdma": ["z", null]}])") ==
        "h.json: rank 0 (a): rdma[0][0] must be null (a host has no cable to itself)");
  CHECK(parse_error(R"([{"ssh": "a", "rdma": [null, ["x", "z"]]},
                        {"ssh": "b", "rdma": ["y", null]}])") ==
        "h.json: rdma[0][1] lists 2 device(s) but rdma[1][0] lists 1: both ends of a pair name "
        "the same cables (rank 0 (a) and rank 1 (b))");
  CHECK(parse_error(R"([{"ssh": "a", "rdma": [null, "x"]}, {"ssh": "b", "rdma": [null, null]}])") ==
        "h.json: rdma[0][1] lists 1 device(s) but rdma[1][0] lists 0: both ends of a pair name "
        "the same cables (rank 0 (a) and rank 1 (b))");
  CHECK(parse_error(R"([{"ssh": "a", "rdma": [null, "x", "x"]},
                        {"ssh": "b", "rdma": ["y", null, "z"]},
                        {"ssh": "c", "rdma": ["w", "v", null]}])") ==
        "h.json: rank 0 (a): x is named twice in its row (one device is one cable)");
}

TEST_CASE("mlx hostfile: backend rules (jaccl mesh, jaccl-ring neighbours)") {
  CHECK(parse_error(R"({"backend": "jaccl", "hosts": [
          {"ssh": "a", "rdma": [null, "a1", null]},
          {"ssh": "b", "rdma": ["b1", null, "b2"]},
          {"ssh": "c", "rdma": [null, "c1", null]}]})") ==
        "h.json: not a valid JACCL mesh: rank 0 (a) and rank 2 (c): rdma[0][2] and rdma[2][0] "
        "are null, but a JACCL mesh needs a device in every off-diagonal cell (a direct RDMA "
        "cable between every pair) (JACCL's init() would otherwise fall back to a group of one "
        "rank without a word); write the file with `clusterctl hostfile --hosts a,b,c --format "
        "mlx-jaccl` on a full mesh");
  CHECK(parse_error(R"({"backend": "jaccl", "hosts": [{"ssh": "a"}, {"ssh": "b"}]})") ==
        "h.json: backend jaccl needs the \"rdma\" device matrix, and no host has one: write it "
        "with `clusterctl hostfile --hosts a,b --format mlx-jaccl`");
  // Not in ring order: a's ring neighbours are d and b, but a has no cable to d.
  CHECK(parse_error(R"({"backend": "jaccl-ring", "hosts": [
          {"ssh": "a", "rdma": [null, "a1", null, null]},
          {"ssh": "b", "rdma": ["b1", null, "b2", null]},
          {"ssh": "c", "rdma": [null, "c1", null, "c2"]},
          {"ssh": "d", "rdma": [null, null, "d1", null]}]})") ==
        "h.json: not a valid JACCL ring: rank 0 (a) and rank 3 (d): rdma[0][3] and rdma[3][0] "
        "are null, but a JACCL ring needs a device to each ring neighbour (rank 3 (d) and rank "
        "1 (b)): list the hosts in ring order (JACCL's init() would otherwise fall back to a "
        "group of one rank without a word); write the file with `clusterctl hostfile --hosts "
        "a,b,c,d --format mlx-jaccl-ring`");
  // Without a backend, JACCL takes a mesh or a ring: this chain is neither (JACCL would
  // silently run every rank alone), so it is refused too.
  CHECK(parse_error(R"([{"ssh": "a", "rdma": [null, "a1", null, null]},
          {"ssh": "b", "rdma": ["b1", null, "b2", null]},
          {"ssh": "c", "rdma": [null, "c1", null, "c2"]},
          {"ssh": "d", "rdma": [null, null, "d1", null]}])")
            .find("h.json: the device matrix is neither a valid JACCL mesh nor a valid JACCL "
                  "ring (JACCL's init() would otherwise fall back to a group of one rank without "
                  "a word): as a mesh, rank 0 (a) and rank 2 (c): rdma[0][2] and rdma[2][0] are "
                  "null") == 0);
}

TEST_CASE("mlx hostfile: JACCL's ring rule, every neighbour cell the same length") {
  // 4 hosts in a ring, a-b doubled, and every cable listed: JACCL's is_valid_ring fails
  // (rdma[1][2] has 1 device, rdma[0][1] 2) and so does is_valid_mesh (a-c is null).
  const std::string all_cables = R"({"backend": "jaccl-ring", "hosts": [
          {"ssh": "a", "rdma": [null, ["a1", "a2"], null, "a3"]},
          {"ssh": "b", "rdma": [["b1", "b2"], null, "b3", null]},
          {"ssh": "c", "rdma": [null, "c1", null, "c2"]},
          {"ssh": "d", "rdma": ["d1", null, "d2", null]}]})";
  // Every broken neighbour cell is reported at once (it named only a-d, so fixing that one
  // and running again met b-c, then c-d), one line each with the pair and the command.
  const std::string tail =
      ": a JACCL ring needs the same number of cables in every neighbour cell; list only 1 per "
      "neighbour (the ring's smallest cable count, as mlx.distributed_config does) (JACCL's "
      "init() would otherwise fall back to a group of one rank without a word); write the file "
      "with `clusterctl hostfile --hosts a,b,c,d --format mlx-jaccl-ring`";
  CHECK(parse_error(all_cables) ==
        "h.json: not a valid JACCL ring: rank 0 (a) and rank 3 (d): rdma[0][3] lists 1 device(s) "
        "but rdma[0][1] lists 2" + tail + "\n" +
        "h.json: not a valid JACCL ring: rank 1 (b) and rank 2 (c): rdma[1][2] lists 1 device(s) "
        "but rdma[0][1] lists 2" + tail + "\n" +
        "h.json: not a valid JACCL ring: rank 2 (c) and rank 3 (d): rdma[2][3] lists 1 device(s) "
        "but rdma[0][1] lists 2" + tail);
  // One device per neighbour: valid.
  CHECK(parse_mlx_hostfile(R"({"backend": "jaccl-ring", "hosts": [
          {"ssh": "a", "rdma": [null, "a1", null, "a3"]},
          {"ssh": "b", "rdma": ["b1", null, "b3", null]},
          {"ssh": "c", "rdma": [null, "c1", null, "c2"]},
          {"ssh": "d", "rdma": ["d1", null, "d2", null]}]})",
                           "h.json")
            .ok());
  // A non-neighbour cell set under the ring backend (a mesh of 4 written as a ring).
  CHECK(parse_error(R"({"backend": "jaccl-ring", "hosts": [
          {"ssh": "a", "rdma": [null, "a1", "a2", "a3"]},
          {"ssh": "b", "rdma": ["b1", null, "b2", "b3"]},
          {"ssh": "c", "rdma": ["c1", "c2", null, "c3"]},
          {"ssh": "d", "rdma": ["d1", "d2", "d3", null]}]})") ==
        "h.json: not a valid JACCL ring: rank 0 (a) and rank 2 (c): rdma[0][2] and rdma[2][0] "
        "are set, but they are not ring neighbours: in a JACCL ring only the cells of rank - 1 "
        "and rank + 1 name devices (JACCL's init() would otherwise fall back to a group of one "
        "rank without a word); write the file with `clusterctl hostfile --hosts a,b,c,d "
        "--format mlx-jaccl-ring`\n"
        "h.json: not a valid JACCL ring: rank 1 (b) and rank 3 (d): rdma[1][3] and rdma[3][1] "
        "are set, but they are not ring neighbours: in a JACCL ring only the cells of rank - 1 "
        "and rank + 1 name devices (JACCL's init() would otherwise fall back to a group of one "
        "rank without a word); write the file with `clusterctl hostfile --hosts a,b,c,d "
        "--format mlx-jaccl-ring`");
}

TEST_CASE("mlx hostfile: check_jaccl_devices on a bare matrix, as launch/ hands to ranks") {
  using M = std::vector<std::vector<MlxCell>>;
  const M mesh = {{{}, {"x"}, {"y"}}, {{"x"}, {}, {"z"}}, {{"y"}, {"z"}, {}}};
  CHECK(check_jaccl_devices(mesh, JacclGroup::kMesh, {}).ok());
  CHECK(check_jaccl_devices(mesh, JacclGroup::kRing, {}).ok());  // 3 hosts: every pair neighbours
  CHECK(check_jaccl_devices(mesh, JacclGroup::kMeshOrRing, {}).ok());
  CHECK(check_jaccl_devices(M{{{}}}, JacclGroup::kMesh, {}).ok());  // one rank
  const M chain = {{{}, {"x"}, {}}, {{"x"}, {}, {"z"}}, {{}, {"z"}, {}}};
  auto st = check_jaccl_devices(chain, JacclGroup::kMesh, {}, "devices.json", {"h1", "h2", "h3"});
  REQUIRE(!st.ok());
  CHECK(st.error().code == ExitCode::kUsage);
  CHECK(st.error().message.find("devices.json: not a valid JACCL mesh: rank 0 (h1) and rank 2 "
                                "(h3): rdma[0][2] and rdma[2][0] are null") == 0);
  st = check_jaccl_devices(chain, JacclGroup::kRing, {});
  REQUIRE(!st.ok());
  CHECK(st.error().message.find(
            "not a valid JACCL ring: rank 0 and rank 2: rdma[0][2] and rdma[2][0] are null") == 0);
  st = check_jaccl_devices(M{{{}, {"x"}}, {{"y"}}}, JacclGroup::kMesh, {});
  REQUIRE(!st.ok());
  CHECK(st.error().message.find("rank 1: the device matrix row has 1 cells, want 2") == 0);
  // Every row of the wrong length, every broken pair: one line each.
  st = check_jaccl_devices(M{{{}}, {{"y"}}, {{}, {}, {}}}, JacclGroup::kMesh, {});
  REQUIRE(!st.ok());
  CHECK(st.error().message ==
        "rank 0: the device matrix row has 1 cells, want 3 (one per rank): JACCL needs the full "
        "N x N matrix\n"
        "rank 1: the device matrix row has 1 cells, want 3 (one per rank): JACCL needs the full "
        "N x N matrix");
  const M empty4(4, std::vector<MlxCell>(4));
  st = check_jaccl_devices(empty4, JacclGroup::kMesh, {}, "d.json", {"h1", "h2", "h3", "h4"});
  REQUIRE(!st.ok());
  const std::string lines = st.error().message;
  CHECK(std::count(lines.begin(), lines.end(), '\n') == 5);  // the 6 pairs of 4 ranks
  CHECK(lines.find("d.json: not a valid JACCL mesh: rank 2 (h3) and rank 3 (h4): rdma[2][3] and "
                   "rdma[3][2] are null") != std::string::npos);
  st = check_jaccl_devices(chain, JacclGroup::kMeshOrRing, {}, "c.json");
  REQUIRE(!st.ok());
  CHECK(st.error().message.find("\nc.json: the device matrix is neither a valid JACCL mesh nor "
                                "a valid JACCL ring (") != std::string::npos);
  CHECK(std::string(to_string(JacclGroup::kMeshOrRing)) == "mesh or ring");
}

TEST_CASE("mlx hostfile: read_mlx_hostfile reads a file and names a missing one") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("cc-hostfile-test-" + std::to_string(::getpid()));
  const auto path = (dir / "hosts.json").string();
  REQUIRE(util::write_file_atomic(path, R"([{"ssh": "a"}, {"ssh": "b"}])").ok());
  auto hf = read_mlx_hostfile(path);
  REQUIRE(hf.ok());
  CHECK(hf->path == path);
  CHECK(hf->hosts.size() == 2);
  std::filesystem::remove_all(dir);
  auto missing = read_mlx_hostfile(path);
  REQUIRE(!missing.ok());
  CHECK(missing.error().code == ExitCode::kUsage);
  CHECK(missing.error().message.rfind(path + ": ", 0) == 0);
}

TEST_CASE("mlx hostfile: valid_env_entry") {
  for (const char* ok : {"A=1", "_x=", "MLX_METAL_FAST_SYNCH=1", "A=b=c"}) {
    CHECK(valid_env_entry(ok));
  }
  for (const char* bad : {"", "A", "=1", "1A=2", "A-B=1", " A=1"}) CHECK(!valid_env_entry(bad));
}

TEST_CASE("mlx hostfile: every problem of the file at once, each naming its entry or rank") {
  CHECK(parse_error(R"({"envs": ["A", "OK=1", "MY-VAR=1"],
    "hosts": [{"ssh": "a", "ips": ["10.0.0.300"]}, {"ssh": "b", "ips": ["127.0.0.1", "1.2.3"]},
              {"ssh": "A"}]})") ==
        "h.json: envs[0] = \"A\": expected NAME=VALUE, but there is no '=' (an empty value is "
        "NAME=)\n"
        "h.json: envs[2] = \"MY-VAR=1\": expected NAME=VALUE, but 'MY-VAR' is not a valid "
        "environment variable name: use letters, digits and '_', not starting with a digit\n"
        "h.json: rank 0 (a): ips[0]: '10.0.0.300' is not an IPv4 address: 300 is not a number "
        "from 0 to 255\n"
        "h.json: rank 1 (b): ips[0]: '127.0.0.1' is a loopback address: on every host it names "
        "that host itself: in a hostfile of 3 hosts each ips entry must be an address the other "
        "hosts reach b on; `clusterctl hostfile --hosts a,b --format mlx-jaccl` (or --format "
        "mlx-ring) writes them\n"
        "h.json: rank 1 (b): ips[1]: '1.2.3' is not an IPv4 address: it has 3 parts, and an "
        "address is four numbers from 0 to 255 separated by dots\n"
        "h.json: a (rank 0) and A (rank 2) are one host (host names ignore case and a final "
        "dot): one rank per host");
  // The matrix rules: each broken one, once every row has its N cells.
  CHECK(parse_error(
            R"([{"ssh": "a", "rdma": ["x", "d1"]}, {"ssh": "b", "rdma": [["d2", "d3"], null]}])") ==
        "h.json: rank 0 (a): rdma[0][0] must be null (a host has no cable to itself)\n"
        "h.json: rdma[0][1] lists 1 device(s) but rdma[1][0] lists 2: both ends of a pair name "
        "the same cables (rank 0 (a) and rank 1 (b))");
  CHECK(
      parse_error(R"([{"ssh": "a", "rdma": [null]}, {"ssh": "b", "rdma": [null, null, null]}])") ==
      "h.json: rank 0 (a): \"rdma\" is a list of 1, want 2 cells (one per rank)\n"
      "h.json: rank 1 (b): \"rdma\" is a list of 3, want 2 cells (one per rank)");
}

TEST_CASE("mlx hostfile: an ips entry that cannot be an address names the file, rank and entry") {
  CHECK(
      parse_error(R"([{"ssh": "a", "ips": ["10.0.0.1"]}, {"ssh": "b", "ips": ["10.0.0.300"]}])") ==
      "h.json: rank 1 (b): ips[0]: '10.0.0.300' is not an IPv4 address: 300 is not a number "
      "from 0 to 255");
  CHECK(parse_error(R"([{"ssh": "a", "ips": ["10.0.0.1:5000"]}])") ==
        "h.json: rank 0 (a): ips[0]: '10.0.0.1:5000' has a port (':5000'): give the address "
        "alone, 10.0.0.1");
  CHECK(parse_error(R"([{"ssh": "a", "ips": ["10.0.0.1", "1.2.3"]}])") ==
        "h.json: rank 0 (a): ips[1]: '1.2.3' is not an IPv4 address: it has 3 parts, and an "
        "address is four numbers from 0 to 255 separated by dots");
  CHECK(parse_error(R"([{"ssh": "a", "ips": ["host name"]}])")
            .starts_with("h.json: rank 0 (a): ips[0]: 'host name' has a space"));
  CHECK(parse_error(R"([{"ssh": "a", "ips": [""]}])")
            .starts_with("h.json: rank 0 (a): ips[0]: '' is empty"));
}

TEST_CASE("mlx hostfile: an IPv6 ips entry, which MLX cuts at its first ':', names the rank") {
  // MLX's parse_address (mlx/distributed/utils.cpp) takes HOST:PORT up to the first ':', for
  // MLX_JACCL_COORDINATOR and MLX_HOSTFILE alike: every rank would stop with "Can't parse
  // address". Every such entry is named, each at its rank.
  CHECK(
      parse_error(
          R"([{"ssh": "a", "ips": ["2001:db8::1"]}, {"ssh": "b", "ips": ["10.0.0.2", "2001:db8::2"]}])") ==
      "h.json: rank 0 (a): ips[0]: '2001:db8::1' is an IPv6 address, and MLX cuts each "
      "HOST:PORT it is given (MLX_JACCL_COORDINATOR, MLX_HOSTFILE) at the first ':', so its "
      "ranks would stop with \"Can't parse address\": give a's IPv4 address; `clusterctl "
      "hostfile --hosts a,b --format mlx-jaccl` (or --format mlx-ring) writes them\n"
      "h.json: rank 1 (b): ips[1]: '2001:db8::2' is an IPv6 address, and MLX cuts each "
      "HOST:PORT it is given (MLX_JACCL_COORDINATOR, MLX_HOSTFILE) at the first ':', so its "
      "ranks would stop with \"Can't parse address\": give b's IPv4 address; `clusterctl "
      "hostfile --hosts a,b --format mlx-jaccl` (or --format mlx-ring) writes them");
  CHECK(mlx_address_problem("10.0.0.1") == std::nullopt);
  CHECK(mlx_address_problem("::ffff:10.0.0.1").has_value());
}

TEST_CASE("mlx hostfile: 0.0.0.0 or loopback in a hostfile of several hosts names the rank") {
  // exo#1000 wrote 0.0.0.0 for a rank itself; rank 0's ips[0] is the coordinator, and 0.0.0.0
  // or 127.0.0.1 there made every other rank connect to itself until the start-up timeout.
  CHECK(parse_error(R"([{"ssh": "a", "ips": ["0.0.0.0"]}, {"ssh": "b", "ips": ["10.0.0.2"]}])") ==
        "h.json: rank 0 (a): ips[0]: '0.0.0.0' is the unspecified address: it means every "
        "address to a listener, but a host connecting to it reaches itself: in a hostfile of 2 "
        "hosts each ips entry must be an address the other hosts reach a on (rank 0's ips[0] is "
        "the coordinator); `clusterctl hostfile --hosts a,b --format mlx-jaccl` (or --format "
        "mlx-ring) writes them");
  CHECK(parse_error(R"([{"ssh": "a", "ips": ["10.0.0.1"]}, {"ssh": "b", "ips": ["127.0.1.1"]}])") ==
        "h.json: rank 1 (b): ips[0]: '127.0.1.1' is a loopback address: on every host it names "
        "that host itself: in a hostfile of 2 hosts each ips entry must be an address the other "
        "hosts reach b on; `clusterctl hostfile --hosts a,b --format mlx-jaccl` (or --format "
        "mlx-ring) writes them");
  // Where the file was given with --lab, the command has it too: it runs as printed there.
  auto lab = parse_mlx_hostfile(R"([{"ssh": "a", "ips": ["0.0.0.0"]}, {"ssh": "b", "ips": []}])",
                                "h.json", {}, MpiHostfileAdvice{"--lab t3a", false});
  REQUIRE(!lab.ok());
  CHECK(lab.error().message.ends_with(
      "`clusterctl hostfile --lab t3a --hosts a,b --format mlx-jaccl` (or --format mlx-ring) "
      "writes them"));
  CHECK(parse_error(R"([{"ssh": "a", "ips": ["10.0.0.1", "::1"]}, {"ssh": "b"}])")
            .starts_with("h.json: rank 0 (a): ips[1]: '::1' is a loopback address"));
  CHECK(parse_error(R"([{"ssh": "a", "ips": ["::"]}, {"ssh": "b"}])")
            .starts_with("h.json: rank 0 (a): ips[0]: '::' is the unspecified address"));
  // One host (ranks on one machine) may use loopback.
  auto one = parse_mlx_hostfile(R"([{"ssh": "localhost", "ips": ["127.0.0.1"]}])", "h.json");
  CHECK_MESSAGE(one.ok(), (one.ok() ? "" : one.error().message));
}

TEST_CASE("mlx hostfile: a self-assigned or link-local ips entry of several hosts names the rank") {
  // The writers never write them (hostfile.h): a 169.254 address is reached through whichever
  // port holds the host's one 169.254/16 route, an fe80 one through no interface the other
  // hosts can name. A file written by hand or by another tool is refused as they would be.
  CHECK(parse_error(R"({"backend": "ring", "hosts": [{"ssh": "a", "ips": ["10.0.0.1"]},
                         {"ssh": "b", "ips": ["169.254.12.2"]}]})") ==
        "h.json: rank 1 (b): ips[0]: '169.254.12.2' is a self-assigned IPv4 address "
        "(169.254/16): a host routes all of 169.254/16 out of one interface, so a connection to "
        "it leaves by whichever port holds that route, not the one it is on "
        "(docs/platform.md#self-assigned-addresses): in a hostfile of 2 hosts each ips entry "
        "must be an address the other hosts reach b on; give every cable an address of its own "
        "with `clusterctl network apply --hosts a,b`, then `clusterctl hostfile --hosts a,b "
        "--format mlx-jaccl` (or --format mlx-ring) writes them");
  // fe80, with a scope or without: named as link-local, not only as IPv6 (which MLX cannot
  // parse either), since no IPv6 form of it would do.
  for (const char* ll : {"fe80::1%en0", "fe80::1"}) {
    CAPTURE(ll);
    CHECK(parse_error(fmt::format(R"([{{"ssh": "a", "ips": ["{}"]}}, {{"ssh": "b"}}])", ll)) ==
          fmt::format("h.json: rank 0 (a): ips[0]: '{}' is a link-local IPv6 address "
                      "(fe80::/10): it is reached only through an interface of each connecting "
                      "host's own, and a %scope names an interface of one machine only: in a "
                      "hostfile of 2 hosts each ips entry must be an address the other hosts "
                      "reach a on (rank 0's ips[0] is the coordinator); `clusterctl hostfile "
                      "--hosts a,b --format mlx-jaccl` (or --format mlx-ring) writes them",
                      ll));
  }
  // One host alone: nothing connects across hosts.
  auto one = parse_mlx_hostfile(R"([{"ssh": "a", "ips": ["169.254.1.1"]}])", "h.json");
  CHECK_MESSAGE(one.ok(), (one.ok() ? "" : one.error().message));
}

TEST_CASE("mlx hostfile: host names that differ in case or a final dot are one host") {
  CHECK(parse_error(R"([{"ssh": "Studio1"}, {"ssh": "studio2"}, {"ssh": "studio1"}])") ==
        "h.json: Studio1 (rank 0) and studio1 (rank 2) are one host (host names ignore case and a "
        "final dot): one rank per host");
  CHECK(parse_error(R"([{"ssh": "studio1"}, {"ssh": "studio1."}])") ==
        "h.json: studio1 (rank 0) and studio1. (rank 1) are one host (host names ignore case and "
        "a final dot): one rank per host");
}

TEST_CASE("mlx hostfile: a host named twice is named once in the --hosts a fix suggests") {
  // Refused with "--hosts names host 'h1' twice" if it were h1,h2,h1.
  const std::string m = parse_error(
      R"([{"ssh": "h1", "ips": ["127.0.0.1"]}, {"ssh": "h2", "ips": ["10.0.0.2"]},
          {"ssh": "H1", "ips": ["10.0.0.1"]}])");
  CHECK(m.find("`clusterctl hostfile --hosts h1,h2 --format mlx-jaccl`") != std::string::npos);
  CHECK(m.find("h1 (rank 0) and H1 (rank 2) are one host") != std::string::npos);
  // An MPI hostfile given to --hostfile: each host once, its lines named.
  const std::string mpi = parse_error("h1 slots=1\nh2\nh1 slots=1\n");
  CHECK(mpi.find(" h1 is named on 2 lines (h.json:1, h.json:3): clusterctl names each host "
                 "once.") != std::string::npos);
  CHECK(mpi.find("--hosts h1,h2 --format mlx-jaccl") != std::string::npos);
  CHECK(mpi.ends_with("or name them with `--hosts h1,h2` instead of --hostfile"));
}

TEST_CASE("mlx hostfile: an MPI host with slots=0 runs no rank, and no fix names it") {
  // ompi#9221: "hostA slots=0" gives hostA no rank. It was counted as 1, the note said "hA 1",
  // and the suggested --hosts ran a rank on it.
  const std::string m = parse_error("hA slots=0\nhB slots=6\nhC:6\n");
  CAPTURE(m);
  CHECK(m.find(" It gives hA (h.json:1) slots=0, so no rank runs there: left out of the hosts "
               "below. It gives ranks per host (hB 6, hC 6);") != std::string::npos);
  CHECK(m.find("--hosts hB,hC --format mlx-jaccl") != std::string::npos);
  CHECK(m.ends_with("or name them with `--hosts hB,hC` instead of --hostfile"));
  CHECK(m.find("hA,") == std::string::npos);
  // MPICH's "host:0" is the same; a host named again with ranks is kept.
  const std::string mpich = parse_error("hA:0\nhB:1\nhA:0\nhC slots=0\nhC\n");
  CAPTURE(mpich);
  CHECK(mpich.find("It gives hA (h.json:1) slots=0, so no rank runs there") != std::string::npos);
  CHECK(mpich.find("--hosts hB,hC --format") != std::string::npos);
  // Every host at 0: nothing to run, said so, and no ranks_per_host of 0 suggested.
  const std::string none = parse_error("hA slots=0\nhB slots=0\n");
  CAPTURE(none);
  CHECK(none.find(" It gives every host slots=0, so no rank would run anywhere: give each host at "
                  "least 1. Write one") != std::string::npos);
  CHECK(none.find("per host") == std::string::npos);
}

TEST_CASE("mlx hostfile: an MPI hostfile given to `hostfile --format F` is advised to write F") {
  // `hostfile --hostfile hosts.txt --format mlx-ring` on a lab: mlx-jaccl (which needs RDMA,
  // and the lab's hosts have none) was suggested first.
  auto ring = parse_mlx_hostfile("h1 slots=1\nh2 slots=1\n", "hosts.txt", {},
                                 MpiHostfileAdvice{"--lab t3a", false, "mlx-ring"});
  REQUIRE_FALSE(ring.ok());
  CHECK(ring.error().message.ends_with(
      ". Write one of its hosts with `clusterctl --lab t3a hostfile --hosts h1,h2 --format "
      "mlx-ring -o hosts-mlx.json`, or name them with `--hosts h1,h2` instead of --hostfile"));
  // An MPI hostfile asked to become one: no `hostfile --format mpi` of it (going round in a
  // circle); mpirun takes it as it is.
  auto mpi = parse_mlx_hostfile("h1 slots=1\nh2 slots=1\n", "hosts.txt", {},
                                MpiHostfileAdvice{"--lab t3a", false, "mpi"});
  REQUIRE_FALSE(mpi.ok());
  CHECK(mpi.error().message.ends_with(
      ". It is an MPI hostfile already: give it to mpirun as it is (`mpirun --hostfile "
      "hosts.txt`), or, for clusterctl's from what its hosts report, name them with `--hosts "
      "h1,h2` instead of --hostfile"));
  CHECK(mpi.error().message.find("--format mpi") == std::string::npos);
  CHECK(mpi.error().message.find("mlx-jaccl") == std::string::npos);
}

TEST_CASE("mlx hostfile: an MPI hostfile's hosts that cannot be used are named, not suggested") {
  // A hand-written Open MPI hostfile: `localhost` and ::1 are each host itself, and a host the
  // lab's inventory lacks would be refused by the command as printed.
  const std::string text =
      "# my hosts\nh1 slots=2 max_slots=4\nh2 slots=2\nlocalhost\n::1 slots=1\nh9\n";
  MpiHostfileAdvice advice{"--lab L", false, "mlx-ring"};
  advice.host_check = [](std::string_view h) -> std::optional<std::string> {
    if (h == "h1" || h == "h2") return std::nullopt;
    return fmt::format("is not a host of inv.yaml");
  };
  auto hf = parse_mlx_hostfile(text, "ompi-hosts.txt", {}, advice);
  REQUIRE_FALSE(hf.ok());
  const std::string& m = hf.error().message;
  CHECK(m.find("`clusterctl --lab L hostfile --hosts h1,h2 --format mlx-ring -o "
               "ompi-hosts-mlx.json`, or name them with `--hosts h1,h2` instead of --hostfile\n"
               "Left out of that, as they cannot be used:\n"
               "ompi-hosts.txt: host 'localhost' is the name of the machine it is looked up on (a "
               "loopback address), so each host would reach itself: name it by an address (or SSH "
               "name) the other hosts reach it on\n"
               "ompi-hosts.txt: host '::1' is a loopback address") != std::string::npos);
  CHECK(m.ends_with("\nompi-hosts.txt: host 'h9' is not a host of inv.yaml"));
  // In a job file: its `hosts:` the same.
  advice.job_file = true;
  advice.format = "";
  auto job = parse_mlx_hostfile(text, "ompi-hosts.txt", {}, advice);
  REQUIRE_FALSE(job.ok());
  CHECK(job.error().message.find("(`hosts: [h1, h2]`; launch takes no --hosts)") !=
        std::string::npos);
  // No host left: no command at all.
  auto none = parse_mlx_hostfile("localhost slots=1\n127.0.0.1 slots=1\n", "l.txt", {},
                                 MpiHostfileAdvice{"", false, "mlx-ring"});
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message.find("None of its hosts can be used") != std::string::npos);
  CHECK(none.error().message.find("--hosts") == std::string::npos);
}

TEST_CASE("mlx hostfile: an MPI hostfile is named as one, not as bad JSON") {
  CHECK(parse_error("node1 slots=2\nnode2 slots=2\n") ==
        "h.json looks like an MPI hostfile (line 1: 'node1 slots=2'); clusterctl reads MLX's JSON "
        "hostfile: " +
            kShape +
            ". It gives ranks per host (node1 2, node2 2); MLX's hostfile runs one rank per host, "
            "and a job's `ranks_per_host` sets more. Write one of its hosts with `clusterctl "
            "hostfile --hosts node1,node2 --format "
            "mlx-jaccl -o h-mlx.json` (--format mlx-ring for TCP), or name them with `--hosts "
            "node1,node2` instead of --hostfile");
  // Where it was given decides what runs as printed: a lab's hosts need --lab; a job's
  // `cluster: hostfile:FILE` takes its hosts in `hosts:` (launch has no --hosts); MPICH's
  // "host:N" is the host.
  auto advised = parse_mlx_hostfile("mac1:2\nmac2:2\n", "my hosts.txt", {},
                                    cc::provision::MpiHostfileAdvice{"--lab t3a", true});
  REQUIRE_FALSE(advised.ok());
  CHECK(advised.error().message.ends_with(
      ". Write one of its hosts with `clusterctl --lab t3a hostfile --hosts mac1,mac2 --format "
      "mlx-jaccl -o 'my hosts-mlx.json'` (--format mlx-ring for TCP), or list them in the job "
      "file instead of its `cluster:` (`hosts: [mac1, mac2]`; launch takes no --hosts)"));
  CHECK(advised.error().message.find("--hosts mac1,mac2 --format") != std::string::npos);
  CHECK(parse_error("# cluster\n\nmac1\nmac2 max_slots=4\n")
            .starts_with("h.json looks like an MPI hostfile (line 3: 'mac1');"));
  CHECK(parse_error("10.0.0.1:2\n10.0.0.2:2\n")
            .starts_with("h.json looks like an MPI hostfile (line 1: '10.0.0.1:2');"));
  // A host given by an address the others cannot reach it on is named, one line each, after
  // the advice (whose --hosts would carry it on).
  const std::string self = parse_error("169.254.3.1 slots=1\n10.0.0.2 slots=1\nfe80::3%en0\n");
  CHECK(self.starts_with("h.json looks like an MPI hostfile (line 1: '169.254.3.1 slots=1');"));
  CHECK(self.find("\nh.json: host '169.254.3.1' is a self-assigned IPv4 address (169.254/16): ") !=
        std::string::npos);
  CHECK(self.ends_with(
      "\nh.json: host 'fe80::3%en0' is a link-local IPv6 address (fe80::/10): it is reached only "
      "through an interface of each connecting host's own, and a %scope names an interface of "
      "one machine only: name it by an address (or SSH name) the other hosts reach it on"));
  CHECK(self.find("10.0.0.2'") == std::string::npos);
  // Broken JSON stays a JSON error.
  CHECK(parse_error("{\"hosts\": [\n").starts_with("h.json: not valid JSON at line 2, column 1: "));
  CHECK(parse_error("[{\"ssh\": \"a\"},]")
            .starts_with("h.json: not valid JSON at line 1, column 14: trailing comma"));
}

TEST_CASE("mlx hostfile: check_against accepts what clusterctl wrote") {
  CHECK(check_against(generated(testing::mesh3(), HostfileFormat::kMlxJaccl), testing::mesh3(), {})
            .ok());
  CHECK(check_against(generated(testing::mesh3(), HostfileFormat::kMlxJacclRing), testing::mesh3(),
                      {})
            .ok());
  const auto lab = testing::addressed_lab(4);
  CHECK(check_against(generated(lab, HostfileFormat::kMlxRing), lab, {}).ok());
}

TEST_CASE("mlx hostfile: check_against catches a permuted rank order") {
  const auto s = testing::mesh3();
  MlxHostfile hf = generated(s, HostfileFormat::kMlxJaccl);
  std::swap(hf.hosts[1].ssh, hf.hosts[2].ssh);  // the names moved, the matrix did not
  std::swap(hf.hosts[1].ips, hf.hosts[2].ips);  // (each host's address went with its name)
  // The command that writes a matching file names the hosts as cli/ says (runnable).
  auto st = check_against(hf, s, discovery::FixCommand{"--lab t3a", "", "m1,m2,m3"});
  REQUIRE(!st.ok());
  CHECK(st.error().code == ExitCode::kCheckFailed);
  CHECK(st.error().message ==
        "hosts.json: does not match the cabling of the cluster:\n"
        "  rank 0 (m1): rdma[0][1][0] = rdma_en2 is cabled to m2 (rank 2), not to rank 1 (m3): "
        "the rank order does not match the cabling\n"
        "  rank 0 (m1): rdma[0][1][1] = rdma_en3 is cabled to m2 (rank 2), not to rank 1 (m3): "
        "the rank order does not match the cabling\n"
        "  rank 0 (m1): rdma[0][2] = rdma_en4 is cabled to m3 (rank 1), not to rank 2 (m2): "
        "the rank order does not match the cabling\n"
        "  rank 1 (m3): rdma[1][0][0] = rdma_en3 is cabled to m2 (rank 2), not to rank 0 (m1): "
        "the rank order does not match the cabling\n"
        "  rank 1 (m3): rdma[1][2] names rdma_en4, but m3 receptacle 3 (en4) has no cable to "
        "another host\n"
        "  rank 2 (m2): rdma[2][1] = rdma_en3 is cabled to m1 (rank 0), not to rank 1 (m3): the "
        "rank order does not match the cabling\n"
        "write a matching one with `clusterctl hostfile --lab t3a --hosts m1,m2,m3 --format "
        "mlx-jaccl`");
}

TEST_CASE("mlx hostfile: check_against names unknown devices and crossed parallel cables") {
  const auto s = testing::mesh3();
  MlxHostfile hf = generated(s, HostfileFormat::kMlxJaccl);
  hf.hosts[0].rdma[2] = {"rdma_en9"};
  hf.hosts[1].rdma[0] = {"rdma_en2", "rdma_en3"};  // m2's ends listed in m1's port order
  auto st = check_against(hf, s, {});
  REQUIRE(!st.ok());
  CHECK(st.error().message ==
        "hosts.json: does not match the cabling of the cluster:\n"
        "  rank 0 (m1): rdma[0][1][0] = rdma_en2 and rdma[1][0][0] = rdma_en2 are not the same "
        "cable: m1 rdma_en2 is cabled to m2 rdma_en3\n"
        "  rank 0 (m1): rdma[0][1][1] = rdma_en3 and rdma[1][0][1] = rdma_en3 are not the same "
        "cable: m1 rdma_en3 is cabled to m2 rdma_en2\n"
        "  rank 0 (m1): rdma[0][2] names rdma_en9, which m1 does not have (its port devices: "
        "rdma_en2, rdma_en3, rdma_en4)\n"
        "write a matching one with `clusterctl hostfile --format mlx-jaccl`");
}

TEST_CASE("mlx hostfile: check_against names hosts outside the state") {
  auto s = testing::mesh3();
  MlxHostfile hf = generated(s, HostfileFormat::kMlxJaccl);
  hf.hosts[2].ssh = "m9";
  auto st = check_against(hf, s, {});
  REQUIRE(!st.ok());
  CHECK(st.error().code == ExitCode::kCheckFailed);
  CHECK(st.error().message ==
        "hosts.json: does not match the cabling of the cluster:\n"
        "  rank 2 (m9) is not a host of the cluster state (its hosts: m1, m2, m3)\n"
        "  rank 0 (m1): rdma[0][2] = rdma_en4 is cabled to m3, which is not in this hostfile, "
        "not to rank 2 (m9): the rank order does not match the cabling\n"
        "  rank 1 (m2): rdma[1][2] = rdma_en4 is cabled to m3, which is not in this hostfile, "
        "not to rank 2 (m9): the rank order does not match the cabling\n"
        "write a matching one with `clusterctl hostfile --format mlx-jaccl`");

  s.hosts.pop_back();  // m3 is down
  s.cables.resize(2);
  s.problems.push_back({"m3", 3, "m3: cannot connect to 10.0.0.13:22 (timed out)"});
  hf.hosts[2].ssh = "m3";
  st = check_against(hf, s, {});
  REQUIRE(!st.ok());
  CHECK(st.error().code == ExitCode::kUnreachable);
  CHECK(st.error().message.find("\n  rank 2 (m3) could not be probed: m3: cannot connect to "
                                "10.0.0.13:22 (timed out)\n") != std::string::npos);
}

TEST_CASE("mlx hostfile: check_against checks ring addresses against the left neighbour") {
  const auto lab = testing::addressed_lab(3);
  MlxHostfile hf = generated(lab, HostfileFormat::kMlxRing);
  REQUIRE(hf.hosts[1].ips == std::vector<std::string>{"192.0.2.21"});
  hf.hosts[1].ips = {"192.0.2.22"};  // h2's address towards h3, not h1
  auto st = check_against(hf, lab, {});
  REQUIRE(!st.ok());
  CHECK(st.error().message ==
        "hosts.json: does not match the cabling of the cluster:\n"
        "  rank 1 (h2): ips[0] = 192.0.2.22 is not an address of h2 on a port cabled to its left "
        "neighbour rank 0 (h1)\n"
        "write a matching one with `clusterctl hostfile --format mlx-ring`");
}

// A cable down, as `ip link set dev tb1 down` on h2 leaves it: not seen by discovery, h2's end
// administratively down, h1's end without carrier.
discovery::ClusterState with_h1_h2_down(discovery::ClusterState s) {
  std::erase_if(s.cables, [](const discovery::Cable& c) {
    return c.a.host == "h1" && c.b.host == "h2";
  });
  s.hosts[0].ports[0].interface->running = false;
  s.hosts[1].ports[0].interface->up = false;
  s.hosts[1].ports[0].interface->running = false;
  return s;
}

TEST_CASE("mlx hostfile: a cable down is named with its fix, never as a stale file") {
  const auto lab = testing::addressed_lab(4);
  const auto down = with_h1_h2_down(lab);
  const std::string line =
      "cable h1 tb1 - h2 tb1 is down: h1 tb1: no carrier; h2 tb1: administratively down; fix: "
      "bring the port that is down up: on h2 `sudo ip link set dev tb1 up`; if the cable still "
      "has no carrier then, reseat the cable between h1 tb1 and h2 tb1";
  // The ring (and a file without "backend" run as the ring): h2's address faces h1.
  MlxHostfile ring = generated(lab, HostfileFormat::kMlxRing);
  CHECK(down_cables(ring, lab).empty());
  CHECK(down_cables(ring, down) == std::vector<std::string>{line});
  auto st = check_against(ring, down, {});
  REQUIRE(!st.ok());
  CHECK(st.error().code == ExitCode::kCheckFailed);
  CHECK(st.error().message ==
        "hosts.json: cables its ranks use are down:\n  " + line +
            "\nfix the cabling: the file needs no change");
  // The device matrix names both ends.
  auto rdma = testing::addressed_lab(4);
  for (auto& h : rdma.hosts) {
    for (auto& p : h.ports) p.rdma_device = "rxe_" + p.interface->name;
  }
  const MlxHostfile jaccl = generated(rdma, HostfileFormat::kMlxJaccl);
  CHECK(down_cables(jaccl, rdma).empty());
  auto jdown = with_h1_h2_down(rdma);
  CAPTURE(fmt::format("{}", fmt::join(down_cables(jaccl, jdown), "\n")));
  CHECK(down_cables(jaccl, jdown) == std::vector<std::string>{line});
  // A stale file over healthy cabling is still a mismatch (no down cable named).
  MlxHostfile stale = ring;
  std::swap(stale.hosts[1], stale.hosts[2]);
  CHECK(down_cables(stale, lab).empty());
  st = check_against(stale, lab, {});
  REQUIRE(!st.ok());
  CHECK(st.error().message.starts_with("hosts.json: does not match the cabling of the cluster:"));
}

TEST_CASE("mlx hostfile: an ips entry that is no address of its host, whatever the backend") {
  const auto lab = testing::addressed_lab(3);
  for (const char* backend : {"ring", "", "jaccl"}) {
    CAPTURE(backend);
    MlxHostfile hf = generated(lab, HostfileFormat::kMlxRing);
    hf.backend = backend;
    hf.hosts[2].ips = {"10.162.148.33"};
    CHECK(foreign_addresses(hf, lab) ==
          std::vector<std::string>{"hosts.json: hosts[2] (h3): ips[0] = 10.162.148.33 is not an "
                                   "address of h3 (its addresses: 10.77.0.3, 192.0.2.31, "
                                   "192.0.2.32)"});
    auto st = check_against(hf, lab, {});
    REQUIRE(!st.ok());
    CHECK(st.error().code == ExitCode::kCheckFailed);
    CHECK(st.error().message.starts_with("hosts.json: hosts[2] (h3): ips[0] = 10.162.148.33"));
  }
  // The management address is the host's own too (jaccl's coordinator is often written so).
  MlxHostfile hf = generated(lab, HostfileFormat::kMlxRing);
  hf.hosts[0].ips = {"10.77.0.1"};
  CHECK(foreign_addresses(hf, lab).empty());
}

TEST_CASE("mlx hostfile: envs no exec could carry are refused, naming the entry and the limit") {
  std::string envs;
  for (int i = 10; i < 50; ++i) {
    envs += fmt::format("{}\"V{}={}\"", envs.empty() ? "" : ", ", i, std::string(30000, 'x'));
  }
  const std::string big = parse_error(R"({"envs": [)" + envs + R"(], "hosts": [{"ssh": "a"}]})");
  CHECK(big.starts_with("h.json: envs[34] = \"V44=xxx"));
  CHECK(big.ends_with("...\": the environment holds 1050175 bytes in 35 entries by here, more "
                      "than the 1048576 bytes (1 MiB) a rank's environment can carry (exec's "
                      "ARG_MAX, shared with the command's arguments: 1 MiB on macOS, 2 MiB on "
                      "Linux): no rank could start; pass that much data in a file"));
  CHECK(big.find('\n') == std::string::npos);  // once, not for every entry beyond
  const std::string one = parse_error(R"({"envs": ["BIG=)" + std::string(131068, 'x') +
                                      R"("], "hosts": [{"ssh": "a"}]})");
  CHECK(one.ends_with("...\": BIG is 131072 bytes long, more than the 131071 bytes of one "
                      "environment variable that exec takes (Linux's MAX_ARG_STRLEN): no rank "
                      "could start with it; pass that much data in a file"));
}

}  // namespace
}  // namespace cc::provision
