#include "comm/transport/verbs/verbs_setup.h"

#include <map>

#include "comm/error.h"
#include "comm/rendezvous/wire.h"
#include "comm/transport/verbs/ibverbs_api.h"
#include "comm/transport/verbs/verbs_link.h"
#include "comm/transport/verbs/verbs_transport.h"

namespace cc::comm::verbs {
namespace {

// "CCQ2": frames of F payload bytes plus the header. "CCQP" was the format before, whose
// frames held the header inside F; the two cannot talk (a frame overruns the posted receive).
constexpr uint32_t kQpMagic = 0x32514343u;
constexpr uint32_t kQpMagicV1 = 0x50514343u;
constexpr uint32_t kReadyMagic = 0x44524343u;  // "CCRD"
// In place of "ready": this rank's setup failed; u32 error kind, str message. Every peer then
// fails with that message, instead of one rank knowing why and the others seeing only a
// connection close.
constexpr uint32_t kFailedMagic = 0x4c464343u;  // "CCFL"
constexpr uint32_t kSendFrames = 16;

uint32_t profile_code(VerbsProfile p) { return p == VerbsProfile::kRc ? 2 : 1; }
// Zero-copy unless asked otherwise: per message on Linux (in the Soft-RoCE guest, faster than
// copying from 1 MiB and on par at 256 KiB: comm/README.md, "Zero-copy sends"; nothing is kept,
// so the caller owes nothing), off on macOS (unmeasured on Apple's provider).
ZeroCopy zero_copy_of(const Config& cfg) {
#if defined(__APPLE__)
  return cfg.ibv_zero_copy.value_or(ZeroCopy::kOff);
#else
  return cfg.ibv_zero_copy.value_or(ZeroCopy::kPerMessage);
#endif
}

std::string profile_name(uint32_t code) {
  return code == 1 ? "apple" : code == 2 ? "rc" : "unknown (" + std::to_string(code) + ")";
}

void send_msg(int fd, const std::string& payload, Deadline d, const std::string& who) {
  const std::string framed = WireWriter().str(payload).data();
  tcp::write_all(fd, framed.data(), framed.size(), d, who);
}

std::string recv_msg(int fd, Deadline d, const std::string& who) {
  char len_buf[4];
  tcp::read_exact(fd, len_buf, 4, d, who);
  const uint32_t len = WireReader(std::string_view(len_buf, 4)).u32();
  if (len > 64 * 1024) throw Error(ErrorKind::kProtocol, who + " sent an oversized setup message");
  std::string msg(len, '\0');
  tcp::read_exact(fd, msg.data(), len, d, who);
  return msg;
}

class Setup final : public VerbsSetup {
 public:
  std::vector<std::vector<std::unique_ptr<VerbsLink>>> links;  // [peer][cable]
  bool peer_failed_ = false;  // a peer sent its setup failure in place of "ready"

  std::unique_ptr<Transport> connect(const Config& cfg,
                                     std::vector<std::vector<tcp::Fd>> conns) override {
    const Deadline deadline = Clock::now() + cfg.timeout;
    const size_t n = static_cast<size_t>(cfg.size);
    const auto frame = static_cast<uint32_t>(cfg.ibv_frame_bytes);
    // The peers with queue pairs: not this rank, nor those shared memory carries (no links).
    const auto skip = [&](size_t p) { return static_cast<int>(p) == cfg.rank || links[p].empty(); };
    for (size_t p = 0; p < n; ++p) {
      if (skip(p)) continue;
      WireWriter w;
      w.u32(kQpMagic).u32(profile_code(cfg.ibv_profile)).u32(static_cast<uint32_t>(links[p].size()));
      for (const auto& l : links[p]) {
        const QpInfo q = l->local_info(frame);
        w.u32(q.qpn).u32(q.psn).str(std::string_view(reinterpret_cast<const char*>(q.gid), 16));
        w.u32(q.frame_bytes).u32(q.recv_frames).u32(q.mtu);
      }
      send_msg(conns[p][0].get(), w.data(), deadline, "rank " + std::to_string(p));
    }
    // From here to "ready", a failure of this rank's own setup (registering the frame rings,
    // moving a queue pair to RTR/RTS, posting the receives) is sent to every peer in place of
    // "ready", so each fails with this rank's message within the timeout.
    try {
      return connect_links(cfg, conns, deadline);
    } catch (const Error& e) {
      if (peer_failed_) throw;
      const std::string failed = WireWriter()
                                     .u32(kFailedMagic)
                                     .u32(static_cast<uint32_t>(e.kind()))
                                     .str(e.message())
                                     .data();
      for (size_t p = 0; p < n; ++p) {
        if (skip(p)) continue;
        try {
          send_msg(conns[p][0].get(), failed, deadline, "rank " + std::to_string(p));
        } catch (const Error&) {
          // that peer is gone or failed too: it has its own error
        }
      }
      throw;
    }
  }

