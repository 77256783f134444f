// Every way job.yaml can be wrong: the exact message, at FILE:LINE:COLUMN (1-based).
#include <filesystem>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "launch/job_spec.h"
#include "util/atomic_file.h"

namespace {

// The error for `text` parsed as job.yaml ("" when it parsed); always kUsage.
std::string err(const std::string& text) {
  auto job = cc::launch::parse_job_spec(text, "job.yaml");
  if (job.ok()) return "";
  CHECK(job.error().code == cc::util::ExitCode::kUsage);
  return job.error().message;
}

// A valid job's first lines; the tests append one bad line or block (line 4 onwards).
const std::string kHead = "name: j\nhosts: [h1, h2]\ncommand: [./rank]\n";

}  // namespace

TEST_CASE("job spec errors: unknown keys at every level, with did-you-mean") {
  CHECK(err(kHead + "ranks_per_hots: 2\n") ==
        "job.yaml:4:1: unknown key 'ranks_per_hots' in the job (did you mean 'ranks_per_host'?)");
  CHECK(err(kHead + "timeouts:\n  startup: 5\n  grase: 10\n") ==
        "job.yaml:6:3: unknown key 'grase' in 'timeouts' (did you mean 'grace'?)");
  CHECK(err(kHead + "timeouts: {deadline: 5}\n") ==
        "job.yaml:4:12: unknown key 'deadline' in 'timeouts'; known keys: startup, total, "
        "grace, stall, cable");
  CHECK(err(kHead + "restart: {policy: on-failure, max_atempts: 2}\n") ==
        "job.yaml:4:31: unknown key 'max_atempts' in 'restart' (did you mean 'max_attempts'?)");
  CHECK(err(kHead + "upload:\n  - src: a\n    dst: b\n") ==
        "job.yaml:6:5: unknown key 'dst' in 'upload[0]' (did you mean 'dest'?)");
  CHECK(err(kHead + "secret_env:\n  TOKEN: {from_envv: T}\n") ==
        "job.yaml:5:11: unknown key 'from_envv' in 'secret_env.TOKEN' (did you mean 'from_env'?)");
  CHECK(err("name: j\nhosts: [h1]\ncommand: {shel: x}\n") ==
        "job.yaml:3:11: unknown key 'shel' in 'command' (did you mean 'shell'?)");
}

TEST_CASE("job spec errors: values not among the allowed names") {
  CHECK(err(kHead + "runtime: mlx\n") ==
        "job.yaml:4:10: runtime 'mlx' is not one of clustercomm, mlx-jaccl, mlx-jaccl-ring, "
        "mlx-ring, mpi, none");
  CHECK(err(kHead + "runtime: mlx-jacl\n") ==
        "job.yaml:4:10: runtime 'mlx-jacl' is not one of clustercomm, mlx-jaccl, "
        "mlx-jaccl-ring, mlx-ring, mpi, none (did you mean 'mlx-jaccl'?)");
  CHECK(err(kHead + "preflight: [verify-mesh, helth]\n") ==
        "job.yaml:4:26: preflight check 'helth' is not one of verify-mesh, health, "
        "health-quick (did you mean 'health'?)");
  CHECK(err(kHead + "preflight: [health, health]\n") ==
        "job.yaml:4:21: preflight check 'health' appears twice");
  CHECK(err(kHead + "restart: always\n") ==
        "job.yaml:4:10: restart policy 'always' is not one of never, on-failure");
}

