#include "comm/rendezvous/bootstrap.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <random>

#include "comm/error.h"
#include "comm/rendezvous/acceptor.h"
#include "comm/rendezvous/handshake.h"
#include "comm/rendezvous/wire.h"
#include "comm/transport/shm/shm_segment.h"
#include "comm/transport/tcp/tcp_transport.h"

namespace cc::comm {
namespace {

// What to change when rank 0 cannot listen on the coordinator address: the variable (or
// Config field) it came from, or, when a launcher set it, the launcher's own setting
// (Config::coordinator_from), never a variable the operator did not set.
std::string coordinator_advice(const Config& cfg) {
  const std::string& from = cfg.coordinator_from;
  if (from.empty() || from == "CLUSTERCOMM_COORDINATOR" || from == "MLX_JACCL_COORDINATOR" ||
      from == "MLX_HOSTFILE") {
    return (from.empty() ? std::string("Config::coordinator") : from) +
           " must name an address of rank 0's host and a free port (0.0.0.0:port on rank 0 "
           "listens on all)";
  }
  return "the coordinator address " + cfg.coordinator + " comes from " + from +
         ": choose a port there that is free on rank 0's host (or end what listens on it)";
}

using tcp::Address;
using tcp::Fd;

constexpr uint32_t kJoin = 1, kConnect = 2;
// The wire protocol of this build: what a join, the coordinator's reply, a connection's hello
// and every transport's frames look like. Bump it with any change to one of them; the join and
// the reply carry it, so ranks of different builds fail at start-up naming each other.
// 0: a join without the transport it chose; 1: a join with it but without this number;
// 2: striped verbs parts split on multiples of 8 bytes, and the join and reply carry this;
// 3: every message carries the signature of its call (what it reduces: TCP header bits 8..15,
// the shared-memory ring header's magic, verbs flags bits 1..7; transport.h, Signature);
// 4: the join also carries the shared-memory segment's version (shm::kSegmentVersion), which
// rank 0 compares with its own: builds that would map different segment layouts (3 and 4 both
// spoke wire protocol 3) fail at start-up on every rank instead of running the ranks of a host
// on TCP. A segment layout change thus needs no bump here; it changes kSegmentVersion.
// 5: the join also carries the rank's address on the coordinator's network (empty for none),
// and the reply, after this number, every rank's (Config::listen_ring_neighbours_only).
constexpr uint32_t kWire = 5;
constexpr uint32_t kMaxReply = 16u << 20;
// How much longer a rank waits for its peers' connections than they try to connect: a rank
// that cannot reach a peer (no route to the peer's cable address: EHOSTUNREACH, refused) then
// fails first and says where it connected and why, before the peer's bare "never connected"
// ends the job (a launcher stops every rank at the first failure).
constexpr std::chrono::milliseconds kConnectorFirst{1000};

// CLUSTERCOMM_TRANSPORT's spelling of a TransportKind as it travels in a join.
std::string transport_name(uint32_t kind) {
  switch (kind) {
    case static_cast<uint32_t>(TransportKind::kAuto): return "auto";
    case static_cast<uint32_t>(TransportKind::kTcp): return "tcp";
    case static_cast<uint32_t>(TransportKind::kVerbs): return "verbs";
    case static_cast<uint32_t>(TransportKind::kShm): return "shm";
    default: return "<unknown " + std::to_string(kind) + ">";
  }
}

// Ranks a and b are next to each other in the ring of n (MLX's ring connects only these).
bool ring_neighbours(int a, int b, int n) {
  const int d = std::abs(a - b);
  return d == 1 || d == n - 1;
}

bool connects_to(int a, int b) {  // does rank a open the connection to rank b?
  const int lo = std::min(a, b), hi = std::max(a, b);
  const bool lo_opens = hi == lo + 1;
  return lo_opens ? a == lo : a == hi;
}

std::string host_of(const std::string& host_port) {
  std::string host;
  int port = 0;
  tcp::split_host_port(host_port, host, port, 0);
  return host;
}

// An IPv4 or IPv6 literal, not a name to resolve.
bool is_numeric_host(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

std::string join_host_port(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

std::string with_host(const Address& a, const std::string& host) {
  if (!a.is_any()) return a.to_string();
  return join_host_port(host, a.port());
}

// Without a token every address of the world must be loopback: the empty token is known to
// any process that reaches a listener, so only this host's processes may take part.
void check_tokenless(const Config& cfg) {
  if (!cfg.token.empty()) return;
  const std::string me = "rank " + std::to_string(cfg.rank);
  const auto refuse = [&](const std::string& what, const std::string& addr) {
    throw Error(ErrorKind::kInvalidArgument,
                me + ": CLUSTERCOMM_TOKEN is unset or empty, but " + what + " " + addr +
                    " is not a loopback address: without a token any process that reaches the "
                    "job could join it. Set CLUSTERCOMM_TOKEN to the same secret on every rank "
                    "(clusterctl launch does), or run every rank on this host with a 127.0.0.1 "
                    "coordinator");
  };
  if (!tcp::resolve(cfg.coordinator).is_loopback()) {
    refuse("the coordinator address (CLUSTERCOMM_COORDINATOR)", cfg.coordinator);
  }
  for (const std::string& l : cfg.listen) {
    if (!tcp::resolve(l, 0).is_loopback()) refuse("the listen address (CLUSTERCOMM_LISTEN)", l);
  }
  for (const PeerRoute& r : cfg.routes) {
    if (!r.remote.empty() && !tcp::resolve(r.remote, 0).is_loopback()) {
      refuse("the peer address (CLUSTERCOMM_PEER_ADDRS)", r.remote);
    }
    if (!r.local.empty() && !tcp::resolve(r.local, 0).is_loopback()) {
      refuse("the local address (CLUSTERCOMM_PEER_ADDRS)", r.local);
    }
  }
}

std::string encode_error(const Error& e) {
  WireWriter w;
  w.u32(static_cast<uint32_t>(e.kind()) + 1).str(e.message());
  w.u32(static_cast<uint32_t>(e.ranks().size()));
  for (int r : e.ranks()) w.u32(static_cast<uint32_t>(r));
  return w.data();
}

void send_reply(int fd, const std::string& payload, Deadline deadline) {
  const std::string framed = WireWriter().str(payload).data();
  try {
    tcp::write_all(fd, framed.data(), framed.size(), deadline, "a joining rank");
  } catch (const Error&) {
    // that rank is gone; it will fail on its own
  }
}

struct Joined {
  std::vector<std::string> addresses;
  Fd fd;  // rank 0 answers on it
  std::string from;
  std::string reach;  // its address on the coordinator's network, "" for none
};

// What the coordinator tells every rank: per rank the addresses it listens on, and where the
// ranks that are not its ring neighbours reach it ("" = at those addresses too).
struct World {
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> reach;
};

// Rank 0: collect every JOIN, check the world, answer with the table or an error.
// `coordinator` = cfg.coordinator with the port rank 0 listens on (cfg's may be 0).
World coordinate(const Config& cfg, const std::string& coordinator, Acceptor& acc,
                 const std::vector<std::string>& own, const JobSettings& settings,
                 uint64_t world_id, Deadline deadline, std::vector<Accepted>& early) {
  const size_t n = static_cast<size_t>(cfg.size);
  std::vector<std::optional<Joined>> joined(n);
  // Rank 0 is reached on the coordinator's network at the coordinator, which every rank
  // reaches (each joiner puts its own coordinator address in its place).
  joined[0] = Joined{own, Fd(), "rank 0", cfg.listen_ring_neighbours_only ? coordinator : ""};
  size_t count = 1;
  auto fail_all = [&](const Error& e) {
    const std::string payload = encode_error(e);
    const Deadline d = Clock::now() + std::chrono::milliseconds(1000);
    for (auto& j : joined) {
      if (j && j->fd.valid()) send_reply(j->fd.get(), payload, d);
    }
    throw e;
  };
  // Turn a joiner away: tell it why, and every rank already joined. Then every rank that joins
  // later is told the same at once (a mixed-build job whose odd rank joined early must not
  // leave the later ones timing out on "is rank 0 running?"); rank 0 throws it once every rank
  // has been told, or at the deadline.
  std::optional<Error> refused;
  auto refuse = [&](const Fd& joiner, int rank, const std::string& msg) {
    refused = Error(ErrorKind::kWorld, msg, {rank});
    const std::string payload = encode_error(*refused);
    const Deadline d = Clock::now() + std::chrono::milliseconds(1000);
    send_reply(joiner.get(), payload, d);
    for (auto& j : joined) {
      if (j && j->fd.valid()) send_reply(j->fd.get(), payload, d);
      if (j) j->fd.reset();
    }
    if (rank >= 0 && rank < cfg.size && !joined[static_cast<size_t>(rank)]) {
      joined[static_cast<size_t>(rank)] = Joined{{}, Fd(), "", ""};
      ++count;
    }
  };
  while (count < n) {
    std::optional<Accepted> a = acc.next(deadline);
    if (!a && refused) throw *refused;  // every rank that joined was told
    if (!a) {
      std::vector<int> missing;
      for (size_t r = 0; r < n; ++r) {
        if (!joined[r]) missing.push_back(static_cast<int>(r));
      }
      fail_all(Error(ErrorKind::kTimeout,
                     describe_ranks(missing) + " never joined the coordinator within " +
                         std::to_string(cfg.timeout.count()) + " ms (are they running, with " +
                         "this coordinator's address " + coordinator + " and the same job " +
                         "token?)",
                     missing));
    }
    try {
      WireReader r(a->hello);
      const uint32_t kind = r.u32();
      if (kind == kConnect) {
        early.push_back(std::move(*a));
        continue;
      }
      if (kind != kJoin) continue;  // unknown: drop
      const int rank = static_cast<int>(r.u32());
      if (refused) {  // the job cannot form: tell this rank why
        send_reply(a->fd.get(), encode_error(*refused),
                   Clock::now() + std::chrono::milliseconds(1000));
        if (rank >= 0 && rank < cfg.size && !joined[static_cast<size_t>(rank)]) {
          joined[static_cast<size_t>(rank)] = Joined{{}, Fd(), "", ""};
          ++count;
        }
        continue;
      }
      const int size = static_cast<int>(r.u32());
      const uint32_t naddr = r.u32();
      std::vector<std::string> addrs;
      // An address on all of the joiner's addresses is reached where its join came from.
      const std::string joined_from = host_of(a->peer.to_string());
      for (uint32_t i = 0; i < naddr && i < 64; ++i) {
        addrs.push_back(with_host(tcp::resolve(r.str(), 0), joined_from));
      }
      const std::string from = a->peer.to_string();
      // Older joins end early (kWire): name the build rather than drop the join as malformed.
      uint32_t transport = 0, wire = 0;
      if (!r.at_end()) {
        transport = r.u32();
        wire = r.at_end() ? 1 : r.u32();
      }
      if (wire != kWire) {
        const std::string msg = "rank " + std::to_string(rank) + " (from " + from + ") runs " +
                                (wire < kWire ? "an older" : "a newer") +
                                " libclustercomm than rank 0 (wire protocol " +
                                std::to_string(wire) + ", rank 0's is " + std::to_string(kWire) +
                                "): run the same version on every rank";
        refuse(a->fd, rank, msg);
        continue;
      }
      // Same wire protocol, so the segment version follows (a join without it is malformed).
      const uint32_t segment = r.u32();
      if (segment != shm::kSegmentVersion) {
        // Whatever the transport: ranks of one host would not map one segment and would run
        // on TCP between them, a job half on another transport than asked for.
        const std::string msg =
            "rank " + std::to_string(rank) + " (from " + from + ") runs " +
            (segment < shm::kSegmentVersion ? "an older" : "a newer") +
            " libclustercomm than rank 0 (shared-memory segment version " +
            std::to_string(segment) + ", rank 0's is " + std::to_string(shm::kSegmentVersion) +
            "; both wire protocol " + std::to_string(kWire) +
            "): ranks of one host could not share memory; run the same version on every rank";
        refuse(a->fd, rank, msg);
        continue;
      }
      const std::string reach_adv = r.str();  // wire protocol 5 on
      const std::string reach =
          reach_adv.empty() ? "" : with_host(tcp::resolve(reach_adv, 0), joined_from);
      if (size == cfg.size && transport != static_cast<uint32_t>(cfg.transport)) {
        // Different choices fail later and obscurely (a shm rank and a tcp rank: "Connection
        // reset by peer"), or work by chance: say so now, on every rank.
        const std::string msg = "rank " + std::to_string(rank) + " (from " + from +
                                ") was started with CLUSTERCOMM_TRANSPORT=" +
                                transport_name(transport) + " but rank 0 with " +
                                transport_name(static_cast<uint32_t>(cfg.transport)) +
                                ": every rank must choose the same transport";
        refuse(a->fd, rank, msg);
        continue;
      }
      if (size != cfg.size) {
        const std::string msg = "rank " + std::to_string(rank) + " (from " + from +
                                ") was started with world size " + std::to_string(size) +
                                " but rank 0 with " + std::to_string(cfg.size) +
                                ": all ranks must agree on CLUSTERCOMM_SIZE";
        refuse(a->fd, rank, msg);
        continue;
      }
      if (rank < 0 || rank >= cfg.size || joined[static_cast<size_t>(rank)]) {
        const std::string msg =
            rank == 0 || (rank > 0 && rank < cfg.size)
                ? "rank " + std::to_string(rank) + " appears twice (again from " + from +
                      "): every rank must be started exactly once"
                : "a process at " + from + " claims rank " + std::to_string(rank) +
                      ", outside the world of size " + std::to_string(cfg.size);
        refuse(a->fd, rank, msg);
        continue;
      }
      joined[static_cast<size_t>(rank)] = Joined{addrs, std::move(a->fd), from, reach};
      ++count;
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kWorld) throw;
      // A malformed hello from a token holder: ignore that connection.
    }
  }
  if (refused) throw *refused;
  World world;
  std::vector<std::vector<std::string>>& table = world.table;
  table.resize(n);
  WireWriter w;
  w.u32(0).u64(world_id).u32(static_cast<uint32_t>(settings.connections_per_peer));
  w.u32(settings.topology == Topology::kRing ? 1 : 0);
  w.u64(settings.tuning.one_shot_max_bytes).u64(settings.tuning.chunk_bytes);
  w.u64(settings.tuning.window_chunks);
  for (size_t r = 0; r < n; ++r) {
    table[r] = joined[r]->addresses;
    w.u32(static_cast<uint32_t>(table[r].size()));
    for (const auto& s : table[r]) w.str(s);
  }
  w.u32(kWire);  // a joiner finds it missing in an older coordinator's reply
  for (size_t r = 0; r < n; ++r) {
    world.reach.push_back(joined[r]->reach);
    w.str(joined[r]->reach);
  }
  for (size_t r = 1; r < n; ++r) send_reply(joined[r]->fd.get(), w.data(), deadline);
  return world;
}

// What to change when a rank has no route to the coordinator. MLX_HOSTFILE gives none of its
// own: it is rank 0's first ring address, a cable's end that only rank 0's ring neighbour
// reaches when the ring runs over cables (MLX's ring backend itself has no coordinator: each
// rank connects only to its neighbours).
std::string unreachable_coordinator_advice(const Config& cfg, const std::string& from) {
  if (cfg.coordinator_from == "MLX_HOSTFILE") {
    return "it came from MLX_HOSTFILE (rank 0's first address there), which in a ring over "
           "cables only rank 0's ring neighbours reach: set CLUSTERCOMM_COORDINATOR on every "
           "rank to HOST:PORT of rank 0's host that all ranks reach (its management address; "
           "clusterctl launch sets it)";
  }
  return "it came from " + from + ": name one there that every rank's host has a route to";
}

// Other ranks: join and read the table (or the coordinator's error). `reach`: this rank's
// address on the coordinator's network, "" for none.
World join(const Config& cfg, const std::vector<std::string>& own, const std::string& reach,
           JobSettings& settings, uint64_t& world_id, Deadline deadline) {
  const std::string who = "the coordinator (rank 0) at " + cfg.coordinator;
  const Address coord = tcp::resolve(cfg.coordinator);
  Fd fd;
  try {
    fd = tcp::connect_to(coord, nullptr, deadline, "the coordinator (rank 0)");
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInterrupted) throw;
    const std::string from =
        cfg.coordinator_from.empty() ? std::string("Config::coordinator") : cfg.coordinator_from;
    if (e.kind() == ErrorKind::kSystem) {  // no route from this host, not within the grace
      throw Error(e.kind(),
                  "rank " + std::to_string(cfg.rank) + ": " + e.message() +
                      ": the coordinator must be an address every rank reaches; " +
                      unreachable_coordinator_advice(cfg, from),
                  {0});
    }
    throw Error(e.kind(),
                "rank " + std::to_string(cfg.rank) + ": " + e.message() +
                    ": is rank 0 running, and do all ranks name the same coordinator (" + from +
                    ")?",
                e.ranks());
  }
  WireWriter hello;
  hello.u32(kJoin).u32(static_cast<uint32_t>(cfg.rank)).u32(static_cast<uint32_t>(cfg.size));
  hello.u32(static_cast<uint32_t>(own.size()));
  for (const auto& a : own) hello.str(a);
  hello.u32(static_cast<uint32_t>(cfg.transport));  // rank 0 checks that every rank agrees
  hello.u32(kWire);
  hello.u32(shm::kSegmentVersion);  // and this (wire protocol 4 on)
  hello.str(reach);                 // and this (5 on)
  client_handshake(fd.get(), cfg.token, hello.data(), deadline, who);
  // Rank 0 reports missing ranks at its own deadline; give its answer a moment to arrive.
  const Deadline reply_deadline = deadline + std::chrono::milliseconds(500);
  char len_buf[4];
  try {
    tcp::read_exact(fd.get(), len_buf, 4, reply_deadline, who);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kTimeout) {
      throw Error(ErrorKind::kTimeout,
                  "the world did not form within " + std::to_string(cfg.timeout.count()) +
                      " ms: " + who + " did not answer (some ranks never joined)",
                  {0});
    }
    throw;
  }
  const uint32_t len = WireReader(std::string_view(len_buf, 4)).u32();
  if (len > kMaxReply) throw Error(ErrorKind::kProtocol, who + " sent an oversized reply");
  std::string payload(len, '\0');
  tcp::read_exact(fd.get(), payload.data(), len, reply_deadline, who);
  WireReader r(payload);
  const uint32_t status = r.u32();
  if (status != 0) {
    const auto kind = static_cast<ErrorKind>(status - 1);
    const std::string msg = r.str();
    std::vector<int> ranks(r.u32());
    for (int& x : ranks) x = static_cast<int>(r.u32());
    throw Error(kind, msg + " (reported by the coordinator)", ranks);
  }
  world_id = r.u64();
  settings.connections_per_peer = static_cast<int>(r.u32());
  settings.topology = r.u32() == 1 ? Topology::kRing : Topology::kMesh;
  settings.tuning.one_shot_max_bytes = r.u64();
  settings.tuning.chunk_bytes = r.u64();
  settings.tuning.window_chunks = r.u64();
  World world;
  std::vector<std::vector<std::string>>& table = world.table;
  table.resize(static_cast<size_t>(cfg.size));
  for (auto& row : table) {
    row.resize(r.u32());
    for (auto& s : row) s = r.str();
    if (row.empty()) throw Error(ErrorKind::kProtocol, who + " sent an empty address list");
  }
  // An older coordinator ignores the number in the join and sends none: say so here, before
  // this rank meets rank 0's other wire formats (as a kProtocol error, or a hang).
  const bool numbered = !r.at_end();
  const uint32_t wire = numbered ? r.u32() : 0;
  if (wire != kWire) {
    throw Error(ErrorKind::kWorld,
                who + " runs " + (wire < kWire ? "an older" : "a newer") +
                    " libclustercomm than rank " + std::to_string(cfg.rank) + " (" +
                    (numbered ? "wire protocol " + std::to_string(wire)
                              : std::string("its answer carries no wire protocol")) +
                    ", this rank's is " + std::to_string(kWire) +
                    "): run the same version on every rank",
                {0});
  }
  world.reach.resize(table.size());
  for (std::string& s : world.reach) s = r.str();
  // Rank 0 listening on all addresses (coordinator 0.0.0.0:P) is reached where we reached it,
  // and on the coordinator's network at the coordinator.
  for (auto& s : table[0]) s = with_host(tcp::resolve(s), host_of(cfg.coordinator));
  if (!world.reach[0].empty()) world.reach[0] = cfg.coordinator;
  return world;
}

}  // namespace

