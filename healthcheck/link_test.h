// Measuring cables and the whole group with the comm runtime's own benchmark,
// bench/clustercomm-perf, started on the hosts through remote::Executor (no launcher needed).
//
// Per cable (the default level): 2 ranks, rank 0 on end a, rank 1 on end b, each bound to its
// end's planned address (CLUSTERCOMM_LISTEN, CLUSTERCOMM_PEER_ADDRS "local>remote", rank 0's
// coordinator on a's address: comm/README.md), running `sendrecv` at 8 bytes (latency) and
// PerfOptions::bandwidth_bytes (bandwidth), data checked. With 2 ranks sendrecv is a
// ping-pong (rank 0 sends then receives, rank 1 mirrors), so
//   latency (us, one way)      = half the 8-byte round trip (as perftest's ib_send_lat),
//                                p50 and p99 over the calls (clustercomm-perf -P 1);
//   bandwidth (Gb/s, one way)  = bytes x 8 / 1e9 / (mean call time / 2).
// Cables run in rounds (schedule_rounds): those in one round share no host, so no host's CPU
// or memory bandwidth is split between two measurements.
//
// All-reduce (--full): one rank per host in host order, each peer reached over the planned
// address of their first cable (the management address when the pair has none), coordinator on
// rank 0's management address, each rank listening on one port of every address (peers use a
// rank's first listener's port with the cable address they were given: comm/rendezvous); `all_reduce` of all_reduce_size_bytes floats, data checked;
// busbw as nccl-tests (algbw x 2(n-1)/n), in Gb/s.
//
// The job secret (CLUSTERCOMM_TOKEN) travels on each rank's stdin, never on a command line.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/cluster_state.h"
#include "remote/executor.h"
#include "util/result.h"

namespace cc::healthcheck {

struct PerfOptions {
  std::string program = "clustercomm-perf";  // path of clustercomm-perf on the hosts
  std::chrono::milliseconds timeout{60'000};  // per rank process
  int latency_calls = 200;
  std::size_t bandwidth_bytes = std::size_t{4} << 20;
};

/// What one perf run's rank-0 output says (parse_perf_output).
struct PerfRow {
  std::size_t bytes = 0;
  double time_us = 0;      // out-of-place mean per call
  double algbw_gbytes = 0;  // GB/s (1e9 bytes), out-of-place
  double busbw_gbytes = 0;
  std::size_t wrong = 0;   // out-of-place + in-place
  std::optional<double> p50_us, p99_us;  // with -P 1
};
/// The table rows of clustercomm-perf's output in order. Errors (kCheckFailed): no row.
util::Result<std::vector<PerfRow>> parse_perf_output(std::string_view out);

struct LinkFigures {
  double latency_p50_us = 0;  // one way
  double latency_p99_us = 0;
  double bandwidth_gbps = 0;  // one way, Gb/s
  std::size_t wrong = 0;      // elements that arrived wrong
};

/// Cable indices in rounds; the cables of a round share no host. Greedy, in cable order.
std::vector<std::vector<std::size_t>> schedule_rounds(const std::vector<discovery::Cable>& cables);

/// Measures one cable between its planned addresses. `a`/`b`: executors of the ends' hosts.
/// Errors (kCheckFailed): a rank failed or timed out (the message names both hosts and ports
/// and quotes each rank's stderr), the output could not be read; kUnreachable from executors;
/// kInterrupted on Ctrl-C ("the link test over h1 tb1 - h2 tb1 was interrupted (Ctrl-C)").
util::Result<LinkFigures> measure_link(remote::Executor& a, remote::Executor& b,
                                       const discovery::LinkAddress& link,
                                       const PerfOptions& opts);

struct AllReduceFigures {
  double busbw_gbps = 0;
  double time_us = 0;
  std::size_t wrong = 0;
  int runs = 0;
};

/// One rank per executor (the state's hosts, in order). `repeat_s` > 0: runs again until that
/// many seconds passed (a soak); figures are the worst run's (lowest busbw) and the sum of wrong
/// elements. Errors as measure_link, naming the rank and host.
util::Result<AllReduceFigures> measure_all_reduce(std::span<remote::Executor* const> executors,
                                                  const discovery::ClusterState& state,
                                                  std::size_t bytes, const PerfOptions& opts,
                                                  int repeat_s);

}  // namespace cc::healthcheck
