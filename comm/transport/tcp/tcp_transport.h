// The TCP transport: a full mesh of connections (each pair of ranks direct, optionally
// several connections per pair), non-blocking sockets, progress on the caller's thread.
//
// Wire format, per data connection: a stream of messages, each a 16-byte header
// {magic | signature << 8 | type, aux, payload bytes} and the payload (DATA: aux = the
// communicator context, Transport::set_context, and the signature of the call,
// Transport::set_signature, both checked against the receive's). Each pair also has one control
// connection that carries only headers, so it is always at a message boundary: ABORT
// (aux = the rank that failed) when a rank gives up, BYE on a clean close. When a data
// connection dies, the control connection tells "rank 0 gave up because of rank 2"
// (peer_gave_up, transport.h) apart from "rank 0 died". A message
// of at least `stripe_min_bytes` is split across the pair's connections in equal parts; both
// ends derive the split from the byte count, so parts need no sequence numbers.
// Receives land directly in the caller's buffer (no intermediate copy). Socket buffers are
// left to the kernel's autotuning.
// Syscalls per small message: one sendmsg (header + payload) and one readv (header + payload):
// a data connection is read only while a receive is posted on it, never ahead. The busy loop
// reads data connections only; control connections are read after poll() woke up (it always
// watches them) and when a data connection hits EOF - a peer that aborts closes those too.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <deque>
#include <limits>
#include <vector>

#include "comm/error.h"
#include "comm/transport/tcp/socket.h"
#include "comm/transport/transport.h"

namespace cc::comm::tcp {

struct TcpOptions {
  /// Busy-poll this long without progress before blocking in poll() (a sleep and wake-up
  /// costs ~36 us on the VMs; Gloo's latency gap is sleeping: docs/platform.md#open-mpi-and-gloo).
  std::chrono::microseconds spin{100};
  /// ...but only while waiting for a message this small (no limit by default). A cap of
  /// 64 KiB was tried on the grounds that spinning would steal the core the peer needs, but
  /// the spin yields on every turn, and the sleep cost more: n = 2 all_reduce over loopback on
  /// 2 cores, 144 KiB-384 KiB (shards of 72-192 KiB) took 95-128 us capped against 36-80 us
  /// uncapped, and n = 4 and 8 MiB were no slower uncapped (bench/compare-tcp in comm/README).
  size_t spin_max_bytes = std::numeric_limits<size_t>::max();
  /// Messages at least this long are striped over all connections of a pair.
  size_t stripe_min_bytes = size_t{1} << 20;
  /// How long the destructor waits for peers to close their side (no data lost in flight).
  std::chrono::milliseconds close_timeout{30000};
};

class TcpTransport final : public Transport {
 public:
  /// conns[p] = the established, authenticated connections to peer p (empty for p == rank;
  /// for every other p at least two: the data connections, then the control connection).
  TcpTransport(int rank, int size, std::vector<std::vector<Fd>> conns, TcpOptions options);
  ~TcpTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void isend(int peer, const void* data, size_t bytes, Request& req) override;
  void irecv(int peer, void* data, size_t bytes, Request& req) override;
  void wait(Request& req, Deadline deadline) override;
  void poll() override;
  void abort(int failed_rank) noexcept override;
  /// True when both ends of every peer's first data connection are one address (or a local
  /// socket) and the world has more ranks than this host has online CPUs.
  bool crowded() const override { return crowded_; }

  struct Header {
    uint32_t magic_type;
    int32_t aux;
    uint64_t bytes;
  };
  static_assert(sizeof(Header) == 16);

 private:
  struct SendPart {
    const char* data;
    size_t bytes;
    Request* req;
    Header hdr;
    size_t sent;  // header + payload bytes written so far
  };
  struct RecvPart {
    char* data;
    size_t bytes;
    Request* req;
    size_t got;
    uint32_t context;  // the communicator the message must belong to (Transport::context())
    Signature signature;  // the call it must belong to (Transport::signature())
  };
  struct Conn {
    Fd fd;
    int peer = -1;
    std::deque<SendPart> sendq;
    std::deque<RecvPart> recvq;
    Header hdr{};
    size_t hdr_got = 0;  // 16 = header of the next message read, payload pending
    bool closed = false;
    bool control = false;
  };

  bool progress_all(bool with_control);  // control connections too?
  bool progress_send(Conn& c);
  bool progress_recv(Conn& c);
  void on_header(Conn& c);
  void check_size(Conn& c, const RecvPart& part);
  void on_eof(Conn& c);
  bool read_stopped(Conn& c, ssize_t r);  // after a read returned r <= 0: stop reading?
  void block_in_poll(Deadline deadline);
  [[noreturn]] void peer_lost(int peer, const std::string& how);
  void read_control(int peer);
  [[noreturn]] void fail(Error e);
  template <class Part>
  void split(int peer, size_t bytes, Request& req, Part make);

  int rank_;
  int size_;
  TcpOptions options_;
  std::vector<Conn> conns_;
  std::vector<std::vector<size_t>> by_peer_;  // peer -> indices of its data connections
  std::vector<size_t> control_;               // peer -> index of its control connection
  std::vector<bool> bye_;                     // peer closed its communicator cleanly
  std::vector<pollfd> pfds_;
  bool aborted_ = false;
  bool crowded_ = false;
};

}  // namespace cc::comm::tcp
