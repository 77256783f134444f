#include "launch/local_needs.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "util/atomic_file.h"

#include <sys/stat.h>

using namespace cc::launch;
namespace fs = std::filesystem;

TEST_CASE("local_problems: every missing upload and secret at once, each at its line, in order") {
  const fs::path dir = fs::temp_directory_path() / ("cc-local-" + cc::util::random_hex(4));
  fs::create_directories(dir);
  REQUIRE(cc::util::write_file_atomic(dir / "present", "x", 0600).ok());
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  const std::string file = (dir / "job.yaml").string();
  ::unsetenv("CC_LOCAL_TEST_UNSET");
  ::setenv("CC_LOCAL_TEST_SET", "v", 1);
  const std::string yaml =
      "name: j\n"
      "hosts: [a]\n"
      "command: [x]\n"
      "secret_env:\n"
      "  A: {from_env: CC_LOCAL_TEST_UNSET}\n"  // line 5
      "  B: {from_env: CC_LOCAL_TEST_SET}\n"
      "  C: {from_file: no-secret}\n"  // line 7
      "  D: {from_file: fifo}\n"       // line 8: a FIFO is refused, not waited on
      "upload:\n"
      "  - {src: present, dest: p}\n"
      "  - {src: missing-1, dest: m1}\n"  // line 11
      "  - {src: missing-2, dest: m2}\n";  // line 12
  auto spec = parse_job_spec(yaml, file);
  REQUIRE(spec.ok());
  const auto problems = local_problems(*spec).errors;
  REQUIRE(problems.size() == 5);
  CHECK(problems[0].message.starts_with(file + ":5:17: secret_env A: the variable "
                                        "CC_LOCAL_TEST_UNSET is not set"));
  CHECK(problems[0].code == cc::util::ExitCode::kUsage);
  CHECK(problems[1].message.starts_with(file + ":7:18: secret_env C: cannot read the secret "
                                        "file: " + (dir / "no-secret").string()));
  CHECK(problems[2].message.starts_with(file + ":8:18: secret_env D: cannot read the secret "
                                        "file: " + (dir / "fifo").string() + ": is a FIFO"));
  CHECK(problems[3].message.starts_with(file + ":11:5: upload src " +
                                        (dir / "missing-1").string() + ": no such file"));
  // An upload that is not here is an input error (exit 2: nothing was started or changed),
  // not an unreachable host.
  CHECK(problems[3].code == cc::util::ExitCode::kUsage);
  CHECK(problems[4].message.starts_with(file + ":12:5: upload src " +
                                        (dir / "missing-2").string() + ": no such file"));
  CHECK(problems[4].code == cc::util::ExitCode::kUsage);
  ::unsetenv("CC_LOCAL_TEST_SET");
  fs::remove_all(dir);
}

TEST_CASE("local_problems: an upload src of a typo names the file of a close name beside it") {
  const fs::path dir = fs::temp_directory_path() / ("cc-local-" + cc::util::random_hex(4));
  fs::create_directories(dir);
  REQUIRE(cc::util::write_file_atomic(dir / "train.py", "x", 0600).ok());
  const std::string file = (dir / "job.yaml").string();
  auto spec = parse_job_spec(
      "name: j\nhosts: [a]\ncommand: [x]\nupload:\n  - {src: train.yp, dest: t}\n", file);
  REQUIRE(spec.ok());
  const auto problems = local_problems(*spec).errors;
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].message == file + ":5:5: upload src " + (dir / "train.yp").string() +
                                   ": no such file (did you mean 'train.py'?): build or "
                                   "copy the file there, or fix `src` (relative paths are "
                                   "from the job file's directory)");
  // "nothing was started" is launch's to say, once, after every problem of the job: in each
  // message it came twice for one missing upload.
  CHECK(problems[0].message.find("nothing was started") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("local_problems: a job file with mistakes still has its uploads checked (one run)") {
  const std::string yaml =
      "name: j\n"
      "hosts: [a]\n"
      "comand: [x]\n"  // a mistake of the job file
      "upload:\n"
      "  - {src: /nonexistent-cc-upload, dest: u}\n";
  auto draft = parse_job_spec_draft(yaml, "/tmp/job.yaml");
  REQUIRE(draft.errors.size() == 2);  // the unknown key, the missing command
  CHECK(draft.errors[0].message.starts_with("/tmp/job.yaml:3:1: "));
  const auto problems = local_problems(draft.job).errors;
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].message.starts_with(
      "/tmp/job.yaml:5:5: upload src /nonexistent-cc-upload: no such file"));
  CHECK_FALSE(parse_job_spec(yaml, "/tmp/job.yaml").ok());
}

