// Mutual proof of the job token on every bootstrap and data connection, without sending it:
//   server -> client: "CCM1" + nonce_s (32 random bytes)
//   client -> server: nonce_c + HMAC(token, "client" nonce_s nonce_c hello) + u32 len + hello
//   server -> client: HMAC(token, "server" nonce_c nonce_s)           (only if the MAC matched)
// MACs are compared in constant time. A wrong token, a malformed or oversized hello, or
// silence past the handshake timeout gets the connection closed and nothing else: a stray or
// hostile connection can neither join nor disturb the job. The token is never logged.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "comm/transport/tcp/socket.h"

namespace cc::comm {

inline constexpr size_t kMaxHelloBytes = 64 * 1024;

/// Client side on a connected socket. Throws kAuth when the server refuses (wrong token on
/// one side) or cannot prove the token; kTimeout/kPeerLost from the socket.
void client_handshake(int fd, std::string_view token, std::string_view hello, Deadline deadline,
                      const std::string& who);

/// Server side as a non-blocking state machine (driven by the Acceptor's poll loop).
class ServerHandshake {
 public:
  enum class State { kPending, kDone, kFailed };
  /// Sends the challenge at once (36 bytes always fit a fresh socket buffer).
  ServerHandshake(tcp::Fd fd, std::string token, Deadline deadline);
  /// Reads what is available; returns kDone once the client proved the token.
  State step();
  int fd() const { return fd_.get(); }
  Deadline deadline() const { return deadline_; }
  tcp::Fd take_fd() { return std::move(fd_); }
  const std::string& hello() const { return hello_; }

 private:
  tcp::Fd fd_;
  std::string token_;
  Deadline deadline_;
  std::string nonce_s_;
  std::string in_;  // bytes read so far
  std::string hello_;
  State state_ = State::kPending;
};

/// 32 random bytes (one std::random_device for the process, so no descriptor per call).
std::string random_nonce();

}  // namespace cc::comm