TEST_CASE("job spec errors: values of the wrong type or out of range") {
  CHECK(err("name: j\nhosts: h1\ncommand: [x]\n") ==
        "job.yaml:2:8: 'hosts': expected a list of strings, got a single value");
  CHECK(err("name: j\nhosts: [h1, [h2]]\ncommand: [x]\n") ==
        "job.yaml:2:13: 'hosts[1]': expected a single value (a string), got a list");
  // A line as a shell would take it: both forms of it, as YAML (it said only "got a single
  // value").
  CHECK(err("name: j\nhosts: [h1]\ncommand: ./rank --flag\n") ==
        "job.yaml:3:10: 'command': expected a list of strings (argv) or a mapping {shell: "
        "\"script\"}, got a single value: write `command: [./rank, --flag]` (the program and "
        "its arguments, run without a shell) or `command: {shell: \"./rank --flag\"}` (a line "
        "for sh to run)");
  CHECK(err("name: j\nhosts: [h1]\ncommand: uname -n\n") ==
        "job.yaml:3:10: 'command': expected a list of strings (argv) or a mapping {shell: "
        "\"script\"}, got a single value: write `command: [uname, -n]` (the program and its "
        "arguments, run without a shell) or `command: {shell: \"uname -n\"}` (a line for sh to "
        "run)");
  // `~`, `null` and an empty item are YAML's null, not text: said so, with the quotes that
  // make them text (it said "got nothing" of a `~` that was written).
  CHECK(err("name: j\nhosts: [h1]\ncommand: [echo, $HOME, ~]\n") ==
        "job.yaml:3:24: 'command[2]': expected a single value (a string), got YAML's null: an "
        "empty value, `~` and `null` all mean nothing in YAML; give a value, or, for that text "
        "itself, quote it (\"~\" or '~')");
  CHECK(err(kHead + "ranks_per_host: 0\n") ==
        "job.yaml:4:17: 'ranks_per_host': expected a whole number from 1 to 1024, got '0'");
  CHECK(err(kHead + "ranks_per_host: two\n") ==
        "job.yaml:4:17: 'ranks_per_host': expected a whole number from 1 to 1024, got 'two'");
  CHECK(err(kHead + "coordinator_port: 70000\n") ==
        "job.yaml:4:19: 'coordinator_port': expected a TCP port from 1 to 65535, got '70000'");
  CHECK(err(kHead + "timeouts: {grace: 1.5}\n") ==
        "job.yaml:4:19: 'timeouts.grace': expected a whole number of seconds from 1 to 3600, "
        "got '1.5'");
  CHECK(err(kHead + "timeouts: 60\n") ==
        "job.yaml:4:11: 'timeouts': expected a mapping (key: value lines), got a single value");
  CHECK(err(kHead + "upload:\n  - {src: a, mode: rwx}\n") ==
        "job.yaml:5:20: 'upload[0].mode': expected an octal mode like \"0755\", got 'rwx'");
  CHECK(err(kHead + "upload:\n  - {dest: b}\n") ==
        "job.yaml:5:5: 'upload[0]' has no 'src': the local file to copy");
  CHECK(err(kHead + "restart: {policy: never, max_attempts: 2}\n") ==
        "job.yaml:4:26: 'restart.max_attempts' applies only to policy on-failure");
  CHECK(err(kHead + "cwd: \"\"\n") == "job.yaml:4:6: 'cwd' is empty");
  CHECK(err("name: my job\nhosts: [h1]\ncommand: [x]\n") ==
        "job.yaml:1:7: name 'my job' is not valid: use 1 to 64 letters, digits, '_', '.' and '-'");
}

