#include "util/suggest.h"

#include <filesystem>

#include <doctest/doctest.h>

#include "util/atomic_file.h"

using cc::util::closest_match;
using cc::util::did_you_mean;
using cc::util::edit_distance;

TEST_CASE("edit_distance counts insertions, deletions, substitutions and adjacent swaps") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("nmae", "name") == 1);
  CHECK(edit_distance("studoi1", "studio1") == 1);
  CHECK(edit_distance("h1", "h10") == 1);
}

TEST_CASE("closest_match suggests only likely typos") {
  std::vector<std::string> keys = {"name", "ssh", "address"};
  CHECK(closest_match("nmae", keys) == "name");
  CHECK(closest_match("adress", keys) == "address");
  CHECK(closest_match("port", keys) == "");
  CHECK(closest_match("h9", {"h1", "h2", "h3"}) == "h1");  // ties: the first
  CHECK(did_you_mean("hsots", {"hosts"}) == " (did you mean 'hosts'?)");
  CHECK(did_you_mean("zzz", {"hosts"}) == "");
}

TEST_CASE("did_you_mean_file: the file of a close whole name beside a missing one") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("cc-suggest-" + cc::util::random_hex(4));
  fs::create_directories(dir / "sub");
  fs::create_directories(dir / "cluster.jsonl");  // a directory: never suggested as a file
  REQUIRE(cc::util::write_file_atomic(dir / "cluster.json", "{}", 0600).ok());
  REQUIRE(cc::util::write_file_atomic(dir / "hostfile.json", "[]", 0600).ok());
  using cc::util::did_you_mean_file;
  // An extension typo, a name typo: the whole name is compared; shown as the caller shows it.
  CHECK(did_you_mean_file(dir / "cluster.jsn") ==
        " (did you mean '" + (dir / "cluster.json").string() + "'?)");
  CHECK(did_you_mean_file(dir / "sub" / ".." / "clustr.json", "../clustr.json") ==
        " (did you mean '../cluster.json'?)");
  CHECK(did_you_mean_file(dir / "hostfle.json", "hostfle.json") ==
        " (did you mean 'hostfile.json'?)");
  // Nothing close, a file that is there, a directory that is not: nothing to say.
  CHECK(did_you_mean_file(dir / "inventory.yaml") == "");
  CHECK(did_you_mean_file(dir / "cluster.json") == "");
  CHECK(did_you_mean_file(dir / "nodir" / "cluster.jsn") == "");
  // A directory the operator named (`discover --from bundl`): the directories beside it.
  using cc::util::PathKind;
  CHECK(did_you_mean_file(dir / "cluster.jsonn", "cluster.jsonn", PathKind::kDirectory) ==
        " (did you mean 'cluster.jsonl'?)");
  CHECK(did_you_mean_file(dir / "sbu/", "x/sbu/", PathKind::kDirectory) ==
        " (did you mean 'x/sub'?)");
  CHECK(did_you_mean_file(dir / "hostfile.jsn", "hostfile.jsn", PathKind::kDirectory) == "");
  // A shared extension is no sign of a typo: `--thresholds nothere.yaml` was offered an
  // unrelated job file, 4 edits from its whole name but 4 of 7 from the name before ".yaml".
  REQUIRE(cc::util::write_file_atomic(dir / "noexec.yaml", "name: x\n", 0600).ok());
  CHECK(did_you_mean_file(dir / "nothere.yaml", "nothere.yaml") == "");
  CHECK(did_you_mean_file(dir / "noexc.yaml", "noexc.yaml") == " (did you mean 'noexec.yaml'?)");
  fs::remove_all(dir);
}

TEST_CASE("closest_file_name judges the names before a shared extension") {
  using cc::util::closest_file_name;
  const std::vector<std::string> files = {"cluster.json", "hostfile.json", "noexec.yaml"};
  CHECK(edit_distance("nothere.yaml", "noexec.yaml") <=
        cc::util::typo_limit("nothere.yaml", "noexec.yaml"));  // what the whole names allow
  CHECK(closest_file_name("nothere.yaml", files) == "");
  CHECK(closest_file_name("noexce.yaml", files) == "noexec.yaml");
  CHECK(closest_file_name("clustr.json", files) == "cluster.json");
  CHECK(closest_file_name("cluster.jsn", files) == "cluster.json");  // the extension's typo
  CHECK(closest_file_name("cluster", files) == "");
}

TEST_CASE("closest_file_name offers the same name with another extension first") {
  using cc::util::closest_file_name;
  // "rain.yml" is as close to "train.yml" (one edit) and sorts first; "job.json" is 4 edits
  // from "job.yml", past the typo limit: neither must win over the same name.
  CHECK(closest_file_name("train.yml", {"rain.yml", "train.yaml"}) == "train.yaml");
  CHECK(closest_file_name("job.yml", {"jab.yml", "job.json"}) == "job.json");
  CHECK(closest_file_name("job.yml", {"job.json", "job.yaml", "pyjob.yaml"}) == "job.yaml");
  CHECK(closest_file_name("job.yaml", {"job.yml", "pyjob.yaml"}) == "job.yml");
  CHECK(closest_file_name("hosts.yaml", {"hosts.json"}) == "hosts.json");
  // The name before the extension must be the same: no extension, or another name, is judged
  // as before.
  CHECK(closest_file_name("job.yml", {"job", "other.yaml"}) == "");
  CHECK(closest_file_name("cluster", {"cluster.json"}) == "");
}
