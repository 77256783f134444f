#include "comm/transport/shm/shm_setup.h"

#include <sys/mman.h>

#include <cstring>
#include <string>
#include <string_view>

#include "comm/error.h"
#include "comm/rendezvous/wire.h"

namespace cc::comm::shm {
namespace {

constexpr uint32_t kHostHello = 0x48534343u;  // "CCSH"
constexpr uint32_t kSegmentOffer = 0x47534343u;  // "CCSG"
constexpr uint32_t kMaxFrame = 64 * 1024;

std::string who(size_t p) {
  return "rank " + std::to_string(p);
}

void send_frame(const tcp::Fd& fd, const std::string& payload, Deadline deadline,
                const std::string& to) {
  const std::string framed = WireWriter().str(payload).data();
  tcp::write_all(fd.get(), framed.data(), framed.size(), deadline, to);
}

std::string read_frame(const tcp::Fd& fd, Deadline deadline, const std::string& from) {
  char len_buf[4];
  tcp::read_exact(fd.get(), len_buf, 4, deadline, from);
  const uint32_t len = WireReader(std::string_view(len_buf, 4)).u32();
  if (len > kMaxFrame) {
    throw Error(ErrorKind::kProtocol, from + " sent an oversized shared-memory message");
  }
  std::string msg(len, '\0');
  tcp::read_exact(fd.get(), msg.data(), len, deadline, from);
  return msg;
}

}  // namespace

size_t ring_bytes_for(int ranks) {
  return ranks <= 4 ? size_t{1} << 20 : size_t{256} << 10;
}

LocalGroup exchange_host_identities(const Config& cfg,
                                    const std::vector<std::vector<tcp::Fd>>& conns) {
  const Deadline deadline = Clock::now() + cfg.timeout;
  const bool wants = cfg.transport == TransportKind::kAuto || cfg.transport == TransportKind::kShm;
  const std::string mine = cfg.host_id.empty() ? host_identity() : "id " + cfg.host_id;
  const std::string hello = WireWriter().u32(kHostHello).u32(wants ? 1 : 0).str(mine).data();
  const auto n = static_cast<size_t>(cfg.size);
  for (size_t p = 0; p < n; ++p) {
    if (static_cast<int>(p) != cfg.rank) send_frame(conns[p][0], hello, deadline, who(p));
  }
  LocalGroup g;
  g.wanted = wants;
  std::vector<std::string> ids(n);
  for (size_t p = 0; p < n; ++p) {
    if (static_cast<int>(p) == cfg.rank) {
      g.ranks.push_back(cfg.rank);
      ids[p] = mine;
      continue;
    }
    const std::string msg = read_frame(conns[p][0], deadline, who(p));
    WireReader r(msg);
    if (r.u32() != kHostHello) {
      throw Error(ErrorKind::kProtocol,
                  who(p) + " sent no host hello (is it running the same libclustercomm?)",
                  {static_cast<int>(p)});
    }
    const bool their_want = r.u32() != 0;
    ids[p] = r.str();
    if (ids[p] == mine) {
      g.ranks.push_back(static_cast<int>(p));
      g.wanted = g.wanted && their_want;
    }
  }
  g.host_of.resize(n);
  for (size_t p = 0; p < n; ++p) {
    size_t q = 0;
    while (ids[q] != ids[p]) ++q;
    g.host_of[p] = static_cast<int>(q);
  }
  return g;
}

Segment form_segment(const Config& cfg, const LocalGroup& group,
                     const std::vector<std::vector<tcp::Fd>>& conns, std::string& why_not) {
  const Deadline deadline = Clock::now() + cfg.timeout;
  const int k = static_cast<int>(group.ranks.size());
  const size_t ring = ring_bytes_for(k);
  const int leader = group.ranks.front();
  const auto at = [&](int r) -> const tcp::Fd& { return conns[static_cast<size_t>(r)][0]; };
  Segment seg;
  if (cfg.rank == leader) {
    std::string offer;
    try {
      if (k > kMaxLocalRanks) {
        throw Error(ErrorKind::kInvalidArgument,
                    std::to_string(k) + " ranks on one host; shared memory serves at most " +
                        std::to_string(kMaxLocalRanks));
      }
      seg = Segment::create(k, ring);
      WireWriter w;
      w.u32(kSegmentOffer).u32(1).str(seg.name()).str(std::string_view(
          reinterpret_cast<const char*>(seg.header().nonce), sizeof seg.header().nonce));
      offer = w.u64(ring).data();
    } catch (const Error& e) {
      why_not = "rank " + std::to_string(cfg.rank) + ": " + e.message();
      offer = WireWriter().u32(kSegmentOffer).u32(0).str(why_not).str("").u64(ring).data();
    }
    for (int r : group.ranks) {
      if (r != leader) send_frame(at(r), offer, deadline, who(static_cast<size_t>(r)));
    }
    for (int r : group.ranks) {
      if (r == leader) continue;
      const std::string answer = read_frame(at(r), deadline, who(static_cast<size_t>(r)));
      WireReader rd(answer);
      const bool ok = rd.u32() != 0;
      std::string why = rd.str();
      if (!ok && why_not.empty()) why_not = why;
    }
    // Everyone has mapped it (or given up): the name can go.
    seg.unlink();
    const std::string decision = WireWriter().u32(why_not.empty() ? 1 : 0).str(why_not).data();
    for (int r : group.ranks) {
      if (r != leader) send_frame(at(r), decision, deadline, who(static_cast<size_t>(r)));
    }
    if (!why_not.empty()) seg = Segment();
    return seg;
  }
  const std::string from = who(static_cast<size_t>(leader));
  const std::string offer = read_frame(at(leader), deadline, from);
  WireReader rd(offer);
  if (rd.u32() != kSegmentOffer) {
    throw Error(ErrorKind::kProtocol, from + " sent no shared-memory offer", {leader});
  }
  const bool offered = rd.u32() != 0;
  const std::string name = rd.str();
  const std::string nonce = rd.str();
  const uint64_t their_ring = rd.u64();
  std::string mine;
  if (offered) {
    try {
      if (nonce.size() != 16 || their_ring != ring) {
        throw Error(ErrorKind::kProtocol,
                    "its offer describes another segment layout (a different libclustercomm?)");
      }
      unsigned char n16[16];
      std::memcpy(n16, nonce.data(), 16);
      seg = Segment::open(name, k, ring, n16);
    } catch (const Error& e) {
      mine = "rank " + std::to_string(cfg.rank) + ": " + e.message();
    }
  }
  std::string decision;
  try {
    send_frame(at(leader), WireWriter().u32(mine.empty() ? 1 : 0).str(mine).data(), deadline,
               from);
    decision = read_frame(at(leader), deadline, from);
  } catch (...) {
    // The creator died (or stalls) before it could remove the name: every rank that was told
    // the name removes it, so kill -9 of the creator here leaves nothing in /dev/shm. (The
    // name is this job's: created O_EXCL with a random part, checked against the nonce.)
    if (offered && !name.empty()) ::shm_unlink(name.c_str());
    throw;
  }
  WireReader dec(decision);
  const bool go = dec.u32() != 0;
  why_not = dec.str();
  if (!go) {
    if (why_not.empty()) why_not = offered ? mine : name;
    return Segment();
  }
  return seg;
}

}  // namespace cc::comm::shm
