// Ranks as threads: n Communicators in one process over loopback TCP (the real transport and
// bootstrap, minus process start-up). The fast suite runs on it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/clustercomm.h"
#include "comm/transport/transport.h"

namespace cc::comm::test {

/// This host's IPv4 addresses that are not loopback ("192.0.2.2"), from getifaddrs; may be
/// empty.
std::vector<std::string> non_loopback_ipv4();

/// The transports a thread test runs over: TCP (loopback) and shared memory; or only the
/// verbs transport when CLUSTERCOMM_TEST_IBV_DEVICES is set (the rdma-vm guest's suite:
/// run_threads then puts every rank on verbs whatever its Config says).
std::vector<TransportKind> thread_transports();
/// What Communicator::transport_name() starts with on `kind` in a thread world of n > 1.
std::string transport_prefix(TransportKind kind);

/// Runs body(comm) on ranks 0..n-1, each on its own thread with its own Communicator.
/// Without base.coordinator, rank 0 listens on 127.0.0.1:0 (the kernel picks the port) and the
/// others join on the port it reports (Config::on_coordinator_listening).
/// Returns one line per rank that threw ("rank 2: ..."), empty when all passed.
/// per_rank, when given, adjusts rank r's copy of `base` (its rank already set) before it starts.
std::vector<std::string> run_threads(int n, const std::function<void(Communicator&)>& body,
                                     Config base = {},
                                     const std::function<void(Config&)>& per_rank = {});

/// Like run_threads, but rank r's Communicator runs over transports[r] (already connected;
/// e.g. the verbs frame protocol on fake links).
std::vector<std::string> run_threads_over(std::vector<std::unique_ptr<Transport>> transports,
                                          const std::function<void(Communicator&)>& body,
                                          Config base = {});

}  // namespace cc::comm::test