TEST_CASE("job spec errors: missing, conflicting and empty required keys") {
  CHECK(err("hosts: [h1]\ncommand: [x]\n") ==
        "job.yaml:1:1: missing 'name': every job needs one (letters, digits, '_', '.', '-')");
  CHECK(err("name: j\nhosts: [h1]\n") ==
        "job.yaml:1:1: missing 'command': what each rank runs, a list like [python3, train.py] "
        "or {shell: \"...\"}");
  CHECK(err("name: j\ncommand: [x]\n") ==
        "job.yaml:1:1: missing 'cluster' or 'hosts': where the job runs (cluster: cluster.json, "
        "cluster: lab:NAME, or hosts: [h1, h2])");
  CHECK(err(kHead + "cluster: lab:default\n") ==
        "job.yaml:4:1: 'cluster' and 'hosts' (line 2) are both given: keep one, they both say "
        "where the job runs");
  CHECK(err("name: j\ncluster: c.json\ncommand: [x]\nhosts: [h1]\n") ==
        "job.yaml:4:1: 'hosts' and 'cluster' (line 2) are both given: keep one, they both say "
        "where the job runs");
  CHECK(err("name: j\nhosts: [h1]\ncommand: []\n") ==
        "job.yaml:3:10: 'command' is empty: give the program and its arguments, e.g. "
        "[python3, train.py]");
  CHECK(err("name: j\nhosts: [h1]\ncommand: ['', x]\n") ==
        "job.yaml:3:11: 'command[0]' is empty: it names the program");
  CHECK(err("name: j\nhosts: [h1]\ncommand: {shell: \"  \"}\n") ==
        "job.yaml:3:18: 'command.shell' is empty");
  CHECK(err("name: j\nhosts: []\ncommand: [x]\n") ==
        "job.yaml:2:8: 'hosts' is empty: name at least one host");
  CHECK(err("name: j\nhosts: [h1, h2, h1]\ncommand: [x]\n") ==
        "job.yaml:2:17: host 'h1' appears twice in 'hosts': use ranks_per_host for more ranks on "
        "a host");
  CHECK(err("name: j\nhosts: [Studio1, h2, studio1.]\ncommand: [x]\n") ==
        "job.yaml:2:22: host 'studio1.' appears twice in 'hosts', as 'Studio1' too (host names "
        "ignore case and a final dot): use ranks_per_host for more ranks on a host");
  CHECK(err("name: j\ncluster: \"lab:\"\ncommand: [x]\n") ==
        "job.yaml:2:10: 'cluster': nothing after 'lab:'");
  CHECK(err("name: j\ncluster: lab:\ncommand: [x]\n") ==
        "job.yaml:2:13: illegal map value: a value that ends with ':' or holds ': ' needs quotes "
        "(\"lab:x\"), or this line's indentation is off");
  CHECK(err("name: j\ncluster: hosts.txt\ncommand: [x]\n") ==
        "job.yaml:2:10: 'cluster': cannot tell what 'hosts.txt' is: give a cluster state (.json, "
        "from discover -o), an inventory (.yaml), lab:NAME, hostfile:PATH (an MLX hostfile), "
        "state:PATH or inventory:PATH");
  CHECK(err("name: j\ncluster: ~/cluster.json\ncommand: [x]\n") ==
        "job.yaml:2:10: 'cluster': '~' is not expanded here: write the full path or one "
        "relative to the job file");
}

TEST_CASE("job spec errors: a path on the hosts with ~ or $NAME, which no shell expands there") {
  // mpirun --wdir ~/x and ssh users write these; `cwd: ~/work` became ./~/work inside the job
  // directory and failed every rank (exit 126) only once the job had started.
  CHECK(err(kHead + "cwd: ~/work\n") ==
        "job.yaml:4:6: 'cwd': '~' is not expanded on the hosts (no shell reads this path): write "
        "the full path, or one relative to the job's directory");
  CHECK(err(kHead + "cwd: $HOME/work\n") ==
        "job.yaml:4:6: 'cwd': '$' is not expanded on the hosts (no shell reads this path): write "
        "the full path, or one relative to the job's directory");
  CHECK(err(kHead + "cwd: \"/srv/${USER}\"\n") ==
        "job.yaml:4:6: 'cwd': '$' is not expanded on the hosts (no shell reads this path): write "
        "the full path, or one relative to the job's directory");
  CHECK(err(kHead + "upload:\n  - {src: job.yaml, dest: ~/bin/rank}\n") ==
        "job.yaml:5:27: 'upload[0].dest': '~' is not expanded on the hosts (no shell reads this "
        "path): write the full path, or one relative to the job's directory");
  CHECK(err(kHead + "cwd: /srv/price$5/a~b$\n") == "");  // a '$' before no name, a '~' inside
  CHECK_FALSE(err(kHead + "cwd: /srv/$5/$HOME\n").empty());
}

