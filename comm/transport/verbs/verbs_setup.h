// Setting up the verbs transport of one rank, in two phases around a job-wide agreement
// (transport/select.cc):
// 1. prepare_verbs(): load the verbs library (dlopen), open the devices this rank's row of
//    the device matrix names, check Apple's limits (<= 10 QPs per device), find each port's
//    IPv4-mapped GID and create one queue pair per (peer, cable): UC in the Apple profile, RC
//    in the rc profile (Config::ibv_profile). Any failure only means
//    "this rank cannot use verbs" (why_not says why); nothing has been sent yet.
// 2. VerbsSetup::connect(): once every rank said yes, exchange QpInfo with each peer over
//    the bootstrap's authenticated data connection (fixed little-endian format: u32 magic,
//    u32 profile (1 apple, 2 rc: both ends must match), u32 cables, then per cable u32 qpn,
//    u32 psn, 16 GID bytes, u32 frame bytes, u32 receive frames, u32 MTU), agree on
//    the smaller frame size and receive count, register the frame rings, move every QP to
//    RTR/RTS, post all receives, then exchange "ready": no rank sends before its peer's
//    receives are posted. Only with the peers it has queue pairs to (not those on shared
//    memory: prepare_verbs' on_shm). The data connections close; the control connections stay with the
//    transport (peer death and ABORT/BYE, verbs_transport.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/config.h"
#include "comm/transport/tcp/socket.h"
#include "comm/transport/transport.h"

namespace cc::comm::verbs {

class VerbsSetup {
 public:
  virtual ~VerbsSetup() = default;
  /// conns as bootstrap_connections() returns them. Throws Error (kTimeout naming a silent
  /// peer, kProtocol on a device matrix the two ends disagree about, kSystem).
  virtual std::unique_ptr<Transport> connect(const Config& cfg,
                                             std::vector<std::vector<tcp::Fd>> conns) = 0;
};

/// nullptr with `why_not` set when this rank cannot use verbs; `matrix_wrong` is then true when
/// the cause is the device matrix itself (it names a device this host lacks while the host has
/// others: a typo, which must not quietly become TCP), false when RDMA is not usable here.
/// `on_shm` (empty, or one entry per world rank): the peers shared memory carries (this host's
/// ranks, when they mapped one segment). They get no queue pair, their entries in the device
/// matrix are not used (they may be empty), and connect() leaves their connections alone:
/// the caller takes those out of `conns` first (it passes them empty).
std::unique_ptr<VerbsSetup> prepare_verbs(const Config& cfg, std::string& why_not,
                                          bool& matrix_wrong,
                                          const std::vector<bool>& on_shm = {});

}  // namespace cc::comm::verbs
