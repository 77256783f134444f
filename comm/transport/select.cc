#include "comm/transport/select.h"

#include <cstdio>
#include <thread>

#include "comm/error.h"
#include "comm/rendezvous/bootstrap.h"
#include "comm/rendezvous/wire.h"
#include "comm/transport/shm/shm_setup.h"
#include "comm/transport/shm/shm_transport.h"
#include "comm/transport/verbs/verbs_setup.h"

namespace cc::comm {
namespace {

constexpr uint32_t kVerbsHello = 0x42564343u;  // "CCVB"
// A rank's answer in the hello: it can use verbs, it cannot (RDMA not usable on its host), or
// its row of the device matrix is wrong (fatal for every rank, whatever CLUSTERCOMM_TRANSPORT).
constexpr uint32_t kVerbsNo = 0, kVerbsYes = 1, kVerbsMatrixWrong = 2;

}  // namespace

std::unique_ptr<Transport> select_transport(const Config& cfg,
                                            std::vector<std::vector<tcp::Fd>> conns,
                                            std::string* fallback_line,
                                            std::vector<int>* host_of) {
  // Shared memory first: which ranks share this host, and can they map one segment?
  const shm::LocalGroup group = shm::exchange_host_identities(cfg, conns);
  if (host_of != nullptr) *host_of = group.host_of;
  shm::Segment segment;
  if (group.ranks.size() >= 2 && group.wanted) {
    std::string why;
    segment = shm::form_segment(cfg, group, conns, why);
    if (!segment.mapped()) {
      if (cfg.transport == TransportKind::kShm) {
        throw Error(ErrorKind::kSystem,
                    "CLUSTERCOMM_TRANSPORT=shm, but the ranks on this host cannot share memory: " +
                        why + " (unset CLUSTERCOMM_TRANSPORT to use TCP between them)");
      }
      const std::string line = "clustercomm: rank " + std::to_string(cfg.rank) +
                               ": the ranks on this host use TCP, not shared memory: " + why;
      std::fprintf(stderr, "%s\n", line.c_str());
      if (fallback_line != nullptr) *fallback_line = line;
    }
  } else if (cfg.transport == TransportKind::kShm && group.ranks.size() >= 2) {
    throw Error(ErrorKind::kInvalidArgument,
                "CLUSTERCOMM_TRANSPORT=shm on rank " + std::to_string(cfg.rank) +
                    ", but another rank on this host did not ask for shared memory: every rank "
                    "must set the same CLUSTERCOMM_TRANSPORT");
  }
  const size_t n = static_cast<size_t>(cfg.size);
  const bool shm_up = segment.mapped();
  // The peers shared memory carries: this host's other ranks, when they mapped the segment.
  std::vector<bool> on_shm(n, false);
  if (shm_up) {
    for (int r : group.ranks) on_shm[static_cast<size_t>(r)] = r != cfg.rank;
  }
  // Takes the shared-memory peers' connections out of `all`: their last one becomes the pair
  // socket (wake-ups, ABORT, BYE, EOF), the data connections close.
  const auto take_local = [&](std::vector<std::vector<tcp::Fd>>& all) {
    std::vector<tcp::Fd> socks(n);
    for (size_t p = 0; p < n; ++p) {
      if (!on_shm[p]) continue;
      socks[p] = std::move(all[p].back());
      all[p].clear();
    }
    return socks;
  };
  // The shared-memory transport over the segment; `remote` (TCP or verbs, or nullptr when the
  // whole world is on this host) carries every other peer.
  const auto with_shm = [&](std::vector<tcp::Fd> socks, std::unique_ptr<Transport> remote) {
    shm::ShmOptions opts;
    opts.spin = cfg.tuning.spin;
    opts.single_copy_min = cfg.tuning.shm_single_copy_min;
    const unsigned cores = std::thread::hardware_concurrency();
    opts.yield = cores == 0 || group.ranks.size() > cores;
    // Every rank of the world sees the same: all on this host (no remote), more than its cores.
    opts.crowded = !remote && cores > 0 && group.ranks.size() > cores;
    if (opts.crowded) {
      opts.ranks_per_core = static_cast<unsigned>((group.ranks.size() + cores - 1) / cores);
    }
    return std::make_unique<shm::ShmTransport>(cfg.rank, cfg.size, group.ranks,
                                               std::move(segment), std::move(socks),
                                               std::move(remote), opts);
  };
  // TCP between hosts (or between all ranks), with shared memory inside this host when the
  // segment is up.
  auto tcp_or_shm = [&](std::vector<std::vector<tcp::Fd>> all) -> std::unique_ptr<Transport> {
    if (!shm_up) return make_tcp_transport(cfg, std::move(all));
    std::vector<tcp::Fd> socks = take_local(all);
    std::unique_ptr<Transport> remote;
    if (group.ranks.size() < n) remote = make_tcp_transport(cfg, std::move(all));
    return with_shm(std::move(socks), std::move(remote));
  };
  // A world entirely on this host, sharing one segment, has no use for the cables (every rank
  // sees the same: the segment's decision is the host's, and the host is the world).
  const bool all_local = shm_up && group.ranks.size() == n;
  if (cfg.transport == TransportKind::kTcp || cfg.transport == TransportKind::kShm ||
      (cfg.transport == TransportKind::kAuto && (cfg.devices.empty() || all_local))) {
    return tcp_or_shm(std::move(conns));
  }
  std::string why;
  bool matrix_wrong = false;
  std::unique_ptr<verbs::VerbsSetup> setup;
  if (cfg.devices.empty()) {
    why = "no device matrix was given (set MLX_IBV_DEVICES)";
  } else {
    setup = verbs::prepare_verbs(cfg, why, matrix_wrong, on_shm);
  }
  // Agree job-wide: tell every peer, hear from every peer.
  const Deadline deadline = Clock::now() + cfg.timeout;
  WireWriter w;
  w.u32(kVerbsHello)
      .u32(setup ? kVerbsYes : (matrix_wrong ? kVerbsMatrixWrong : kVerbsNo))
      .str(setup ? "" : why);
  const std::string framed = WireWriter().str(w.data()).data();
  for (size_t p = 0; p < n; ++p) {
    if (static_cast<int>(p) == cfg.rank) continue;
    tcp::write_all(conns[p][0].get(), framed.data(), framed.size(), deadline,
                   "rank " + std::to_string(p));
  }
  std::string first_no =
      setup ? "" : (why.rfind("rank ", 0) == 0 ? why : "rank " + std::to_string(cfg.rank) + ": " + why);
  int first_no_rank = setup ? -1 : cfg.rank;
  int wrong_rank = matrix_wrong ? cfg.rank : -1;
  std::string wrong = matrix_wrong ? first_no : "";
  for (size_t p = 0; p < n; ++p) {
    if (static_cast<int>(p) == cfg.rank) continue;
    const std::string who = "rank " + std::to_string(p);
    char len_buf[4];
    tcp::read_exact(conns[p][0].get(), len_buf, 4, deadline, who);
    const uint32_t len = WireReader(std::string_view(len_buf, 4)).u32();
    if (len > 64 * 1024) throw Error(ErrorKind::kProtocol, who + " sent an oversized verbs hello");
    std::string msg(len, '\0');
    tcp::read_exact(conns[p][0].get(), msg.data(), len, deadline, who);
    WireReader r(msg);
    if (r.u32() != kVerbsHello) throw Error(ErrorKind::kProtocol, who + " sent no verbs hello");
    const uint32_t answer = r.u32();
    const bool ok = answer == kVerbsYes;
    const std::string their = r.str();
    const std::string said = their.rfind("rank ", 0) == 0 ? their : who + ": " + their;
    if (answer == kVerbsMatrixWrong && (wrong_rank < 0 || static_cast<int>(p) < wrong_rank)) {
      wrong_rank = static_cast<int>(p);
      wrong = said;
    }
    if (!ok && (first_no_rank < 0 || static_cast<int>(p) < first_no_rank)) {
      first_no_rank = static_cast<int>(p);
      first_no = said;
    }
  }
  if (first_no_rank < 0) {
    if (!shm_up) return setup->connect(cfg, std::move(conns));  // verbs for every pair
    // Shared memory inside this host, verbs to the other hosts.
    std::vector<tcp::Fd> socks = take_local(conns);
    std::unique_ptr<Transport> remote = setup->connect(cfg, std::move(conns));
    return with_shm(std::move(socks), std::move(remote));
  }
  setup.reset();
  if (wrong_rank >= 0) {
    throw Error(ErrorKind::kInvalidArgument,
                wrong + ": fix the device matrix (MLX_IBV_DEVICES) on every rank, or unset "
                        "MLX_IBV_DEVICES to run on TCP",
                {wrong_rank});
  }
  if (cfg.transport == TransportKind::kVerbs) {
    throw Error(ErrorKind::kSystem,
                "CLUSTERCOMM_TRANSPORT=verbs, but " + first_no +
                    " (unset CLUSTERCOMM_TRANSPORT to fall back to TCP)",
                {first_no_rank});
  }
  const std::string line =
      "clustercomm: rank " + std::to_string(cfg.rank) + ": using TCP, not RDMA: " + first_no;
  std::fprintf(stderr, "%s\n", line.c_str());
  if (fallback_line != nullptr) *fallback_line = line;
  return tcp_or_shm(std::move(conns));
}

}  // namespace cc::comm