TEST_CASE("job spec errors: env and secret_env names and values") {
  CHECK(err(kHead + "env:\n  1BAD: x\n") ==
        "job.yaml:5:3: env name '1BAD' is not a valid environment variable name: use letters, "
        "digits and '_', not starting with a digit");
  CHECK(err(kHead + "env: {MY-VAR: x}\n") ==
        "job.yaml:4:7: env name 'MY-VAR' is not a valid environment variable name: use letters, "
        "digits and '_', not starting with a digit");
  CHECK(err(kHead + "env:\n  MLX_RANK: \"0\"\n") ==
        "job.yaml:5:3: env name 'MLX_RANK' is set by launch for each rank: remove it from the job");
  // The refused names are what launch sets (launch_env_names), whatever the runtime.
  for (const char* owned : {"MLX_JACCL_COORDINATOR", "MLX_HOSTFILE", "CLUSTERCOMM_TOKEN",
                            "CLUSTERCOMM_PEER_ADDRS", "MLX_JACCL_RING"}) {
    CAPTURE(owned);
    CHECK(err(kHead + "env:\n  " + owned + ": x\n") ==
          "job.yaml:5:3: env name '" + std::string(owned) +
              "' is set by launch for each rank: remove it from the job");
  }
  CHECK(err(kHead + "secret_env:\n  _ccw_x: {from_env: T}\n") ==
        "job.yaml:5:3: secret_env name '_ccw_x': names beginning with '_ccw_' are the rank "
        "wrapper's own: rename it");
  CHECK(err(kHead + "env:\n  _ccw_d: /data\n") ==
        "job.yaml:5:3: env name '_ccw_d': names beginning with '_ccw_' are the rank wrapper's "
        "own: rename it");
  CHECK(err(kHead + "env:\n  LIST: [a, b]\n") ==
        "job.yaml:5:9: 'env.LIST': expected a single value (a string), got a list");
  CHECK(err(kHead + "env:\n  MAP: {a: b}\n") ==
        "job.yaml:5:8: 'env.MAP': expected a single value (a string), got a mapping");
  CHECK(err(kHead + "env:\n  NOTHING:\n  NEXT: x\n") ==
        "job.yaml:5:3: 'env.NOTHING' has no value: write NOTHING: \"\" for an empty one");
  CHECK(err(kHead + "env: [A=1]\n") ==
        "job.yaml:4:6: 'env': expected a mapping (key: value lines), got a list");
  CHECK(err(kHead + "env:\n  TOKEN: x\nsecret_env:\n  TOKEN: {from_env: T}\n") ==
        "job.yaml:7:3: 'secret_env.TOKEN' is also set in env (line 5): keep one");
  CHECK(err(kHead + "secret_env:\n  TOKEN: {from_env: T}\nenv:\n  TOKEN: x\n") ==
        "job.yaml:5:3: 'secret_env.TOKEN' is also set in env (line 7): keep one");
  CHECK(err(kHead + "secret_env:\n  TOKEN: {from_env: T, from_file: f}\n") ==
        "job.yaml:5:10: 'secret_env.TOKEN': give exactly one of from_env: VAR and from_file: PATH");
  CHECK(err(kHead + "secret_env:\n  TOKEN: {from_env: \"A B\"}\n") ==
        "job.yaml:5:21: 'secret_env.TOKEN.from_env': 'A B' is not a valid environment variable "
        "name");
  CHECK(err(kHead + "secret_env:\n  TOKEN: hunter2\n") ==
        "job.yaml:5:10: 'secret_env.TOKEN': expected a mapping (key: value lines), got a single "
        "value");
}

TEST_CASE("job spec errors: YAML syntax, repeated keys, document shape") {
  // At the '[' never closed, not the next line where yaml-cpp noticed it.
  CHECK(err("name: j\nhosts: [h1, h2\ncommand: [x]\n") ==
        "job.yaml:2:8: this '[' is never closed: a list written [a, b] ends with ']' (yaml-cpp "
        "noticed it at 3:8)");
  // A line indented less than its mapping's keys (the new user's mistake): the usual cause named.
  CHECK(err("name: j\ncommand: [x]\nenv:\n    A: 1\n  B: 2\n") ==
        "job.yaml:5:3: end of map not found: check the indentation of this line and the ones "
        "above it (YAML nests by indentation: the keys of one mapping and the '- ' entries of "
        "one list start in the same column, indented with spaces, never tabs)");
  CHECK(err("name: j\nname: k\nhosts: [h1]\ncommand: [x]\n") ==
        "job.yaml:2:1: 'name' appears twice (first at line 1)");
  CHECK(err(kHead + "env:\n  A: 1\n  A: 2\n") ==
        "job.yaml:6:3: 'env.A' appears twice (first at line 5)");
  CHECK(err("") ==
        "job.yaml:1:1: the job file is empty: a job needs at least name, command, and cluster or "
        "hosts");
  CHECK(err("# only a comment\n") ==
        "job.yaml:1:1: the job file is empty: a job needs at least name, command, and cluster or "
        "hosts");
  CHECK(err("- name: j\n") ==
        "job.yaml:1:1: expected a mapping of job settings (name: ..., command: ...), got a list");
  CHECK(err("? [a, b]\n: 1\n").starts_with(
      "job.yaml:1:3: a key in the job must be a plain word, not a list\n"));
}

