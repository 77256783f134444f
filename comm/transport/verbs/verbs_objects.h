// RAII owners of verbs objects, created in the usual order device -> PD -> completion channel
// -> CQ -> MR -> QP and released in reverse, each through the dlopen'ed table (ibverbs_api.h),
// plus the port facts a queue pair needs (GID, MTU, state).
//
// wr_id layout (one completion queue per queue pair, so the channel is implied):
//   bits 63..56  0xCC          a tag: any other value is a provider bug, reported as such
//   bit  32      1 = send, 0 = receive
//   bits 31..0   frame slot    index into the link's send or receive ring
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "comm/transport/verbs/ibverbs_api.h"
#include "comm/transport/verbs/mr_cache.h"

namespace cc::comm::verbs {

inline constexpr uint64_t kWrTag = uint64_t{0xCC} << 56;
inline constexpr uint64_t kWrSend = uint64_t{1} << 32;
inline uint64_t wr_id(bool send, uint32_t slot) { return kWrTag | (send ? kWrSend : 0) | slot; }

/// At most 10 UC QPs per device; the 11th create fails EBUSY
/// (docs/platform.md#transport-profile-and-limits).
inline constexpr int kMaxQpsPerDevice = 10;
/// A message is at most 4095 x 4 KiB = 16,773,120 bytes (a report, no public source:
/// docs/platform.md#transport-profile-and-limits).
inline constexpr size_t kMaxMessageBytes = 16773120;
/// Apple: about 63 posted receives in practice (docs/platform.md#transport-profile-and-limits).
inline constexpr uint32_t kMaxPostedReceives = 63;

/// What to do about a verbs setup call (open, PD, CQ, MR, QP) that failed with `err` (an errno
/// value), for the error message: ": too many queue pairs or MRs: ..." for EBUSY, ENOMEM and
/// EAGAIN (Apple's provider answers so at its limits), and a hint for EINVAL, EPERM/EACCES and
/// ENODEV/ENXIO; "" for any other value.
std::string verbs_advice(int err);

template <class T>
struct VerbsDeleter {
  const IbvApi* api = nullptr;
  void operator()(T* p) const;
};
template <class T>
using Owned = std::unique_ptr<T, VerbsDeleter<T>>;

using ContextOwner = Owned<ibv_context>;
using ChannelOwner = Owned<ibv_comp_channel>;
using PdOwner = Owned<ibv_pd>;
using CqOwner = Owned<ibv_cq>;
using MrOwner = Owned<ibv_mr>;
using QpOwner = Owned<ibv_qp>;

/// One opened device: context, protection domain and the port-1 facts (Apple: the port
/// number is always 1; rxe likewise). Shared by every link on it.
struct Device {
  const IbvApi* api = nullptr;
  std::string name;
  uint8_t port = 1;
  ContextOwner context;
  PdOwner pd;
  ibv_port_attr port_attr{};
  ibv_gid gid{};
  int gid_index = -1;
  bool gid_link_local = false;  // no IPv4-mapped GID: the port's fe80:: one is used
  int gid_type = -1;            // kGidType* of the GID used (kGidTypeUnknown without gid_ex)
  int qps = 0;  // queue pairs created on it
  /// The device's max_sge (scatter/gather entries per work request; ibv_query_device), 0 when
  /// unknown: zero-copy sends need 2.
  int max_sge = 0;
  /// Zero-copy registrations of user buffers (Config::ibv_zero_copy), created by the first link
  /// that can gather; declared last so it is destroyed (every MR deregistered) before the PD.
  std::unique_ptr<MrCache> mr_cache;
  std::string where() const { return name + " port " + std::to_string(port); }
};

/// MrCache's registrar on a device's protection domain: ibv_reg_mr for local access only (a
/// send reads the buffer; no remote access, no local write, so read-only memory registers too).
class PdRegistrar final : public MrRegistrar {
 public:
  PdRegistrar(const IbvApi& api, ibv_pd* pd) : api_(api), pd_(pd) {}
  void* reg(void* addr, size_t bytes, uint32_t& lkey, int& err) override;
  void dereg(void* handle) override;

 private:
  const IbvApi& api_;
  ibv_pd* pd_;
};

/// Opens `name` among the listed devices, allocates its PD, checks the port is ACTIVE and
/// finds its IPv4-mapped GID (::ffff:a.b.c.d). A port without one uses its link-local
/// (fe80::) GID instead (find_link_local) and prints one warning line on stderr naming the
/// device and port: some Macs expose only fe80 GIDs even with IPv4 set
/// (docs/platform.md#gid-table-and-addressing). Throws Error(kSystem) with what to do, e.g.
/// "rdma_en3 has no IPv4 address, so no IPv4-mapped GID, and no link-local GID: run
/// `clusterctl network apply`";
/// Error(kInvalidArgument) when the host has RDMA devices but none named `name` (a mistyped
/// device matrix: the message lists the host's devices).
std::shared_ptr<Device> open_device(const IbvApi& api, const std::string& name, int rank);

/// Index of the IPv4-mapped GID (bytes 0-9 zero, 10-11 0xff) to use in `gids`, or -1. When
/// there are several (a RoCE NIC lists each address twice, RoCE v1 and v2; a Mac port keeps its
/// self-assigned 169.254 address beside the planned one), the first of the best: a RoCE v1 GID
/// last (it does not route, and a v2 peer never meets it: NVIDIA/nccl#769), a self-assigned
/// 169.254/16 address before it (macOS drops and renumbers it, ml-explore/mlx#3467), so the
/// planned address wins. `types` (kGidType*, per index) may be null: every type unknown.
/// docs/platform.md#gid-table-and-addressing. Cost O(count).
int find_ipv4_mapped(const ibv_gid* gids, int count, const int* types = nullptr);
/// True for an IPv4-mapped GID of a self-assigned (link-local) IPv4 address, 169.254.0.0/16.
bool gid_self_assigned(const ibv_gid& gid);
/// Index of the link-local GID (fe80::/10) to use when there is no IPv4-mapped one: the first
/// at index 1 or later, else index 0 (MLX's fallback prefers index 1: index 0 can route
/// elsewhere on a Mac, docs/platform.md#gid-table-and-addressing), or -1 when there is none.
int find_link_local(const ibv_gid* gids, int count);
/// "fe80::1c2b:3aff:fe4d:5e6f": a GID in IPv6 text.
std::string gid_text(const ibv_gid& gid);

}  // namespace cc::comm::verbs
