#include "launch/job_spec.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "util/atomic_file.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using cc::launch::ClusterRef;
using cc::launch::JobSpec;
using cc::launch::parse_job_spec;
using cc::launch::Preflight;
using cc::launch::Restart;
using cc::launch::Runtime;
using cc::launch::SecretSource;

namespace {

// Parses `text` as /jobs/exp/job.yaml; the job must be valid.
JobSpec parse_ok(const std::string& text) {
  auto job = parse_job_spec(text, "/jobs/exp/job.yaml");
  if (!job) FAIL_CHECK(job.error().message);
  REQUIRE(job.ok());
  return *job;
}

}  // namespace

TEST_CASE("job spec: the smallest job gets every default") {
  JobSpec job = parse_ok("name: smoke\nhosts: [h1, h2]\ncommand: [./rank]\n");
  CHECK(job.source == "/jobs/exp/job.yaml");
  CHECK(job.name == "smoke");
  CHECK_FALSE(job.cluster.has_value());
  CHECK(job.hosts == std::vector<std::string>{"h1", "h2"});
  // Where each host is written, for launch's messages about a host (FILE:LINE:COLUMN).
  CHECK(job.host_places == std::vector<std::pair<int, int>>{{2, 9}, {2, 13}});
  CHECK(job.ranks_per_host == 1);
  CHECK(job.command.argv == std::vector<std::string>{"./rank"});
  CHECK_FALSE(job.command.is_shell());
  CHECK(job.cwd.empty());
  CHECK(job.env.empty());
  CHECK(job.secret_env.empty());
  CHECK(job.runtime == Runtime::kClusterComm);
  CHECK(job.coordinator_port == 32323);
  CHECK(job.timeouts.startup == 60s);
  CHECK(job.timeouts.total == 0s);
  CHECK(job.timeouts.grace == 30s);
  CHECK(job.timeouts.stall == 120s);
  CHECK(job.timeouts.cable == 20s);
  CHECK(job.restart.policy == Restart::Policy::kNever);
  CHECK(job.restart.max_attempts == 1);
  CHECK(job.logs == "logs/smoke");
  CHECK(job.upload.empty());
  CHECK(job.preflight.empty());
}

TEST_CASE("job spec: every field, as in the header's example") {
  JobSpec job = parse_ok(R"(
name: train-7b.v2
cluster: ../clusters/cluster.json
ranks_per_host: 2
command: {shell: "cd data && exec ./train --steps 100"}
cwd: /srv/job
env:
  OMP_NUM_THREADS: 8
  _UNDERSCORE: ""
secret_env:
  HF_TOKEN: {from_env: HF_TOKEN_LOCAL}
  DB_PASSWORD: {from_file: secrets/db}
runtime: mpi
coordinator_port: 40000
timeouts: {startup: 90, total: 3600, grace: 45, stall: 0, cable: 7}
restart: {policy: on-failure, max_attempts: 5}
logs: /var/log/jobs/train
upload:
  - {src: build/train, dest: bin/train, mode: "0755"}
  - src: /etc/hosts
    mode: 644
preflight: [verify-mesh, health-quick]
)");
  CHECK(job.name == "train-7b.v2");
  REQUIRE(job.cluster.has_value());
  CHECK(*job.cluster == ClusterRef{ClusterRef::Kind::kClusterState, "/jobs/clusters/cluster.json"});
  // Where `cluster:` is written, for launch's messages (FILE:LINE:COLUMN).
  CHECK(job.cluster->line == 3);
  CHECK(job.cluster->column == 10);
  CHECK(job.hosts.empty());
  CHECK(job.ranks_per_host == 2);
  CHECK(job.command.is_shell());
  CHECK(job.command.shell == "cd data && exec ./train --steps 100");
  CHECK(job.cwd == "/srv/job");
  // ... and `cwd:`, for the set-up's "does not exist" (checked on the hosts, after parsing).
  CHECK(job.cwd_line == 6);
  CHECK(job.cwd_column == 6);
  CHECK(cc::launch::job_file_at(job, job.cwd_line, job.cwd_column) ==
        job.source.string() + ":6:6");
  CHECK(cc::launch::job_file_at(job, 0, 0) == job.source.string());
  CHECK(job.env ==
        std::map<std::string, std::string>{{"OMP_NUM_THREADS", "8"}, {"_UNDERSCORE", ""}});
  CHECK(job.secret_env.at("HF_TOKEN") == SecretSource{SecretSource::Kind::kEnv, "HF_TOKEN_LOCAL"});
  CHECK(job.secret_env.at("DB_PASSWORD") ==
        SecretSource{SecretSource::Kind::kFile, "/jobs/exp/secrets/db"});
  CHECK(job.runtime == Runtime::kMpi);
  CHECK(job.coordinator_port == 40000);
  CHECK(job.timeouts.startup == 90s);
  CHECK(job.timeouts.total == 3600s);
  CHECK(job.timeouts.grace == 45s);
  CHECK(job.timeouts.stall == 0s);
  CHECK(job.timeouts.cable == 7s);
  CHECK(job.restart.policy == Restart::Policy::kOnFailure);
  CHECK(job.restart.max_attempts == 5);
  CHECK(job.logs == "/var/log/jobs/train");
  REQUIRE(job.upload.size() == 2);
  CHECK(job.upload[0].src == "/jobs/exp/build/train");
  CHECK(job.upload[0].dest == "bin/train");
  CHECK(job.upload[0].mode == 0755u);
  CHECK(job.upload[1].src == "/etc/hosts");
  CHECK(job.upload[1].dest == "hosts");  // default: the source's file name
  CHECK(job.upload[1].mode == 0644u);
  CHECK(job.preflight == std::vector<Preflight>{Preflight::kVerifyMesh, Preflight::kHealthQuick});
}

