#include "comm/transport/verbs/verbs_objects.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "comm/error.h"

namespace cc::comm::verbs {

template <>
void VerbsDeleter<ibv_context>::operator()(ibv_context* p) const {
  if (p != nullptr) api->close_device(p);
}
template <>
void VerbsDeleter<ibv_comp_channel>::operator()(ibv_comp_channel* p) const {
  if (p != nullptr) api->destroy_comp_channel(p);
}
template <>
void VerbsDeleter<ibv_pd>::operator()(ibv_pd* p) const {
  if (p != nullptr) api->dealloc_pd(p);
}
template <>
void VerbsDeleter<ibv_cq>::operator()(ibv_cq* p) const {
  if (p != nullptr) api->destroy_cq(p);
}
template <>
void VerbsDeleter<ibv_mr>::operator()(ibv_mr* p) const {
  if (p != nullptr) api->dereg_mr(p);
}
template <>
void VerbsDeleter<ibv_qp>::operator()(ibv_qp* p) const {
  if (p != nullptr) api->destroy_qp(p);
}

std::string verbs_advice(int err) {
  switch (err) {
    case EBUSY:
    case ENOMEM:
    case EAGAIN:
      return ": too many queue pairs or MRs: Apple allows 10 QPs and about 100 MRs per device; "
             "end other jobs using the device (or what a crashed job left running), or reboot "
             "to clear stale RDMA state";
    case EINVAL:
      return ": the provider refused it: check that the device matrix (MLX_IBV_DEVICES) names "
             "the device on this cable and that its port is up (on a Mac: RDMA enabled, "
             "`rdma_ctl enable`, and the interface has an IPv4 address, `clusterctl network "
             "apply`)";
    case EPERM:
    case EACCES:
      return ": no permission to use the device: check the access rights of /dev/infiniband/* "
             "and the locked-memory limit (ulimit -l)";
    case ENODEV:
    case ENXIO:
      return ": the device went away: check the cable and that RDMA is enabled";
    default:
      return "";
  }
}

bool gid_self_assigned(const ibv_gid& gid) {
  return gid.raw[12] == 169 && gid.raw[13] == 254;
}

int find_ipv4_mapped(const ibv_gid* gids, int count, const int* types) {
  int best = -1;
  int best_rank = 0;
  for (int i = 0; i < count; ++i) {
    const uint8_t* r = gids[i].raw;
    bool zero = true;
    for (int b = 0; b < 10; ++b) zero = zero && r[b] == 0;
    if (!zero || r[10] != 0xff || r[11] != 0xff) continue;
    // Lower is better: a RoCE v1 entry last, then a self-assigned address.
    const int rank = (types != nullptr && types[i] == kGidTypeRoceV1 ? 2 : 0) +
                     (gid_self_assigned(gids[i]) ? 1 : 0);
    if (best < 0 || rank < best_rank) {
      best = i;
      best_rank = rank;
    }
  }
  return best;
}

int find_link_local(const ibv_gid* gids, int count) {
  int first = -1;
  for (int i = 0; i < count; ++i) {
    const uint8_t* r = gids[i].raw;
    if (r[0] != 0xfe || (r[1] & 0xc0) != 0x80) continue;
    if (i >= 1) return i;
    first = i;
  }
  return first;
}

void* PdRegistrar::reg(void* addr, size_t bytes, uint32_t& lkey, int& err) {
  errno = 0;
  ibv_mr* mr = api_.reg_mr(pd_, addr, bytes, 0);
  if (mr == nullptr) {
    err = errno != 0 ? errno : ENOMEM;
    return nullptr;
  }
  lkey = mr->lkey;
  return mr;
}

void PdRegistrar::dereg(void* handle) {
  api_.dereg_mr(static_cast<ibv_mr*>(handle));
}

std::string gid_text(const ibv_gid& gid) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (::inet_ntop(AF_INET6, gid.raw, buf, sizeof buf) == nullptr) return "?";
  return buf;
}

