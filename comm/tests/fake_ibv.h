// A fake verbs library for the setup path (device list, open, PD, port, GID, CQ, MR, QP and
// its state changes) with failures injected per device: what libclustercomm does when a device
// named in the device matrix is missing, a call fails (EINVAL, EBUSY, ENOMEM), the port is down
// or the GID table has no usable entry. install() makes load_ibverbs() return it
// (install_ibverbs_for_tests), so a whole world goes through prepare_verbs and connect on it.
// The data path accepts posts and never completes anything: the setup tests need no traffic.
#pragma once

#include <infiniband/verbs.h>

#include <string>
#include <vector>

#include "comm/transport/verbs/ibverbs_api.h"

namespace cc::comm::test {

/// The call a fault makes fail.
enum class IbvCall {
  kOpenDevice,
  kAllocPd,
  kQueryPort,
  kCreateCq,
  kCreateQp,
  kModifyQpInit,
  kModifyQpRtr,
  kModifyQpRts,
  kRegMr,
  kPostRecv,
};

struct IbvFault {
  IbvCall call;
  int err;             // the errno value it fails with
  std::string device;  // on this device only
};

struct FakeIbvDevice {
  std::string name;
  ibv_port_state state = IBV_PORT_ACTIVE;
  bool ipv4_gid = true;  // an IPv4-mapped GID at index 1 (else none: all zero)
};

/// Sets the devices the fake host has and the faults to inject (replacing any before), and
/// installs the fake as the verbs library. Not thread-safe against a world running on it.
void fake_ibv_install(std::vector<FakeIbvDevice> devices, std::vector<IbvFault> faults);
/// Puts the system's verbs library back.
void fake_ibv_uninstall();

}  // namespace cc::comm::test