TEST_CASE("job spec: cluster sources are tagged by prefix or extension") {
  auto cluster_of = [](const std::string& value) {
    return *parse_ok("name: j\ncommand: [x]\ncluster: " + value + "\n").cluster;
  };
  using K = ClusterRef::Kind;
  CHECK(cluster_of("cluster.json") == ClusterRef{K::kClusterState, "/jobs/exp/cluster.json"});
  CHECK(cluster_of("/abs/c.json") == ClusterRef{K::kClusterState, "/abs/c.json"});
  CHECK(cluster_of("inv/inventory.yaml") ==
        ClusterRef{K::kInventory, "/jobs/exp/inv/inventory.yaml"});
  CHECK(cluster_of("../inv.yml") == ClusterRef{K::kInventory, "/jobs/inv.yml"});
  CHECK(cluster_of("lab:default") == ClusterRef{K::kLab, "default"});
  CHECK(cluster_of("hostfile:mlx/hosts.json") ==
        ClusterRef{K::kMlxHostfile, "/jobs/exp/mlx/hosts.json"});
  CHECK(cluster_of("state:/tmp/state") == ClusterRef{K::kClusterState, "/tmp/state"});
  CHECK(cluster_of("inventory:hosts.txt") == ClusterRef{K::kInventory, "/jobs/exp/hosts.txt"});
  CHECK(cc::launch::to_string(K::kMlxHostfile) == "MLX hostfile");
  // Messages quote `cluster:` as the file writes it: `cluster: default` was quoted for a file
  // that says `cluster: lab:default`.
  CHECK(cluster_of("lab:default").as_written() == "lab:default");
  CHECK(cluster_of("\"hostfile:mlx/hosts.json\"").as_written() == "hostfile:mlx/hosts.json");
  CHECK(cluster_of("../inv.yml").as_written() == "../inv.yml");
  CHECK(ClusterRef{K::kLab, "x"}.as_written() == "lab:x");  // not read from a file

  // A relative job file's paths are relative to its directory under the current one.
  const std::string text = "name: j\ncommand: [x]\ncluster: ../c.json\n";
  auto rel = parse_job_spec(text, "jobs/a/job.yaml");
  REQUIRE(rel.ok());
  CHECK(rel->cluster->value == (fs::current_path() / "jobs/c.json").lexically_normal().string());
  auto bare = parse_job_spec(text, "job.yaml");
  REQUIRE(bare.ok());
  CHECK(bare->cluster->value == (fs::current_path() / "../c.json").lexically_normal().string());
}

