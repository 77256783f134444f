#include "healthcheck/link_test.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "discovery/text.h"
#include "remote/quote.h"
#include "util/address.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"
#include "util/number.h"

namespace cc::healthcheck {
namespace {

using util::ExitCode;

struct Rank {
  remote::Executor* ex = nullptr;
  std::string label;  // "rank 0 on h1 tb1"
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> args;
};

int random_port() {
  std::random_device rd;
  return 40000 + static_cast<int>(rd() % 20000);
}

// Starts every rank at once (one thread each) and waits for all. The token is read from stdin
// by the remote shell, so it never appears in a process listing.
std::vector<util::Result<remote::CommandResult>> run_ranks(const std::vector<Rank>& ranks,
                                                           const PerfOptions& opts) {
  const std::string token = util::random_hex(16);
  std::vector<util::Result<remote::CommandResult>> results(
      ranks.size(), util::Error{ExitCode::kCheckFailed, "not run"});
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    threads.emplace_back([&, i] {
      const Rank& r = ranks[i];
      std::vector<std::string> argv{"env"};
      for (const auto& [k, v] : r.env) argv.push_back(k + "=" + v);
      argv.push_back(opts.program);
      argv.insert(argv.end(), r.args.begin(), r.args.end());
      const std::string script =
          "IFS= read -r CLUSTERCOMM_TOKEN || exit 125; export CLUSTERCOMM_TOKEN; exec " +
          remote::shell_quote(argv);
      remote::RunOptions ro;
      ro.timeout = opts.timeout;
      // In the executor's messages: the rank, never the internal script that starts it.
      ro.what = fmt::format("clustercomm-perf ({})", r.label);
      ro.stdin_data = token + "\n";
      results[i] = r.ex->run(remote::Command{{script}, true}, ro);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

// The failure of any rank, naming it; nullopt when all exited 0. Ctrl-C is no failure of a rank:
// one kInterrupted error, saying only what was interrupted (ranks killed by it are no news).
std::optional<util::Error> rank_failure(const std::vector<Rank>& ranks,
                                        const std::vector<util::Result<remote::CommandResult>>& rs,
                                        const std::string& what) {
  for (const auto& r : rs) {
    if (!r && r.error().code == ExitCode::kInterrupted) {
      return util::Error{ExitCode::kInterrupted, what + " was " + util::interruption()};
    }
  }
  std::vector<std::string> problems;
  ExitCode code = ExitCode::kCheckFailed;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (!rs[i]) {
      problems.push_back(fmt::format("{}: {}", ranks[i].label, rs[i].error().message));
      if (rs[i].error().code == ExitCode::kUnreachable) code = ExitCode::kUnreachable;
      continue;
    }
    const auto& r = *rs[i];
    if (r.timed_out) {
      problems.push_back(fmt::format("{}: no result within {} s", ranks[i].label,
                                     std::chrono::duration<double>(r.elapsed).count()));
    } else if (r.exit_status != 0) {
      std::string err(discovery::trim(r.err));
      problems.push_back(fmt::format(
          "{}: exited {}{}", ranks[i].label, r.exit_status,
          r.exit_status == 127 ? " (clustercomm-perf not found: --perf PATH)"
                               : err.empty() ? "" : ": " + discovery::excerpt(err, 200)));
    }
  }
  if (problems.empty()) return std::nullopt;
  return util::Error{code, fmt::format("{} failed: {}", what, fmt::join(problems, "; "))};
}

std::string size_arg(std::size_t bytes) {
  return std::to_string(bytes);
}

}  // namespace

util::Result<std::vector<PerfRow>> parse_perf_output(std::string_view out) {
  std::vector<PerfRow> rows;
  for (auto line : discovery::split_lines(out)) {
    auto t = discovery::trim(line);
    if (t.empty()) continue;
    if (t.starts_with("# percentiles size ")) {
      // "# percentiles size 8: p50 12.3 us p99 45.6 us (rank 0, 200 calls)"
      auto w = discovery::split_words(t);
      if (w.size() < 10 || rows.empty()) continue;
      std::string size(w[3]);
      if (!size.empty() && size.back() == ':') size.pop_back();
      if (discovery::parse_u64(size) != rows.back().bytes) continue;
      rows.back().p50_us = util::parse_double(w[5]).value_or(0.0);
      rows.back().p99_us = util::parse_double(w[8]).value_or(0.0);
      continue;
    }
    if (t.front() == '#') continue;
    auto w = discovery::split_words(t);
    if (w.size() != 13) continue;
    auto bytes = discovery::parse_u64(w[0]);
    auto wrong_a = discovery::parse_u64(w[8]);
    // sendrecv and all_to_allv have no in-place run: their in-place columns read n/a (older
    // builds printed a second out-of-place run there).
    auto wrong_b = w[12] == "n/a" ? std::optional<uint64_t>(0) : discovery::parse_u64(w[12]);
    if (!bytes || !wrong_a || !wrong_b) continue;
    PerfRow r;
    r.bytes = *bytes;
    r.time_us = util::parse_double(w[5]).value_or(0.0);
    r.algbw_gbytes = util::parse_double(w[6]).value_or(0.0);
    r.busbw_gbytes = util::parse_double(w[7]).value_or(0.0);
    r.wrong = *wrong_a + *wrong_b;
    rows.push_back(r);
  }
  if (rows.empty()) {
    return util::Error{ExitCode::kCheckFailed,
                       fmt::format("clustercomm-perf printed no result row: '{}'",
                                   discovery::excerpt(discovery::trim(out), 200))};
  }
  return rows;
}

std::vector<std::vector<std::size_t>> schedule_rounds(const std::vector<discovery::Cable>& cables) {
  std::vector<std::vector<std::size_t>> rounds;
  std::vector<std::set<std::string>> busy;
  for (std::size_t i = 0; i < cables.size(); ++i) {
    const auto& c = cables[i];
    std::size_t k = 0;
    while (k < rounds.size() && (busy[k].count(c.a.host) || busy[k].count(c.b.host))) ++k;
    if (k == rounds.size()) {
      rounds.emplace_back();
      busy.emplace_back();
    }
    rounds[k].push_back(i);
    busy[k].insert(c.a.host);
    busy[k].insert(c.b.host);
  }
  return rounds;
}

util::Result<LinkFigures> measure_link(remote::Executor& a, remote::Executor& b,
                                       const discovery::LinkAddress& link,
                                       const PerfOptions& opts) {
  const std::string coordinator = util::host_port(link.a_address, random_port());
  const std::string timeout_ms = std::to_string(
      std::max<long long>(1000, static_cast<long long>(opts.timeout.count()) / 2));
  auto env = [&](int rank, const std::string& mine, const std::string& peer) {
    std::string routes = rank == 0 ? fmt::format("{},{}>{}", mine, mine, peer)
                                   : fmt::format("{}>{},{}", mine, peer, mine);
    return std::vector<std::pair<std::string, std::string>>{
        {"CLUSTERCOMM_RANK", std::to_string(rank)},
        {"CLUSTERCOMM_SIZE", "2"},
        {"CLUSTERCOMM_COORDINATOR", coordinator},
        {"CLUSTERCOMM_LISTEN", util::host_port(mine, 0)},
        {"CLUSTERCOMM_PEER_ADDRS", routes},
        {"CLUSTERCOMM_TIMEOUT_MS", timeout_ms}};
  };
  const std::vector<std::string> args{
      "-o", "sendrecv", "-b", "8", "-e", size_arg(opts.bandwidth_bytes), "-f",
      size_arg(std::max<std::size_t>(2, opts.bandwidth_bytes / 8)), "-n",
      std::to_string(opts.latency_calls), "-c", "1", "-P", "1"};
  const std::vector<Rank> ranks{
      {&a, fmt::format("rank 0 on {} ({})", discovery::end_label(link.a), link.a_address),
       env(0, link.a_address, link.b_address), args},
      {&b, fmt::format("rank 1 on {} ({})", discovery::end_label(link.b), link.b_address),
       env(1, link.b_address, link.a_address), args}};
  auto rs = run_ranks(ranks, opts);
  const std::string what = fmt::format("the link test over {} - {}", discovery::end_label(link.a),
                                       discovery::end_label(link.b));
  if (auto e = rank_failure(ranks, rs, what)) return *e;
  auto rows = parse_perf_output(rs[0]->out);
  if (!rows) return util::Error{ExitCode::kCheckFailed, what + ": " + rows.error().message};
  const PerfRow& small = rows->front();
  const PerfRow& big = rows->back();
  if (!small.p99_us || !small.p50_us || big.time_us <= 0) {
    return util::Error{ExitCode::kCheckFailed,
                       what + ": clustercomm-perf gave no percentiles (an older build without "
                              "-P? rebuild it)"};
  }
  LinkFigures f;
  f.latency_p50_us = *small.p50_us / 2;
  f.latency_p99_us = *small.p99_us / 2;
  f.bandwidth_gbps = static_cast<double>(big.bytes) * 8.0 / 1e3 / (big.time_us / 2);
  for (const auto& r : *rows) f.wrong += r.wrong;
  return f;
}

util::Result<AllReduceFigures> measure_all_reduce(std::span<remote::Executor* const> executors,
                                                  const discovery::ClusterState& state,
                                                  std::size_t bytes, const PerfOptions& opts,
                                                  int repeat_s) {
  const std::size_t n = state.hosts.size();
  if (n < 2 || executors.size() != n) {
    return util::Error{ExitCode::kCheckFailed,
                       fmt::format("the all_reduce needs every host reachable ({} of {})",
                                   executors.size(), n)};
  }
  // The address host i uses for peer j, and j's: their first planned cable.
  auto route = [&](std::size_t i, std::size_t j) -> std::pair<std::string, std::string> {
    const std::string& hi = state.hosts[i].host;
    const std::string& hj = state.hosts[j].host;
    for (const auto& l : state.network) {
      if (l.a.host == hi && l.b.host == hj) return {l.a_address, l.b_address};
      if (l.b.host == hi && l.a.host == hj) return {l.b_address, l.a_address};
    }
    return {state.hosts[i].management_address, state.hosts[j].management_address};
  };
  AllReduceFigures worst;
  const auto start = std::chrono::steady_clock::now();
  const std::string timeout_ms = std::to_string(
      std::max<long long>(1000, static_cast<long long>(opts.timeout.count()) / 2));
  for (;;) {
    const std::string coordinator =
        util::host_port(state.hosts[0].management_address, random_port());
    std::vector<Rank> ranks;
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<std::string> routes;
      for (std::size_t j = 0; j < n; ++j) {
        if (j == i) {
          routes.push_back(state.hosts[i].management_address);
          continue;
        }
        auto [mine, peer] = route(i, j);
        routes.push_back(mine + ">" + peer);
      }
      ranks.push_back(
          {executors[i], fmt::format("rank {} on {}", i, state.hosts[i].host),
           {{"CLUSTERCOMM_RANK", std::to_string(i)},
            {"CLUSTERCOMM_SIZE", std::to_string(n)},
            {"CLUSTERCOMM_COORDINATOR", coordinator},
            {"CLUSTERCOMM_PEER_ADDRS", fmt::format("{}", fmt::join(routes, ","))},
            {"CLUSTERCOMM_TIMEOUT_MS", timeout_ms}},
           {"-o", "all_reduce", "-b", size_arg(bytes), "-e", size_arg(bytes), "-n", "20", "-c",
            "1"}});
    }
    auto rs = run_ranks(ranks, opts);
    const std::string what = fmt::format("the all_reduce over {} hosts", n);
    if (auto e = rank_failure(ranks, rs, what)) {
      if (e->code == ExitCode::kInterrupted && worst.runs > 0) {
        e->message +=
            fmt::format(" after {} complete run{}", worst.runs, worst.runs == 1 ? "" : "s");
      }
      return *e;
    }
    auto rows = parse_perf_output(rs[0]->out);
    if (!rows) return util::Error{ExitCode::kCheckFailed, what + ": " + rows.error().message};
    const PerfRow& row = rows->back();
    const double busbw = row.busbw_gbytes * 8.0;
    if (worst.runs == 0 || busbw < worst.busbw_gbps) {
      worst.busbw_gbps = busbw;
      worst.time_us = row.time_us;
    }
    worst.wrong += row.wrong;
    ++worst.runs;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed >= repeat_s) break;
  }
  return worst;
}

}  // namespace cc::healthcheck