std::shared_ptr<Device> open_device(const IbvApi& api, const std::string& name, int rank) {
  const std::string who = "rank " + std::to_string(rank) + ": ";
  int n = 0;
  ibv_device** list = api.get_device_list(&n);
  if (list == nullptr) {
    throw Error(ErrorKind::kSystem, who + "cannot list RDMA devices to find " + name + " (" +
                                        std::strerror(errno) +
                                        "): this host has no RDMA stack or RDMA is not enabled");
  }
  std::unique_ptr<ibv_device*, void (*)(ibv_device**)> guard(list, nullptr);
  ibv_device* found = nullptr;
  std::string names;
  for (int i = 0; i < n; ++i) {
    const std::string d = api.get_device_name(list[i]);
    names += (names.empty() ? "" : ", ") + d;
    if (d == name) found = list[i];
  }
  auto dev = std::make_shared<Device>();
  dev->api = &api;
  dev->name = name;
  int open_err = 0;
  if (found != nullptr) {
    errno = 0;
    dev->context = ContextOwner(api.open_device(found), {&api});
    open_err = errno != 0 ? errno : EINVAL;
  }
  api.free_device_list(list);
  guard.release();
  if (found == nullptr) {
    // Devices but not this one: the device matrix is wrong, not the host (kInvalidArgument).
    throw Error(n == 0 ? ErrorKind::kSystem : ErrorKind::kInvalidArgument,
                who + "RDMA device " + name + " does not exist on this host " +
                    (n == 0 ? std::string("(there are none: is RDMA enabled (rdma_ctl enable) "
                                          "and the cable connected?)")
                            : "(it has " + names + ")"));
  }
  if (!dev->context) {
    throw Error(ErrorKind::kSystem, who + "cannot open " + dev->where() + " (" +
                                        std::strerror(open_err) + ")" + verbs_advice(open_err));
  }
  errno = 0;
  dev->pd = PdOwner(api.alloc_pd(dev->context.get()), {&api});
  if (!dev->pd) {
    // A provider that sets no errno still failed: say what a failed PD usually means.
    const int err = errno != 0 ? errno : ENOMEM;
    const std::string advice = err == EBUSY || err == ENOMEM || err == EAGAIN
                                   ? verbs_advice(err)
                                   : verbs_advice(err) + (verbs_advice(err).empty() ? ": " : "; ") +
                                         "stale RDMA state after a crash is cleared only by a "
                                         "reboot";
    throw Error(ErrorKind::kSystem, who + "cannot allocate a protection domain on " + dev->where() +
                                        " (" + std::strerror(err) + ")" + advice);
  }
  if (api.query_device != nullptr) {
    ibv_device_attr attr{};
    if (api.query_device(dev->context.get(), &attr) == 0) dev->max_sge = attr.max_sge;
  }
  std::memset(&dev->port_attr, 0, sizeof(dev->port_attr));
  if (const int err = api.query_port(dev->context.get(), dev->port, &dev->port_attr); err != 0) {
    const int e = err > 0 ? err : (errno != 0 ? errno : EINVAL);
    throw Error(ErrorKind::kSystem, who + "cannot query " + dev->where() + " (" + std::strerror(e) +
                                        ")" + verbs_advice(e));
  }
  if (dev->port_attr.state != IBV_PORT_ACTIVE) {
    throw Error(ErrorKind::kSystem,
                who + dev->where() + " is not active (state " +
                    std::to_string(static_cast<int>(dev->port_attr.state)) +
                    "): the peer at the other end of that cable must have RDMA enabled, and "
                    "the link must be up");
  }
  const int len = dev->port_attr.gid_tbl_len;
  std::vector<ibv_gid> gids(static_cast<size_t>(len > 0 ? len : 0));
  for (int i = 0; i < len; ++i) {
    if (api.query_gid(dev->context.get(), dev->port, i, &gids[static_cast<size_t>(i)]) != 0) {
      std::memset(&gids[static_cast<size_t>(i)], 0, sizeof(ibv_gid));
    }
  }
  // The RoCE version of each entry, where the library tells it (rdma-core; not Apple's).
  std::vector<int> types(gids.size(), kGidTypeUnknown);
  if (api.query_gid_ex != nullptr) {
    for (int i = 0; i < len; ++i) {
      GidEntry e{};
      if (api.query_gid_ex(dev->context.get(), dev->port, static_cast<uint32_t>(i), &e, 0,
                           sizeof e) == 0) {
        types[static_cast<size_t>(i)] = static_cast<int>(e.gid_type);
      }
    }
  }
  // A Mac's rdma_enX sits on enX; other providers (rxe0_1, mlx5_0) name no interface.
  const std::string iface =
      name.rfind("rdma_", 0) == 0 ? name.substr(5) : "the network interface of " + name;
  dev->gid_index = find_ipv4_mapped(gids.data(), len, types.data());
  if (dev->gid_index < 0) {
    dev->gid_index = find_link_local(gids.data(), len);
    dev->gid_link_local = dev->gid_index >= 0;
  }
  if (dev->gid_index < 0) {
    throw Error(ErrorKind::kSystem, who + name + " has no IPv4 address, so no IPv4-mapped GID, "
                                    "and no link-local GID either: run `clusterctl network "
                                    "apply` (" + dev->where() + "; the GID needs an IPv4 "
                                    "address on " + iface + ")");
  }
  dev->gid = gids[static_cast<size_t>(dev->gid_index)];
  dev->gid_type = types[static_cast<size_t>(dev->gid_index)];
  if (!dev->gid_link_local && gid_self_assigned(dev->gid)) {
    std::fprintf(stderr,
                 "clustercomm: %swarning: %s's only IPv4-mapped GID %s (index %d) is of a "
                 "self-assigned 169.254 address, which macOS drops at boot and renumbers after "
                 "re-cabling (queue pairs then fail moving to RTR, errno 22); give %s a fixed "
                 "IPv4 address (`clusterctl network apply`)\n",
                 who.c_str(), dev->where().c_str(), gid_text(dev->gid).c_str(), dev->gid_index,
                 iface.c_str());
  }
  if (dev->gid_type == kGidTypeRoceV1) {
    std::fprintf(stderr,
                 "clustercomm: %swarning: %s has only a RoCE v1 IPv4-mapped GID %s (index %d); "
                 "a peer on RoCE v2 never meets it: both ends must use one version\n",
                 who.c_str(), dev->where().c_str(), gid_text(dev->gid).c_str(), dev->gid_index);
  }
  if (dev->gid_link_local) {
    std::fprintf(stderr,
                 "clustercomm: %swarning: %s has no IPv4-mapped GID; using its link-local GID "
                 "%s (index %d). Both ends of the cable must do the same; to use IPv4, give %s "
                 "an IPv4 address (`clusterctl network apply`)\n",
                 who.c_str(), dev->where().c_str(), gid_text(dev->gid).c_str(), dev->gid_index,
                 iface.c_str());
  }
  return dev;
}

}  // namespace cc::comm::verbs