TEST_CASE("job spec: restart short forms and runtimes by name") {
  auto restart_of = [](const std::string& value) {
    return parse_ok("name: j\nhosts: [a]\ncommand: [x]\nrestart: " + value + "\n").restart;
  };
  CHECK(restart_of("never").policy == Restart::Policy::kNever);
  CHECK(restart_of("never").max_attempts == 1);
  CHECK(restart_of("on-failure").policy == Restart::Policy::kOnFailure);
  CHECK(restart_of("on-failure").max_attempts == 3);
  CHECK(restart_of("{policy: on-failure}").max_attempts == 3);
  CHECK(restart_of("{policy: never}").policy == Restart::Policy::kNever);

  for (Runtime rt : {Runtime::kClusterComm, Runtime::kMlxJaccl, Runtime::kMlxJacclRing,
                     Runtime::kMlxRing, Runtime::kMpi, Runtime::kNone}) {
    std::string name(cc::launch::to_string(rt));
    // (An MLX runtime takes its hosts from an MLX hostfile or a cluster state.)
    CHECK(parse_ok("name: j\ncluster: hostfile:h.json\ncommand: [x]\nruntime: " + name + "\n")
              .runtime == rt);
  }
  CHECK(cc::launch::to_string(Restart::Policy::kOnFailure) == "on-failure");
  CHECK(cc::launch::to_string(Preflight::kVerifyMesh) == "verify-mesh");
}

TEST_CASE("job spec: hostile argv, env and cwd values reach the spec byte for byte") {
  JobSpec job = parse_ok(R"yaml(name: hostile
hosts: [h1]
command:
  - ./rank
  - "two words"
  - 'single '' quote and "double"'
  - "$(rm -rf /) `id` ${HOME} ; | & > <"
  - "line one\nline two\ttab"
  - ""
  - "  padded  "
  - '#not a comment'
  - "back\\slash"
  - "ünïcødé ✓"
cwd: "/tmp/dir with spaces/$(x)"
env:
  SPACES: "a b  c"
  QUOTES: "it's \"quoted\""
  SUBST: "$(touch /tmp/pwned); `id`"
  NEWLINES: "first\nsecond\n"
  LITERAL: |
    kept
      as written
  EMPTY: ""
  LEADING_ZERO: 007
  BOOLISH: yes
  NULLWORD: "~"
)yaml");
  CHECK(job.command.argv ==
        std::vector<std::string>{"./rank", "two words", "single ' quote and \"double\"",
                                 "$(rm -rf /) `id` ${HOME} ; | & > <", "line one\nline two\ttab",
                                 "", "  padded  ", "#not a comment", "back\\slash", "ünïcødé ✓"});
  CHECK(job.cwd == "/tmp/dir with spaces/$(x)");
  CHECK(job.env.at("SPACES") == "a b  c");
  CHECK(job.env.at("QUOTES") == "it's \"quoted\"");
  CHECK(job.env.at("SUBST") == "$(touch /tmp/pwned); `id`");
  CHECK(job.env.at("NEWLINES") == "first\nsecond\n");
  CHECK(job.env.at("LITERAL") == "kept\n  as written\n");
  CHECK(job.env.at("EMPTY").empty());
  CHECK(job.env.at("LEADING_ZERO") == "007");  // YAML numbers stay text as written
  CHECK(job.env.at("BOOLISH") == "yes");
  CHECK(job.env.at("NULLWORD") == "~");

  JobSpec sh = parse_ok(
      "name: s\nhosts: [h]\ncommand:\n  shell: |\n    echo \"$X\" '$(y)'\n"
      "    for i in 1 2; do echo $i; done\n");
  CHECK(sh.command.shell == "echo \"$X\" '$(y)'\nfor i in 1 2; do echo $i; done\n");
}

