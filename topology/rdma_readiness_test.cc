#include "topology/rdma_readiness.h"

#include <string>

#include <doctest/doctest.h>

namespace cc::topology {
namespace {

discovery::HostFacts linux_host(discovery::RdmaState state, bool device) {
  discovery::HostFacts h;
  h.host = "h1";
  h.os.name = "Debian GNU/Linux";
  h.os.version = "12";
  h.rdma.state = state;
  if (device) {
    discovery::RdmaDevice d;
    d.name = "rxe_tb1";
    h.rdma.devices.push_back(d);
  }
  return h;
}

TEST_CASE("rdma readiness: a Linux host without a device is no-device, never unsupported") {
  // linux_facts records a Linux host without RDMA devices as RdmaState::kUnsupported (the raw
  // fact); `discover` printed that word while `rdma status` said no-device for the same host.
  auto h = linux_host(discovery::RdmaState::kUnsupported, false);
  CHECK(host_rdma_readiness(h) == RdmaReadiness::kNoDevice);
  CHECK(std::string(to_string(host_rdma_readiness(h))) == "no-device");
  CHECK(std::string(to_string(host_rdma_readiness(
            linux_host(discovery::RdmaState::kEnabled, true)))) == "ready");
  CHECK(std::string(to_string(host_rdma_readiness(
            linux_host(discovery::RdmaState::kUnknown, false)))) == "unknown");
}

TEST_CASE("rdma readiness: macOS version comparison") {
  CHECK(macos_at_least("26.2", 26, 2));
  CHECK(macos_at_least("27", 26, 2));
  CHECK_FALSE(macos_at_least("26.1", 26, 2));
  CHECK(macos_at_least("beta", 26, 2));
}

}  // namespace
}  // namespace cc::topology
