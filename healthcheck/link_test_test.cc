#include "healthcheck/link_test.h"

#include <set>

#include <doctest/doctest.h>

#include "remote/fake_executor.h"
#include "topology/test_states.h"

namespace cc::healthcheck {
namespace {

// clustercomm-perf -o sendrecv -b 8 -e 4194304 -f 524288 -P 1, rank 0's output.
const char* kPerf =
    "# clustercomm-perf sendrecv: nranks 2 type uint8 redop none transport verbs\n"
    "#                                                             out-of-place                       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
    "           8             8     uint8    none      -1     80.0    0.00    0.00      0      n/a     n/a     n/a    n/a\n"
    "# percentiles size 8: p50 76.0 us p99 240.0 us (rank 0, 200 calls, each a send and a receive: at n = 2 a round trip)\n"
    "     4194304       4194304     uint8    none      -1   5242.9    0.80    0.80      0      n/a     n/a     n/a    n/a\n"
    "# percentiles size 4194304: p50 5200.0 us p99 6000.0 us (rank 0, 64 calls)\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 0.400\n#\n";

TEST_CASE("link test: clustercomm-perf's table and percentiles are read") {
  auto rows = parse_perf_output(kPerf);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  CHECK((*rows)[0].bytes == 8);
  CHECK((*rows)[0].p50_us == doctest::Approx(76.0));
  CHECK((*rows)[0].p99_us == doctest::Approx(240.0));
  CHECK((*rows)[1].bytes == 4194304);
  CHECK((*rows)[1].time_us == doctest::Approx(5242.9));
  CHECK((*rows)[1].algbw_gbytes == doctest::Approx(0.80));
  CHECK((*rows)[1].wrong == 0);
  std::string wrong = kPerf;
  wrong.replace(wrong.find("0.80      0      n/a"), 20, "0.80      3      n/a");
  CHECK((*parse_perf_output(wrong))[1].wrong == 3);
  // An older clustercomm-perf on a host printed a second out-of-place run as "in-place".
  std::string old = kPerf;
  old.replace(old.find("0.80      0      n/a     n/a     n/a    n/a"), 43,
              "0.80      0   5300.0    0.79    0.79      2");
  REQUIRE(parse_perf_output(old)->size() == 2);
  CHECK((*parse_perf_output(old))[1].wrong == 2);
  auto none = parse_perf_output("rank 1: timed out waiting for rank 0\n");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message.find("no result row") != std::string::npos);
}

TEST_CASE("link test: rounds never put two cables of one host together") {
  const auto mesh = topology::testing::lab_mesh(4);
  const auto rounds = schedule_rounds(mesh.cables);
  CHECK(rounds.size() == 3);  // a 4-host mesh: 3 perfect matchings of 2 cables
  std::size_t total = 0;
  for (const auto& round : rounds) {
    std::set<std::string> hosts;
    for (std::size_t i : round) {
      CHECK(hosts.insert(mesh.cables[i].a.host).second);
      CHECK(hosts.insert(mesh.cables[i].b.host).second);
    }
    total += round.size();
  }
  CHECK(total == 6);
  // Parallel cables between one pair go to different rounds.
  const auto multi = topology::testing::lab_mesh(2, {}, {{1, 2}});
  CHECK(schedule_rounds(multi.cables).size() == 2);
}

TEST_CASE("link test: Ctrl-C is an interruption, not a failure, and no script text is shown") {
  // What an executor says when Ctrl-C killed a rank it was given no `what` for.
  const util::Error killed{util::ExitCode::kInterrupted,
                           "h1: interrupted (Ctrl-C); `sh -c 'IFS= read -r CLUSTERCOMM_TOKEN || exit 125; "
                           "export...` was killed"};
  remote::FakeExecutor a("h1"), b("h2");
  a.fail_with(killed);
  b.fail_with({util::ExitCode::kInterrupted, "h2: interrupted (Ctrl-C); `sh -c 'IFS=...` was killed"});
  const auto mesh = topology::testing::lab_mesh(2);
  discovery::LinkAddress link;
  link.a = mesh.cables[0].a;
  link.b = mesh.cables[0].b;
  link.a_address = "10.231.0.0";
  link.b_address = "10.231.0.1";
  auto f = measure_link(a, b, link, PerfOptions{});
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().code == util::ExitCode::kInterrupted);
  CHECK(f.error().message.ends_with(" was interrupted (Ctrl-C)"));
  CHECK(f.error().message.starts_with("the link test over h1 "));
  CHECK(f.error().message.find("sh -c") == std::string::npos);
  CHECK(f.error().message.find("CLUSTERCOMM_TOKEN") == std::string::npos);

  std::vector<remote::Executor*> exs{&a, &b};
  auto ar = measure_all_reduce(exs, mesh, 1024, PerfOptions{}, 30);
  REQUIRE_FALSE(ar.ok());
  CHECK(ar.error().code == util::ExitCode::kInterrupted);
  CHECK(ar.error().message == "the all_reduce over 2 hosts was interrupted (Ctrl-C)");
}

}  // namespace
}  // namespace cc::healthcheck