TEST_CASE("job spec: load_job_spec reads the file and resolves paths against its directory") {
  std::string tmpl = (fs::temp_directory_path() / "cc-job-XXXXXX").string();
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  const fs::path dir = tmpl;
  const fs::path file = dir / "job.yaml";
  REQUIRE(cc::util::write_file_atomic(file, "name: j\ncluster: cluster.json\ncommand: [x]\n").ok());
  auto job = cc::launch::load_job_spec(file);
  REQUIRE(job.ok());
  CHECK(job->source == file);
  CHECK(job->cluster->value == (dir / "cluster.json").string());

  auto missing = cc::launch::load_job_spec(dir / "nope.yaml");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == cc::util::ExitCode::kUsage);
  CHECK(missing.error().message.find((dir / "nope.yaml").string()) != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("job spec: a CLUSTERCOMM_ variable libclustercomm does not read draws a warning") {
  // horovod/horovod#2015: a Gloo rendezvous that timed out at scale was not helped by the
  // timeout variable the operator set. Here `CLUSTERCOMM_TIMEOUT: "240000"` (the variable is
  // CLUSTERCOMM_TIMEOUT_MS) was passed to every rank and read by none: the rendezvous still
  // timed out at the default, with no word said.
  auto d = cc::launch::parse_job_spec_draft(
      "name: j\nhosts: [h1]\ncommand: [x]\nenv:\n  CLUSTERCOMM_TIMEOUT: \"240000\"\n"
      "  CLUSTERCOMM_TRANSPROT: tcp\n  CLUSTERCOMM_TIMEOUT_MS: \"240000\"\n"
      "  CLUSTERCOMM_TOPOLOGY: ring\n  MY_CLUSTERCOMM_X: \"1\"\n",
      "job.yaml");
  CHECK(d.errors.empty());
  CHECK(d.job.env.at("CLUSTERCOMM_TIMEOUT") == "240000");  // still passed: the job runs
  REQUIRE(d.warnings.size() == 2);
  CHECK(d.warnings[0] ==
        "job.yaml:5:3: warning: env CLUSTERCOMM_TIMEOUT: libclustercomm reads no variable "
        "CLUSTERCOMM_TIMEOUT, so it changes nothing (did you mean 'CLUSTERCOMM_TIMEOUT_MS'?)");
  CHECK(d.warnings[1] ==
        "job.yaml:6:3: warning: env CLUSTERCOMM_TRANSPROT: libclustercomm reads no variable "
        "CLUSTERCOMM_TRANSPROT, so it changes nothing (did you mean 'CLUSTERCOMM_TRANSPORT'?)");
  // secret_env: sets its names on every rank too (CLUSTERCOMM_TOKEN is launch's own: an error).
  auto s = cc::launch::parse_job_spec_draft(
      "name: j\nhosts: [h1]\ncommand: [x]\nsecret_env:\n  CLUSTERCOMM_TOKN: {from_env: T}\n"
      "  CLUSTERCOMM_IBV_PROFILE: {from_env: P}\n",
      "job.yaml");
  CHECK(s.errors.empty());
  REQUIRE(s.warnings.size() == 1);
  CHECK(s.warnings[0] ==
        "job.yaml:5:3: warning: secret_env CLUSTERCOMM_TOKN: libclustercomm reads no variable "
        "CLUSTERCOMM_TOKN, so it changes nothing (did you mean 'CLUSTERCOMM_TOKEN'?)");
}

TEST_CASE("job spec: a $NAME or ~ in a list command draws a warning at its place") {
  // `command: [./train, --data, $HOME/data]` is exec'd without a shell: the program got the
  // text "$HOME/data", with no word said. Warned like an env value; still run as written.
  auto d = cc::launch::parse_job_spec_draft(
      "name: j\nhosts: [h1]\ncommand: [./train, --data, $HOME/data, \"${OUT}\", ~/ckpt, "
      "\"pa$$\", \"$5\", a~b]\n",
      "job.yaml");
  CHECK(d.errors.empty());
  REQUIRE(d.job.command.argv.size() == 8);
  CHECK(d.job.command.argv[2] == "$HOME/data");  // still passed as written
  CHECK(d.job.command.argv[4] == "~/ckpt");
  REQUIRE(d.warnings.size() == 3);
  CHECK(d.warnings[0] ==
        "job.yaml:3:28: warning: command[2]: \"$HOME/data\" reaches the program exactly as "
        "written: a list command runs without a shell, so nothing expands $HOME in it; write the "
        "path out (what $HOME is on the hosts), or use `command: {shell: \"...\"}` for sh to "
        "expand it");
  CHECK(d.warnings[1].starts_with("job.yaml:3:40: warning: command[3]: \"${OUT}\" "));
  CHECK(d.warnings[1].find("nothing expands ${OUT} in it") != std::string::npos);
  CHECK(d.warnings[2].starts_with("job.yaml:3:50: warning: command[4]: \"~/ckpt\" "));
  CHECK(d.warnings[2].find("nothing expands ~ in it") != std::string::npos);

  // A shell's -c script is expanded by that shell: no warning, also after `env NAME=V`; an
  // argument after the script, or a script file, is no -c script.
  for (const char* quiet :
       {"command: [bash, -c, \"cd $HOME && ./train\"]\n",
        "command: [/bin/sh, -ec, \"echo ~/x $HOME\"]\n",
        "command: [env, A=1, -i, sh, -lc, \"$HOME/run\"]\n", "command: {shell: \"$HOME/run\"}\n"}) {
    CAPTURE(quiet);
    auto q =
        cc::launch::parse_job_spec_draft(std::string("name: j\nhosts: [h1]\n") + quiet, "job.yaml");
    CHECK(q.errors.empty());
    CHECK(q.warnings.empty());
  }
  for (const char* loud : {"command: [bash, -c, \"x\", $HOME]\n",
                           "command: [bash, run.sh, $HOME]\n", "command: [$HOME/bin/train]\n"}) {
    CAPTURE(loud);
    auto q =
        cc::launch::parse_job_spec_draft(std::string("name: j\nhosts: [h1]\n") + loud, "job.yaml");
    CHECK(q.errors.empty());
    CHECK(q.warnings.size() == 1);
  }
}

TEST_CASE("job spec: an env value written for a shell draws a warning at its place") {
  // `env: {PATH: "$PATH:/opt/x/bin"}` was taken silently, then every rank failed with "looked
  // for in PATH=$PATH:/opt/x/bin". A warning, not an error: a '$' may be meant.
  auto d = cc::launch::parse_job_spec_draft(
      "name: j\nhosts: [h1]\ncommand: [x]\nenv:\n  PATH: \"$PATH:/opt/x/bin\"\n"
      "  HOME_BIN: ${HOME}/bin\n  PRICE: \"$5 or a$\"\n  API_TOKEN: \"pa$$word\"\n"
      "  DB_PASSWORD: \"hunter$secret2\"\n",
      "job.yaml");
  CHECK(d.errors.empty());
  CHECK(d.job.env.at("PATH") == "$PATH:/opt/x/bin");  // still passed as written
  REQUIRE(d.warnings.size() == 3);
  CHECK(d.warnings[0] ==
        "job.yaml:5:9: warning: env PATH: \"$PATH:/opt/x/bin\" reaches the ranks exactly as "
        "written: values are literal, no shell expands $PATH in them; write the whole PATH, e.g. "
        "PATH: \"/usr/local/bin:/usr/bin:/bin:/opt/x/bin\" (with your hosts' own directories)");
  CHECK(d.warnings[1] ==
        "job.yaml:6:13: warning: env HOME_BIN: \"${HOME}/bin\" reaches the ranks exactly as "
        "written: values are literal, no shell expands ${HOME} in them; write the whole value, "
        "with what ${HOME} is on the hosts in its place");
  // "$5", a final '$' and "$$" name no variable: no warning. A name that looks secret: never
  // its value, not even the part after the '$'.
  CHECK(d.warnings[2].starts_with("job.yaml:9:16: warning: env DB_PASSWORD: its value holds a "
                                  "'$' before a name, which no shell expands"));
  CHECK(d.warnings[2].find("hunter") == std::string::npos);
  CHECK(d.warnings[2].find("secret2") == std::string::npos);
  CHECK(d.warnings[2].find("`secret_env:`") != std::string::npos);
  // cwd: refuses a '$' (a path no program expands): still an error.
  auto cwd = cc::launch::parse_job_spec_draft(
      "name: j\nhosts: [h1]\ncommand: [x]\ncwd: $HOME/w\n", "job.yaml");
  CHECK(cwd.errors.size() == 1);
  CHECK(cwd.warnings.empty());
}