TEST_CASE("local_problems: a bad upload dest hides neither its own src nor the list's others") {
  const std::string yaml =
      "name: j\n"
      "hosts: [a]\n"
      "command: [x]\n"
      "upload:\n"
      "  - {src: /nonexistent-cc-a, dest: ../out}\n"
      "  - {src: /nonexistent-cc-b, mode: \"999\"}\n"
      "  - {src: /nonexistent-cc-c}\n";
  auto draft = parse_job_spec_draft(yaml, "/tmp/job.yaml");
  REQUIRE(draft.errors.size() == 2);
  CHECK(draft.errors[0].message ==
        "/tmp/job.yaml:5:36: 'upload[0].dest': '../out' leaves the job directory: give a path "
        "inside it, or an absolute path");
  CHECK(draft.errors[1].message ==
        "/tmp/job.yaml:6:36: 'upload[1].mode': expected an octal mode like \"0755\", got '999'");
  const auto problems = local_problems(draft.job).errors;
  REQUIRE(problems.size() == 3);
  CHECK(problems[0].message.starts_with(
      "/tmp/job.yaml:5:5: upload src /nonexistent-cc-a: no such file"));
  CHECK(problems[1].message.starts_with(
      "/tmp/job.yaml:6:5: upload src /nonexistent-cc-b: no such file"));
  CHECK(problems[2].message.starts_with(
      "/tmp/job.yaml:7:5: upload src /nonexistent-cc-c: no such file"));
}

TEST_CASE("local_problems: a `cluster:` file that is not there, at its line, with did-you-mean") {
  const fs::path dir = fs::temp_directory_path() / ("cc-local-" + cc::util::random_hex(4));
  fs::create_directories(dir);
  REQUIRE(cc::util::write_file_atomic(dir / "cluster.json", "{}", 0600).ok());
  const std::string file = (dir / "job.yaml").string();
  auto typo = parse_job_spec("name: j\ncommand: [x]\ncluster: clustr.json\n", file);
  REQUIRE(typo.ok());
  CHECK(local_problems(*typo).cluster_missing);  // cmd_launch then places no hosts from it
  auto problems = local_problems(*typo).errors;
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].code == cc::util::ExitCode::kUsage);
  CHECK(problems[0].message ==
        file + ":3:10: cluster: cluster state " + (dir / "clustr.json").string() +
            ": no such file (did you mean 'cluster.json'?): fix "
            "`cluster:` (relative paths are from the job file's directory)");
  // Nothing of a close name: a cluster state is made by discovery, as the hosts are reached.
  auto other = parse_job_spec("name: j\ncommand: [x]\ncluster: \"far away.json\"\n", file);
  REQUIRE(other.ok());
  problems = local_problems(*other, "--lab t3a").errors;
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].message ==
        file + ":3:10: cluster: cluster state " + (dir / "far away.json").string() +
            ": no such file: fix `cluster:` (relative paths are from the "
            "job file's directory), or make it with `clusterctl --lab t3a discover -o '" +
            (dir / "far away.json").string() + "'`");
  // An inventory and a lab: no discovery advice; a lab is no file.
  auto inv = parse_job_spec("name: j\ncommand: [x]\ncluster: inventry.yaml\n", file);
  REQUIRE(inv.ok());
  problems = local_problems(*inv).errors;
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].message.find("discover") == std::string::npos);
  auto lab = parse_job_spec("name: j\ncommand: [x]\ncluster: lab:nosuch\n", file);
  REQUIRE(lab.ok());
  CHECK(local_problems(*lab).errors.empty());
  CHECK_FALSE(local_problems(*lab).cluster_missing);
  auto there = parse_job_spec("name: j\ncommand: [x]\ncluster: cluster.json\n", file);
  REQUIRE(there.ok());
  CHECK_FALSE(local_problems(*there).cluster_missing);
  fs::remove_all(dir);
}