TEST_CASE("job spec errors: every mistake is reported at once, in file order, then what is missing") {
  CHECK(err("name: j\nranks_per_hots: 2\ntimeouts: {grace: 0}\nruntime: mpx\nname: k\n"
            "env: {MLX_RANK: \"1\"}\n") ==
        "job.yaml:2:1: unknown key 'ranks_per_hots' in the job (did you mean 'ranks_per_host'?)\n"
        "job.yaml:3:19: 'timeouts.grace': expected a whole number of seconds from 1 to 3600, got "
        "'0'\n"
        "job.yaml:4:10: runtime 'mpx' is not one of clustercomm, mlx-jaccl, mlx-jaccl-ring, "
        "mlx-ring, mpi, none (did you mean 'mpi'?)\n"
        "job.yaml:5:1: 'name' appears twice (first at line 1)\n"
        "job.yaml:6:7: env name 'MLX_RANK' is set by launch for each rank: remove it from the job\n"
        "job.yaml:1:1: missing 'command': what each rank runs, a list like [python3, train.py] "
        "or {shell: \"...\"}\n"
        "job.yaml:1:1: missing 'cluster' or 'hosts': where the job runs (cluster: cluster.json, "
        "cluster: lab:NAME, or hosts: [h1, h2])");
}

TEST_CASE("job spec errors: every mistake within one entry and one list, not only the first") {
  // hosts: a repeated host and an empty one; timeouts: two bad values; restart: a bad policy
  // and a bad max_attempts; preflight: an unknown check and a repeated one.
  CHECK(err("name: j\ncommand: [./rank]\nhosts: [h1, H1, '']\ntimeouts: {grace: 0, total: x}\n"
            "restart: {policy: sometimes, max_attempts: 0}\n"
            "preflight: [health, helth, health]\n") ==
        "job.yaml:3:13: host 'H1' appears twice in 'hosts', as 'h1' too (host names ignore case "
        "and a final dot): use ranks_per_host for more ranks on a host\n"
        "job.yaml:3:17: 'hosts[2]' is empty\n"
        "job.yaml:4:19: 'timeouts.grace': expected a whole number of seconds from 1 to 3600, got "
        "'0'\n"
        "job.yaml:4:29: 'timeouts.total': expected a whole number of seconds from 0 to 31536000, "
        "got 'x'\n"
        "job.yaml:5:19: restart policy 'sometimes' is not one of never, on-failure\n"
        "job.yaml:5:44: 'restart.max_attempts': expected a whole number from 1 to 100, got '0'\n"
        "job.yaml:6:21: preflight check 'helth' is not one of verify-mesh, health, health-quick "
        "(did you mean 'health'?)\n"
        "job.yaml:6:28: preflight check 'health' appears twice");
}