std::vector<std::vector<tcp::Fd>> bootstrap_connections(const Config& cfg, JobSettings& settings) {
  const Deadline deadline = Clock::now() + cfg.timeout;
  const tcp::InterruptScope interruptible(cfg.interrupted);  // Ctrl-C while joining
  const size_t n = static_cast<size_t>(cfg.size);
  if (cfg.coordinator.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "a world of size > 1 needs a coordinator address");
  }
  if (!cfg.routes.empty() && cfg.routes.size() != n) {
    throw Error(ErrorKind::kInvalidArgument, "routes must be empty or have one entry per rank");
  }
  settings.topology = cfg.topology;
  // Rank 0's choice goes to every rank with its settings: all chunk alike.
  settings.tuning = resolved_tuning(cfg.tuning, cfg.transport);
  settings.connections_per_peer = std::max(1, cfg.connections_per_peer);

  check_tokenless(cfg);

  // Listeners. By default every rank accepts its peers on all addresses (the per-cable routes
  // reach it there), or on loopback when the coordinator is loopback (the whole world is on
  // this host). Rank 0 listens on the coordinator address itself as well (on all addresses
  // only when told 0.0.0.0 or ::), after its peer listener: peers reach rank 0 on the first.
  const Address coord = tcp::resolve(cfg.coordinator);
  // Port 0: rank 0 listens on a port the kernel picks and reports it (on_coordinator_listening);
  // the other ranks must be given that port.
  const bool any_port = coord.port() == 0;
  if (any_port && cfg.rank != 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "rank " + std::to_string(cfg.rank) + ": the coordinator address " +
                    cfg.coordinator +
                    " has port 0: only rank 0 may be given port 0 (it then listens on a port the "
                    "kernel picks and reports it through Config::on_coordinator_listening); give "
                    "this rank the port rank 0 reported");
  }
  if (any_port && !cfg.on_coordinator_listening) {
    throw Error(ErrorKind::kInvalidArgument,
                "rank 0: the coordinator address " + cfg.coordinator +
                    " has port 0, but nothing would learn the port the kernel picks "
                    "(Config::on_coordinator_listening is empty), so no rank could join: give "
                    "CLUSTERCOMM_COORDINATOR a free port");
  }
  std::vector<std::string> listen = cfg.listen;
  if (listen.empty()) {
    const bool v6 = coord.storage.ss_family == AF_INET6;
    listen.emplace_back(!coord.is_loopback() ? (v6 ? "[::]:0" : "0.0.0.0:0")
                                             : (v6 ? "[::1]:0" : "127.0.0.1:0"));
  }
  size_t coord_listener = listen.size();  // rank 0: which of `listen` is the coordinator's
  if (cfg.rank == 0) {
    // A coordinator given by name: what the name means on rank 0's own host (Debian maps its
    // host name to 127.0.1.1) is not where the others reach it, so rank 0 listens on every
    // address of the name's family at that port (peers without the token are refused).
    const bool named = !is_numeric_host(host_of(cfg.coordinator));
    // A listen address serves as the coordinator's when it is that address (or all addresses)
    // at its port: a ring address at the same port (MLX_HOSTFILE's rank 0 with the
    // coordinator at the host's management address) is another listener.
    for (size_t i = 0; i < listen.size() && !any_port && coord_listener == listen.size(); ++i) {
      const Address l = tcp::resolve(listen[i], 0);
      if (l.port() == coord.port() && (named || l.is_any() || coord.is_any() ||
                                     l.to_string() == coord.to_string())) {
        coord_listener = i;
      }
    }
    const bool has = coord_listener < listen.size();
    const bool v6 = coord.storage.ss_family == AF_INET6;
    if (!has) {
      listen.push_back(named ? (v6 ? "[::]:" : "0.0.0.0:") + std::to_string(coord.port())
                             : coord.to_string());
    }
  }
  // Listen addresses that only the ring neighbours reach (an MLX ring hostfile's cable ends):
  // the other ranks reach this one on the coordinator's network, on every address of its
  // family (loopback when the world is on this host) at a port the kernel picks; rank 0
  // advertises that address with the host its join came from. Rank 0 is reached there at the
  // coordinator. With 3 ranks or fewer every pair is a pair of neighbours.
  size_t reach_listener = listen.size();  // none
  if (cfg.listen_ring_neighbours_only && cfg.rank != 0 && cfg.size > 3) {
    const bool v6 = coord.storage.ss_family == AF_INET6;
    reach_listener = listen.size();
    listen.emplace_back(!coord.is_loopback() ? (v6 ? "[::]:0" : "0.0.0.0:0")
                                             : (v6 ? "[::1]:0" : "127.0.0.1:0"));
  }
  std::vector<Fd> listeners;
  for (size_t i = 0; i < listen.size(); ++i) {
    const Address a = tcp::resolve(listen[i], 0);
    try {
      listeners.push_back(tcp::listen_on(a));
    } catch (const Error& e) {
      const bool is_coord = cfg.rank == 0 && i == coord_listener;
      throw Error(e.kind(),
                  "rank " + std::to_string(cfg.rank) + ": " + e.message() +
                      (is_coord ? ": " + coordinator_advice(cfg)
                                : ": CLUSTERCOMM_LISTEN must name addresses of this host"));
    }
  }
  Acceptor acc(std::move(listeners), cfg.token,
               std::min(cfg.timeout, std::chrono::milliseconds(10000)));
  std::vector<std::string> own;
  std::string reach;
  for (size_t i = 0; i < acc.addresses().size(); ++i) {
    const Address& a = acc.addresses()[i];
    if (i == reach_listener) {
      reach = a.to_string();
    } else {
      own.push_back(cfg.rank == 0 ? with_host(a, host_of(cfg.coordinator)) : a.to_string());
    }
  }
  std::string coordinator = cfg.coordinator;
  if (cfg.rank == 0) {
    const int port = acc.addresses()[coord_listener].port();
    if (any_port) coordinator = join_host_port(host_of(cfg.coordinator), port);
    if (cfg.on_coordinator_listening) cfg.on_coordinator_listening(port);
  }

  // World formation.
  uint64_t world_id = 0;
  std::vector<Accepted> early;
  World world;
  if (cfg.rank == 0) {
    std::random_device rd;
    world_id = (uint64_t{rd()} << 32) | rd();
    world = coordinate(cfg, coordinator, acc, own, settings, world_id, deadline, early);
  } else {
    world = join(cfg, own, reach, settings, world_id, deadline);
  }
  const std::vector<std::vector<std::string>>& table = world.table;

  // Mesh: outgoing connections first (the peers' acceptor threads answer them), then incoming.
  // Data connections, plus one control connection per pair (tcp_transport.h).
  const size_t k_conns = static_cast<size_t>(settings.connections_per_peer) + 1;
  std::vector<std::vector<Fd>> conns(n);
  for (size_t j = 0; j < n; ++j) {
    if (static_cast<int>(j) == cfg.rank || !connects_to(cfg.rank, static_cast<int>(j))) continue;
    // Not a ring neighbour, and its listen addresses reach only those: the coordinator's
    // network.
    const bool over_reach =
        !world.reach[j].empty() && !ring_neighbours(cfg.rank, static_cast<int>(j), cfg.size);
    for (size_t k = 0; k < k_conns; ++k) {
      std::string remote = over_reach ? world.reach[j] : table[j][k % table[j].size()];
      std::optional<Address> local;
      if (!cfg.routes.empty()) {
        const PeerRoute& route = cfg.routes[j];
        if (!route.remote.empty()) {
          remote = route.remote;
          std::string h;
          int p = 0;
          tcp::split_host_port(remote, h, p, 0);
          if (p == 0)
            remote = route.remote + ":" + std::to_string(tcp::resolve(table[j][0]).port());
        }
        if (!route.local.empty()) local = tcp::resolve(route.local, 0);
      }
      const std::string who = "rank " + std::to_string(j) + " at " + remote;
      // A route of CLUSTERCOMM_PEER_ADDRS: the peer's end of the cable between the two hosts,
      // which the connect error's advice names before any firewall.
      const bool routed = !cfg.routes.empty() && !cfg.routes[j].remote.empty();
      Fd fd;
      try {
        fd = tcp::connect_to(tcp::resolve(remote), local ? &*local : nullptr, deadline,
                             "rank " + std::to_string(j),  // it adds " at <address>"
                             routed);
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::kInterrupted) throw;
        throw Error(e.kind(),
                    "rank " + std::to_string(cfg.rank) + ": " + e.message() +
                        (routed ? " (it is rank " + std::to_string(j) +
                                      "'s address on the cable between them: "
                                      "CLUSTERCOMM_PEER_ADDRS)"
                         : over_reach
                             ? ": rank " + std::to_string(j) +
                                   " is not a ring neighbour of this rank, so this is its "
                                   "address on the coordinator's network (where rank 0 saw it "
                                   "join from); is it reachable from here?"
                             : ": rank " + std::to_string(j) +
                                   " advertised that address; is it reachable from here?"),
                    {static_cast<int>(j)});
      }
      WireWriter hello;
      hello.u32(kConnect).u64(world_id).u32(static_cast<uint32_t>(cfg.rank));
      hello.u32(static_cast<uint32_t>(k));
      client_handshake(fd.get(), cfg.token, hello.data(), deadline, who);
      conns[j].push_back(std::move(fd));
    }
  }
  std::vector<std::vector<Fd>> incoming(n);
  size_t expected = 0;
  for (size_t j = 0; j < n; ++j) {
    if (static_cast<int>(j) != cfg.rank && connects_to(static_cast<int>(j), cfg.rank)) {
      expected += k_conns;
      incoming[j].resize(k_conns);
    }
  }
  size_t got = 0;
  while (got < expected) {
    std::optional<Accepted> a;
    if (!early.empty()) {
      a = std::move(early.back());
      early.pop_back();
    } else {
      a = acc.next(deadline + kConnectorFirst);
    }
    if (!a) {
      std::vector<int> missing;
      for (size_t j = 0; j < n; ++j) {
        for (const Fd& f : incoming[j]) {
          if (!f.valid()) {
            missing.push_back(static_cast<int>(j));
            break;
          }
        }
      }
      throw Error(ErrorKind::kTimeout,
                  describe_ranks(missing) + " never connected to rank " + std::to_string(cfg.rank) +
                      " within " + std::to_string(cfg.timeout.count()) + " ms (a rank that "
                      "could not reach this one says where it tried and why)",
                  missing);
    }
    try {
      WireReader r(a->hello);
      if (r.u32() != kConnect || r.u64() != world_id) continue;  // another job: drop
      const uint32_t from = r.u32();
      const uint32_t k = r.u32();
      if (from >= n || k >= k_conns || incoming[from].size() != k_conns ||
          incoming[from][k].valid()) {
        continue;
      }
      incoming[from][k] = std::move(a->fd);
      ++got;
    } catch (const Error&) {
      // malformed: drop
    }
  }
  for (size_t j = 0; j < n; ++j) {
    for (Fd& f : incoming[j]) conns[j].push_back(std::move(f));
  }
  return conns;
}

std::unique_ptr<Transport> make_tcp_transport(const Config& cfg,
                                              std::vector<std::vector<tcp::Fd>> conns) {
  tcp::TcpOptions opts;
  opts.spin = cfg.tuning.spin;
  opts.close_timeout = cfg.timeout;
  return std::make_unique<tcp::TcpTransport>(cfg.rank, cfg.size, std::move(conns), opts);
}

std::unique_ptr<Transport> bootstrap_tcp(const Config& cfg, JobSettings& settings) {
  return make_tcp_transport(cfg, bootstrap_connections(cfg, settings));
}

}  // namespace cc::comm
