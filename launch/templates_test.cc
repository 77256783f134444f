// templates/*.yaml cannot rot: each one parses, and its key fields are what its comments say.
#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include <doctest/doctest.h>

#include "launch/job_spec.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using cc::launch::ClusterRef;
using cc::launch::JobSpec;
using cc::launch::Preflight;
using cc::launch::Restart;
using cc::launch::Runtime;
using cc::launch::SecretSource;

namespace {

const fs::path kTemplates = CLUSTERCTL_TEMPLATES;

JobSpec load(const std::string& file) {
  auto job = cc::launch::load_job_spec(kTemplates / file);
  if (!job) FAIL_CHECK(job.error().message);
  REQUIRE(job.ok());
  return *job;
}

// The path `rel` (relative to the source tree's root), as the job file resolves it.
std::string in_tree(const std::string& rel) {
  return (fs::absolute(kTemplates).parent_path() / rel).lexically_normal().string();
}

}  // namespace

TEST_CASE("job templates: every templates/*.yaml parses, and each has its checks here") {
  std::set<std::string> found;
  for (const auto& entry : fs::directory_iterator(kTemplates)) {
    if (entry.path().extension() != ".yaml") continue;
    if (entry.path().filename().string().rfind("health-thresholds", 0) == 0) continue;  // health's
    found.insert(entry.path().filename().string());
    auto job = cc::launch::load_job_spec(entry.path());
    if (!job) FAIL_CHECK(job.error().message);
  }
  // A new template gets a test case below and its name here.
  CHECK(found == std::set<std::string>{"allreduce-smoke.yaml", "mlx-jaccl.yaml", "mpi.yaml",
                                       "python-matmul.yaml", "python-sgd.yaml"});
}

TEST_CASE("job templates: allreduce-smoke runs checked clustercomm-perf all_reduce on a lab") {
  JobSpec job = load("allreduce-smoke.yaml");
  CHECK(job.name == "allreduce-smoke");
  REQUIRE(job.cluster.has_value());
  CHECK(*job.cluster == ClusterRef{ClusterRef::Kind::kLab, "default"});
  CHECK(job.ranks_per_host == 1);
  CHECK(job.runtime == Runtime::kClusterComm);
  CHECK(job.coordinator_port == 32323);
  // bench/perf.cc's flags: -o op, -b/-e/-f sweep, -n iterations, -c check.
  CHECK(job.command.argv == std::vector<std::string>{"./clustercomm-perf", "-o", "all_reduce", "-b",
                                                     "8", "-e", "16M", "-f", "4", "-n", "20", "-c",
                                                     "1"});
  CHECK(job.env.at("CLUSTERCOMM_TIMEOUT_MS") == "30000");
  CHECK(job.timeouts.total == 300s);
  CHECK(job.timeouts.grace == 30s);
  CHECK(job.restart.policy == Restart::Policy::kNever);
  CHECK(job.logs == "logs/allreduce-smoke");
  REQUIRE(job.upload.size() == 1);
  CHECK(job.upload[0].src == in_tree("build/release/bench/clustercomm-perf"));
  CHECK(job.upload[0].dest == "clustercomm-perf");
  CHECK(job.upload[0].mode == 0755u);
  CHECK(job.preflight.empty());
}

TEST_CASE("job templates: mlx-jaccl runs python3 train.py with the MLX jaccl variables") {
  JobSpec job = load("mlx-jaccl.yaml");
  CHECK(job.name == "mlx-train");
  REQUIRE(job.cluster.has_value());
  CHECK(*job.cluster ==
        ClusterRef{ClusterRef::Kind::kClusterState, in_tree("templates/cluster.json")});
  CHECK(job.runtime == Runtime::kMlxJaccl);
  CHECK(job.coordinator_port == 32323);
  CHECK(job.command.argv == std::vector<std::string>{"python3", "train.py"});
  CHECK(job.cwd.empty());
  CHECK(job.env.at("PYTHONUNBUFFERED") == "1");
  CHECK(job.secret_env.at("HF_TOKEN") == SecretSource{SecretSource::Kind::kEnv, "HF_TOKEN"});
  CHECK(job.timeouts.total == 0s);
  CHECK(job.timeouts.grace == 60s);
  CHECK(job.restart.policy == Restart::Policy::kOnFailure);
  CHECK(job.restart.max_attempts == 2);
  REQUIRE(job.upload.size() == 1);
  CHECK(job.upload[0].src == in_tree("templates/train.py"));
  CHECK(job.upload[0].dest == "train.py");
  CHECK_FALSE(job.upload[0].mode.has_value());
  CHECK(job.preflight == std::vector<Preflight>{Preflight::kVerifyMesh, Preflight::kHealthQuick});
}