TEST_CASE("job spec errors: a `cluster:` of no known kind names a file of a close name beside") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("cc-jobspec-" + cc::util::random_hex(4));
  fs::create_directories(dir / "jobs");
  REQUIRE(cc::util::write_file_atomic(dir / "cluster.json", "{}", 0600).ok());
  const std::string file = (dir / "jobs" / "job.yaml").string();
  // The whole name is compared: an extension typo is found, shown as the job wrote the path.
  auto typo = cc::launch::parse_job_spec("name: j\ncommand: [x]\ncluster: ../cluster.jsn\n", file);
  REQUIRE_FALSE(typo.ok());
  CHECK(typo.error().message ==
        file + ":3:10: 'cluster': cannot tell what '../cluster.jsn' is (did you mean "
               "'../cluster.json'?): give a cluster state (.json, from discover -o), an "
               "inventory (.yaml), lab:NAME, hostfile:PATH (an MLX hostfile), state:PATH or "
               "inventory:PATH");
  // A file of that name that is there is not second-guessed.
  REQUIRE(cc::util::write_file_atomic(dir / "cluster.jsn", "{}", 0600).ok());
  auto there = cc::launch::parse_job_spec("name: j\ncommand: [x]\ncluster: ../cluster.jsn\n", file);
  REQUIRE_FALSE(there.ok());
  CHECK(there.error().message.find("did you mean") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("job spec errors: runtime against cluster, hosts and ranks_per_host, all at once") {
  // Both were found one run apart, the first without a place (launch's check of the plan).
  CHECK(err("name: j\ncluster: lab:L\nranks_per_host: 2\nruntime: mlx-ring\ncommand: [x]\n") ==
        "job.yaml:3:17: ranks_per_host: 2: runtime mlx-ring (line 4) runs one rank per host, as "
        "mlx.launch does: set ranks_per_host: 1\n"
        "job.yaml:4:10: runtime mlx-ring needs an MLX hostfile or a cluster state, and `cluster: "
        "lab:L` (line 2) is a lab: write `cluster: hostfile:FILE` (`clusterctl hostfile --format "
        "mlx-ring -o FILE` writes one) or `cluster: cluster.json` (`clusterctl discover -o "
        "cluster.json`): the ranks' addresses and devices come from it");
  CHECK(err(kHead + "runtime: mlx-jaccl\n") ==
        "job.yaml:4:10: runtime mlx-jaccl needs an MLX hostfile or a cluster state, and `hosts:` "
        "(line 2) lists hosts only: write `cluster: hostfile:FILE` (`clusterctl hostfile "
        "--format mlx-jaccl -o FILE` writes one) or `cluster: cluster.json` (`clusterctl "
        "discover -o cluster.json`): the ranks' addresses and devices come from it");
  // With the job file's other mistakes, in the same run.
  CHECK(err("name: j\ncluster: lab:L\nruntime: mlx-jaccl-ring\ncommand: []\n") ==
        "job.yaml:4:10: 'command' is empty: give the program and its arguments, e.g. [python3, "
        "train.py]\n"
        "job.yaml:3:10: runtime mlx-jaccl-ring needs an MLX hostfile or a cluster state, and "
        "`cluster: lab:L` (line 2) is a lab: write `cluster: hostfile:FILE` (`clusterctl "
        "hostfile --format mlx-jaccl-ring -o FILE` writes one) or `cluster: cluster.json` "
        "(`clusterctl discover -o cluster.json`): the ranks' addresses and devices come from it");
  // Other runtimes take any cluster and more ranks per host.
  CHECK(err("name: j\ncluster: lab:L\nranks_per_host: 2\nruntime: clustercomm\ncommand: [x]\n")
            .empty());
}

TEST_CASE("job spec errors: an env no exec could carry is named at its entry, with the limit") {
  // One entry over Linux's MAX_ARG_STRLEN (131072 bytes with its NUL).
  CHECK(err(kHead + "env:\n  A: \"1\"\n  BIG: \"" + std::string(131072, 'x') + "\"\n") ==
        "job.yaml:6:8: env: BIG is 131076 bytes long, more than the 131071 bytes of one "
        "environment variable that exec takes (Linux's MAX_ARG_STRLEN): no rank could start "
        "with it; pass that much data in a file");
  // More than 1 MiB in all: said once, at the entry that went over; the rest is not read.
  std::string env = "env:\n";
  for (int i = 10; i < 50; ++i) env += "  V" + std::to_string(i) + ": " + std::string(30000, 'x') + "\n";
  CHECK(err(kHead + env) ==
        "job.yaml:39:3: env V44: the environment holds 1050175 bytes in 35 entries by here, more "
        "than the 1048576 bytes (1 MiB) a rank's environment can carry (exec's ARG_MAX, shared "
        "with the command's arguments: 1 MiB on macOS, 2 MiB on Linux): no rank could start; "
        "pass that much data in a file");
  // Up to the limit is fine.
  std::string fits = "env:\n";
  for (int i = 10; i < 44; ++i) fits += "  V" + std::to_string(i) + ": " + std::string(30000, 'x') + "\n";
  CHECK(err(kHead + fits) == "");
}

TEST_CASE("job spec errors: a job file larger than any job that runs is refused before parsing") {
  std::string text = kHead + "env:\n";
  while (text.size() <= cc::launch::kMaxJobFileBytes) text += "  # a comment of a job that grew\n";
  CHECK(err(text) == fmt::format("job.yaml: is {} bytes, more than the 8388608 bytes (8 MiB) of a "
                                 "job file: a job's env and command reach its ranks through exec, "
                                 "which takes at most a few MiB of them (README, \"job.yaml\"); "
                                 "pass large data in a file (`upload:`)",
                                 text.size()));
}
