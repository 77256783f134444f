// `clusterctl rdma enable --soft-roce`: Soft-RoCE devices on a Linux host's cabled interfaces,
// the Linux counterpart of enabling RDMA on a Mac (docs/platform.md#soft-roce: `rdma link add rxe_X
// type rxe netdev IFACE` puts a software RDMA device on any Ethernet-type interface; kernel module
// rdma_rxe). Used by the RDMA test lab.
//
// Per host: `rdma -j link` lists the devices there are; every cabled interface that no device
// rides on gets `rxe_<IF>` through
//     modprobe rdma_rxe
//     rdma link add rxe_<IF> type rxe netdev <IF>
// run as root or through `sudo -n` (provision/network_apply.h, detect_privilege), then
// `rdma -j link` again checks that each interface has its device. Idempotent: interfaces that
// have a device already are skipped, and a host with nothing to add runs no command.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "discovery/cluster_state.h"
#include "discovery/fix_command.h"
#include "discovery/linux_rdma.h"
#include "remote/executor.h"
#include "util/result.h"

namespace cc::provision {

/// The interfaces of `host`'s ports that are cabled to another host of `state`, port order.
std::vector<std::string> cabled_interfaces(const discovery::ClusterState& state,
                                           const std::string& host);

/// "rxe_" + interface.
std::string rxe_device_name(const std::string& interface);

struct SoftRocePlan {
  std::string host;
  std::vector<std::string> present;  // "tb1 (rxe_tb1)": interfaces that have a device already
  std::vector<std::string> add;      // interfaces to give a device, in the given order
  std::vector<std::vector<std::string>> commands;  // argv, without sudo; empty: nothing to do
};

/// Pure: what to run on `host` for `interfaces`, given its live `rdma -j link` devices.
SoftRocePlan plan_soft_roce(const std::string& host, const std::vector<std::string>& interfaces,
                            const discovery::RdmaLinks& links);

/// Reads the host's devices, plans, and (unless `dry_run`) runs the plan and verifies it.
/// Returns the plan (what was, or with dry_run would be, done). Errors, each naming the host:
///  - the executor's (kUnreachable, kInterrupted);
///  - kCheckFailed: `rdma -j link` unreadable; neither root nor passwordless sudo (the message
///    lists the commands to run by hand); the kernel module rdma_rxe missing (modprobe's
///    message and what to install); `rdma link add` failing (its stderr); a device missing
///    after the commands ran.
/// The `clusterctl rdma status` a message suggests names the cluster as `fix` says.
util::Result<SoftRocePlan> create_soft_roce(remote::Executor& ex,
                                            const std::vector<std::string>& interfaces,
                                            bool dry_run, std::chrono::milliseconds timeout,
                                            const discovery::FixCommand& fix);

}  // namespace cc::provision