  // connect()'s second half: the peers' QP tables, the links to RTS, the transport, "ready".
  std::unique_ptr<Transport> connect_links(const Config& cfg,
                                           std::vector<std::vector<tcp::Fd>>& conns,
                                           Deadline deadline) {
    const size_t n = static_cast<size_t>(cfg.size);
    const auto frame = static_cast<uint32_t>(cfg.ibv_frame_bytes);
    const auto skip = [&](size_t p) { return static_cast<int>(p) == cfg.rank || links[p].empty(); };
    std::vector<std::vector<std::unique_ptr<FrameLink>>> frame_links(n);
    for (size_t p = 0; p < n; ++p) {
      if (skip(p)) continue;
      const std::string who = "rank " + std::to_string(p);
      const std::string table = recv_msg(conns[p][0].get(), deadline, who);
      WireReader r(table);
      const uint32_t magic = r.u32();
      if (magic == kQpMagicV1) {
        throw Error(ErrorKind::kProtocol,
                    who + " runs an older clustercomm (its verbs frames hold the header inside "
                          "the frame size) than rank " + std::to_string(cfg.rank) +
                        ": install the same clustercomm on every host",
                    {static_cast<int>(p)});
      }
      if (magic != kQpMagic) {
        throw Error(ErrorKind::kProtocol, who + " sent no QP table", {static_cast<int>(p)});
      }
      const uint32_t profile = r.u32();
      if (profile != profile_code(cfg.ibv_profile)) {
        throw Error(ErrorKind::kProtocol,
                    who + " uses the verbs profile '" + profile_name(profile) + "' and rank " +
                        std::to_string(cfg.rank) + " '" +
                        profile_name(profile_code(cfg.ibv_profile)) +
                        "': set CLUSTERCOMM_IBV_PROFILE the same on every rank",
                    {static_cast<int>(p)});
      }
      const uint32_t cables = r.u32();
      if (cables != links[p].size()) {
        throw Error(ErrorKind::kProtocol,
                    "the device matrix gives rank " + std::to_string(cfg.rank) + " " +
                        std::to_string(links[p].size()) + " cable(s) to " + who + " but " + who +
                        " " + std::to_string(cables) +
                        ": every rank must use the same MLX_IBV_DEVICES matrix",
                    {static_cast<int>(p)});
      }
      for (uint32_t k = 0; k < cables; ++k) {
        QpInfo q;
        q.qpn = r.u32();
        q.psn = r.u32();
        const std::string gid = r.str();
        if (gid.size() != 16) throw Error(ErrorKind::kProtocol, who + " sent a bad GID");
        std::copy(gid.begin(), gid.end(), reinterpret_cast<char*>(q.gid));
        q.frame_bytes = r.u32();
        q.recv_frames = r.u32();
        q.mtu = r.u32();
        const uint32_t f = std::min(frame, q.frame_bytes);
        const uint32_t rf = std::min(cfg.ibv_recv_frames, q.recv_frames);
        if (f < 4096 || (f & (f - 1)) != 0 || rf < 4 || rf > kMaxPostedReceives) {
          throw Error(ErrorKind::kProtocol, who + " proposed frames of " + std::to_string(f) +
                                                " bytes x " + std::to_string(rf) +
                                                ": not a power of two >= 4096 and 4..63 frames");
        }
        links[p][k]->connect(q, f, rf);
        frame_links[p].push_back(std::move(links[p][k]));
      }
    }
    std::vector<tcp::Fd> control(n);
    for (size_t p = 0; p < n; ++p) {
      if (!skip(p)) control[p] = std::move(conns[p].back());
    }
    VerbsOptions opts;
    opts.spin = cfg.tuning.spin;
    opts.close_timeout = cfg.timeout;
    opts.resends = cfg.ibv_profile == VerbsProfile::kRc;
    // Padding is what Apple's provider gets from JACCL; on any other provider it only costs
    // (10-70x for small messages on Soft-RoCE: docs/platform.md#transport-profile-and-limits).
#if defined(__APPLE__)
    constexpr bool kApplesProvider = true;
#else
    constexpr bool kApplesProvider = false;
#endif
    opts.pad_frames = cfg.ibv_pad_frames.value_or(kApplesProvider &&
                                                  cfg.ibv_profile == VerbsProfile::kApple);
    // Zero-copy is this rank's choice alone: the frames on the wire are the same.
    opts.zero_copy_min_bytes = zero_copy_of(cfg) != ZeroCopy::kOff ? kZeroCopyMinBytes : 0;
    // The transport's channels post every receive frame here, before "ready" goes out.
    auto t = std::make_unique<VerbsTransport>(cfg.rank, cfg.size, std::move(frame_links),
                                              std::move(control), opts);
    const std::string ready = WireWriter().u32(kReadyMagic).data();
    for (size_t p = 0; p < n; ++p) {
      if (!skip(p)) send_msg(conns[p][0].get(), ready, deadline, "rank " + std::to_string(p));
    }
    for (size_t p = 0; p < n; ++p) {
      if (skip(p)) continue;
      const std::string who = "rank " + std::to_string(p);
      const std::string answer = recv_msg(conns[p][0].get(), deadline, who);
      WireReader r(answer);
      const uint32_t magic = r.u32();
      if (magic == kFailedMagic) {
        const uint32_t code = r.u32();
        const std::string text = r.str();
        peer_failed_ = true;  // its message: not to be sent on
        throw Error(code <= static_cast<uint32_t>(ErrorKind::kInterrupted)
                        ? static_cast<ErrorKind>(code)
                        : ErrorKind::kSystem,
                    text.rfind("rank ", 0) == 0 ? text : who + ": " + text, {static_cast<int>(p)});
      }
      if (magic != kReadyMagic) {
        throw Error(ErrorKind::kProtocol, who + " did not report ready", {static_cast<int>(p)});
      }
    }
    return t;
  }
};

}  // namespace

std::unique_ptr<VerbsSetup> prepare_verbs(const Config& cfg, std::string& why_not,
                                          bool& matrix_wrong, const std::vector<bool>& on_shm) {
  matrix_wrong = false;
  const IbvApi* api = load_ibverbs(why_not);
  if (api == nullptr) return nullptr;
  const size_t n = static_cast<size_t>(cfg.size);
  if (cfg.devices.size() != n) {
    why_not = "the device matrix has " + std::to_string(cfg.devices.size()) + " columns, not " +
              std::to_string(n);
    return nullptr;
  }
  const auto skip = [&](size_t p) {
    return static_cast<int>(p) == cfg.rank || (p < on_shm.size() && on_shm[p]);
  };
  std::map<std::string, int> qps;
  for (size_t p = 0; p < n; ++p) {
    if (skip(p)) continue;
    if (cfg.devices[p].empty()) {
      why_not = "the device matrix names no RDMA device for the cable to rank " +
                std::to_string(p) + " (the verbs transport needs a cable to every rank)";
      return nullptr;
    }
    for (const auto& d : cfg.devices[p]) ++qps[d];
  }
  for (const auto& [dev, count] : qps) {
    if (cfg.ibv_profile == VerbsProfile::kApple && count > kMaxQpsPerDevice) {
      why_not = "the device matrix puts " + std::to_string(count) + " queue pairs on " + dev +
                "; Apple's RDMA provider allows at most " + std::to_string(kMaxQpsPerDevice) +
                " UC QPs per device";
      return nullptr;
    }
  }
  auto setup = std::make_unique<Setup>();
  try {
    std::map<std::string, std::shared_ptr<Device>> devs;
    for (const auto& [name, count] : qps) devs[name] = open_device(*api, name, cfg.rank);
    setup->links.resize(n);
    for (size_t p = 0; p < n; ++p) {
      if (skip(p)) continue;
      for (const auto& d : cfg.devices[p]) {
        setup->links[p].push_back(std::make_unique<VerbsLink>(
            devs[d], cfg.rank, static_cast<int>(p), kSendFrames, cfg.ibv_recv_frames,
            cfg.ibv_profile == VerbsProfile::kRc, zero_copy_of(cfg) != ZeroCopy::kOff,
            zero_copy_of(cfg) == ZeroCopy::kCached));
      }
    }
  } catch (const Error& e) {
    why_not = e.message();
    matrix_wrong = e.kind() == ErrorKind::kInvalidArgument;
    return nullptr;
  }
  return setup;
}

}  // namespace cc::comm::verbs