TEST_CASE("job templates: mpi runs mpi-allreduce-perf under mpirun on lab default") {
  JobSpec job = load("mpi.yaml");
  CHECK(job.name == "mpi-allreduce");
  REQUIRE(job.cluster.has_value());
  CHECK(*job.cluster == ClusterRef{ClusterRef::Kind::kLab, "default"});
  CHECK(job.hosts.empty());
  CHECK(job.runtime == Runtime::kMpi);
  CHECK(job.command.argv ==
        std::vector<std::string>{"./mpi-allreduce-perf", "-b", "8", "-e", "64M", "-f", "4"});
  CHECK(job.env.at("OMPI_MCA_btl") == "self,tcp");
  CHECK(job.restart.policy == Restart::Policy::kNever);
  REQUIRE(job.upload.size() == 1);
  CHECK(job.upload[0].src == in_tree("build/release/bench/mpi-allreduce-perf"));
  CHECK(job.upload[0].mode == 0755u);
}

// The Python templates: the script next to the job file, run by the venv of /opt/clustercomm
// (the path their comments and the README give, and tests/integration/python replaces).
TEST_CASE("job templates: python-sgd runs sgd.py with the venv's python on a lab") {
  JobSpec job = load("python-sgd.yaml");
  CHECK(job.name == "python-sgd");
  REQUIRE(job.cluster.has_value());
  CHECK(*job.cluster == ClusterRef{ClusterRef::Kind::kLab, "default"});
  CHECK(job.ranks_per_host == 1);
  CHECK(job.runtime == Runtime::kClusterComm);
  CHECK(job.coordinator_port == 32323);
  CHECK(job.command.argv == std::vector<std::string>{"/opt/clustercomm/venv/bin/python", "sgd.py",
                                                     "--samples", "4096", "--features", "64",
                                                     "--steps", "100", "--lr", "0.05", "--seed",
                                                     "19"});
  CHECK(job.env.at("CLUSTERCOMM_TIMEOUT_MS") == "30000");
  CHECK(job.env.at("PYTHONUNBUFFERED") == "1");
  CHECK(job.env.at("OMP_NUM_THREADS") == "1");
  CHECK(job.timeouts.total == 300s);
  CHECK(job.restart.policy == Restart::Policy::kNever);
  CHECK(job.logs == "logs/python-sgd");
  REQUIRE(job.upload.size() == 1);
  CHECK(job.upload[0].src == in_tree("templates/sgd.py"));
  CHECK(job.upload[0].dest == "sgd.py");
  CHECK(fs::is_regular_file(job.upload[0].src));
  CHECK(job.preflight.empty());
}

TEST_CASE("job templates: python-matmul runs matmul.py with the venv's python on a lab") {
  JobSpec job = load("python-matmul.yaml");
  CHECK(job.name == "python-matmul");
  REQUIRE(job.cluster.has_value());
  CHECK(*job.cluster == ClusterRef{ClusterRef::Kind::kLab, "default"});
  CHECK(job.ranks_per_host == 1);
  CHECK(job.runtime == Runtime::kClusterComm);
  CHECK(job.command.argv == std::vector<std::string>{"/opt/clustercomm/venv/bin/python",
                                                     "matmul.py", "--m", "256", "--k", "1024",
                                                     "--n", "192", "--seed", "19"});
  CHECK(job.env.at("CLUSTERCOMM_TIMEOUT_MS") == "30000");
  CHECK(job.env.at("OMP_NUM_THREADS") == "1");
  CHECK(job.restart.policy == Restart::Policy::kNever);
  CHECK(job.logs == "logs/python-matmul");
  REQUIRE(job.upload.size() == 1);
  CHECK(job.upload[0].src == in_tree("templates/matmul.py"));
  CHECK(job.upload[0].dest == "matmul.py");
  CHECK(fs::is_regular_file(job.upload[0].src));
  CHECK(job.preflight.empty());
}
