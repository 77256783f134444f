#include "healthcheck/render.h"

#include <filesystem>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "util/atomic_file.h"

namespace cc::healthcheck {
namespace {

Report sample_report() {
  Report r;
  r.level = "quick";
  r.local_version = "0.1.0";
  r.elapsed_s = 1.5;
  r.versions = {{"h1", "Debian GNU/Linux 12", "0.1.0"}, {"h2", "Debian GNU/Linux 12", "missing"}};
  CheckResult a{Scope::kHost, "h1", "reachable", Status::kPass, "0.20 s", "", "ok", "", 0.2, "s"};
  CheckResult b{Scope::kHost, "h2", "clusterctl-version", Status::kWarn, "missing", "= 0.1.0",
                "h2: not found", "install it", std::nullopt, ""};
  CheckResult c{Scope::kCable, "h1:tb1-h2:tb1", "link-up", Status::kFail, "down",
                "carrier on both ends", "cable h1 tb1 - h2 tb1 is down: h2 tb1: <no \"carrier\">",
                "reseat & retry", std::nullopt, ""};
  CheckResult d{Scope::kCluster, "cluster", "all-reduce-busbw", Status::kPass, "9.00 Gb/s",
                ">= 1 Gb/s", "", "", 9.0, "Gb/s"};
  r.results = {a, b, c, d};
  return r;
}

int occurrences(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("render: text groups by host and cable, lists fixes once, sums up") {
  const std::string t = render_text(sample_report(), util::OutputStyle{});
  CHECK(t.find("Hosts\n  h1\n    PASS  reachable") != std::string::npos);
  CHECK(t.find("Cables\n  h1:tb1-h2:tb1  (1 failed)\n    FAIL  link-up") != std::string::npos);
  CHECK(t.find("          cable h1 tb1 - h2 tb1 is down") != std::string::npos);
  CHECK(occurrences(t, "  - reseat & retry\n") == 1);
  CHECK(t.find("health (quick): 4 checks: 2 PASS, 1 WARN, 1 FAIL in 1.50 s") != std::string::npos);
}

TEST_CASE("render: JSON has the counts, the matrix and every result") {
  auto j = nlohmann::json::parse(render_json(sample_report()));
  CHECK(j["schema"] == "clusterctl.health/1");
  CHECK(j["exit_code"] == 1);
  CHECK(j["counts"]["fail"] == 1);
  CHECK(j["counts"]["warn"] == 1);
  CHECK(j["results"].size() == 4);
  CHECK(j["results"][2]["subject"] == "h1:tb1-h2:tb1");
  CHECK(j["results"][1]["value"].is_null());
  CHECK(j["versions"][1]["clusterctl"] == "missing");
}

TEST_CASE("render: JUnit has one testcase per result and escapes what it quotes") {
  const std::string x = render_junit(sample_report());
  CHECK(x.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"clusterctl "
                      "health\" tests=\"4\" failures=\"1\" errors=\"0\" skipped=\"0\" "
                      "time=\"1.500\">"));
  CHECK(occurrences(x, "<testcase ") == 4);
  CHECK(occurrences(x, "<failure ") == 1);
  CHECK(occurrences(x, "<testsuite ") == 4);
  CHECK(x.find("<testsuite name=\"cable h1:tb1-h2:tb1\" tests=\"1\" failures=\"1\"") !=
        std::string::npos);
  CHECK(x.find("message=\"cable h1 tb1 - h2 tb1 is down: h2 tb1: &lt;no &quot;carrier&quot;&gt;\"") !=
        std::string::npos);
  CHECK(x.find("fix: reseat &amp; retry") != std::string::npos);
  CHECK(x.find("WARN: measured missing (threshold = 0.1.0)") != std::string::npos);
  CHECK(x.find("<no \"carrier\">") == std::string::npos);
}

// A --full --soak run that Ctrl-C ended during the all_reduce: every other check passed.
Report interrupted_report() {
  Report r;
  r.level = "full";
  r.local_version = "0.1.0";
  r.elapsed_s = 12.0;
  r.interrupted = true;
  r.results = {
      CheckResult{Scope::kHost, "h1", "reachable", Status::kPass, "0.20 s", "", "ok", "", 0.2, "s"},
      CheckResult{Scope::kCable, "h1:tb1-h2:tb1", "bandwidth", Status::kPass, "9.00 Gb/s",
                  ">= 1 Gb/s", "", "", 9.0, "Gb/s"},
      interrupted_check(Scope::kCluster, "cluster", "all-reduce",
                        "the all_reduce over 2 hosts was interrupted (Ctrl-C) after 3 complete "
                        "runs")};
  return r;
}

TEST_CASE("render: an interrupted check is neither PASS nor FAIL, in text, JSON and JUnit") {
  const Report r = interrupted_report();
  CHECK(exit_code(r) == util::ExitCode::kInterrupted);
  const std::string t = render_text(r, util::OutputStyle{});
  CHECK(t.find("Cluster\n  cluster\n    INTERRUPTED  all-reduce") != std::string::npos);
  CHECK(t.find("    PASS         reachable") != std::string::npos);  // the column widens
  // One line says it, with what was done and what was not; no fix, no "What to do".
  CHECK(t.find("health (full): interrupted (Ctrl-C): 2 of 3 checks done: 2 PASS, 0 WARN, 0 "
               "FAIL; not finished: all-reduce (the all_reduce over 2 hosts was interrupted "
               "(Ctrl-C) after 3 complete runs) in 12.00 s\n") != std::string::npos);
  CHECK(occurrences(t, "interrupted (Ctrl-C)") == 2);  // the summary line only
  CHECK(t.find("What to do") == std::string::npos);
  CHECK(t.find("FAIL ") == std::string::npos);
  CHECK(t.find("1 FAIL") == std::string::npos);

  auto j = nlohmann::json::parse(render_json(r));
  CHECK(j["exit_code"] == 130);
  CHECK(j["interrupted"] == true);
  CHECK(j["counts"]["fail"] == 0);
  CHECK(j["counts"]["interrupted"] == 1);
  CHECK(j["results"][2]["status"] == "INTERRUPTED");
  CHECK(j["results"][2]["fix"] == "");

  const std::string x = render_junit(r);
  CHECK(x.find("tests=\"3\" failures=\"0\" errors=\"0\" skipped=\"1\"") != std::string::npos);
  CHECK(occurrences(x, "<failure ") == 0);
  CHECK(occurrences(x, "<skipped ") == 1);
  CHECK(x.find("<testsuite name=\"cluster\" tests=\"1\" failures=\"0\" errors=\"0\" "
               "skipped=\"1\">") != std::string::npos);
}

// --quick with h2's sshd stopped: its reachable check fails, its cable is not checked.
Report unreachable_report() {
  Report r;
  r.level = "quick";
  r.local_version = "0.1.0";
  r.elapsed_s = 2.0;
  r.unreachable = {"h2"};
  r.results = {
      CheckResult{Scope::kHost, "h1", "reachable", Status::kPass, "0.20 s", "", "ok", "", 0.2, "s"},
      CheckResult{Scope::kHost, "h2", "reachable", Status::kFail, "unreachable", "",
                  "h2: connection refused", "check that h2 is up", std::nullopt, ""},
      skipped_check(Scope::kCable, "h1:tb1-h2:tb1", "link-up",
                    "cable h1 tb1 - h2 tb1 not checked: h2 not probed (see its reachable check)")};
  return r;
}

TEST_CASE("render: a check skipped for a host not probed is no FAIL, in text, JSON and JUnit") {
  const Report r = unreachable_report();
  CHECK(exit_code(r) == util::ExitCode::kUnreachable);  // the host still says so
  const std::string t = render_text(r, util::OutputStyle{});
  // Not counted as failed; its detail names the host it needed.
  CHECK(t.find("Cables\n  h1:tb1-h2:tb1\n    SKIP  link-up    not checked  \n          cable h1 "
               "tb1 - h2 tb1 not checked: h2 not probed (see its reachable check)\n") !=
        std::string::npos);
  CHECK(t.find("health (quick): 3 checks: 1 PASS, 0 WARN, 1 FAIL, 1 SKIP; unreachable: h2 in "
               "2.00 s\n") != std::string::npos);
  CHECK(occurrences(t, "  - ") == 1);  // one fix: the host's

  auto j = nlohmann::json::parse(render_json(r));
  CHECK(j["exit_code"] == 3);
  CHECK(j["counts"]["fail"] == 1);
  CHECK(j["counts"]["skip"] == 1);
  CHECK(j["results"][2]["status"] == "SKIP");
  CHECK(j["results"][2]["measured"] == "not checked");
  CHECK(j["results"][2]["fix"] == "");

  const std::string x = render_junit(r);
  CHECK(x.find("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\"") != std::string::npos);
  CHECK(occurrences(x, "<failure ") == 1);
  CHECK(x.find("<testsuite name=\"cable h1:tb1-h2:tb1\" tests=\"1\" failures=\"0\" "
               "errors=\"0\" skipped=\"1\">") != std::string::npos);
  CHECK(x.find("<skipped message=\"cable h1 tb1 - h2 tb1 not checked: h2 not probed") !=
        std::string::npos);
}

TEST_CASE("render: the JUnit file is written atomically and whole") {
  const auto dir = std::filesystem::temp_directory_path() / "cc-health-render-test";
  std::filesystem::remove_all(dir);
  const std::string path = (dir / "sub" / "junit.xml").string();
  REQUIRE(write_junit(sample_report(), path).ok());
  auto text = util::read_file(path);
  REQUIRE(text.ok());
  CHECK(*text == render_junit(sample_report()));
  int leftovers = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "sub")) {
    leftovers += e.path().filename() != "junit.xml";
  }
  CHECK(leftovers == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("junit_output: a report --junit wrote is replaced without --force, a job file is not") {
  const auto own = junit_output();
  CHECK(own.is_one(render_junit(sample_report())));
  CHECK(own.is_one("\n  <testsuites name=\"other tool\">\n</testsuites>\n"));
  CHECK_FALSE(own.is_one("name: job\ncommand: [true]\n"));
  CHECK_FALSE(own.is_one("# <testsuites> in a comment of a YAML file\n"));
  CHECK_FALSE(own.is_one("<html><body>no report</body></html>"));
}

}  // namespace
}  // namespace cc::healthcheck
