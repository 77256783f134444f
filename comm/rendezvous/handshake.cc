#include "comm/rendezvous/handshake.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <string_view>

#include "comm/error.h"
#include "comm/rendezvous/wire.h"
#include "comm/sha256.h"

namespace cc::comm {
namespace {

constexpr std::string_view kMagic = "CCM1";
constexpr size_t kNonce = 32;
constexpr size_t kMac = 32;

std::string as_string(const Digest& d) {
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

Digest as_digest(std::string_view s) {
  Digest d{};
  std::memcpy(d.data(), s.data(), d.size());
  return d;
}

Digest client_mac(std::string_view token, std::string_view ns, std::string_view nc,
                  std::string_view hello) {
  std::string m = "clustercomm client";
  m.append(ns).append(nc).append(hello);
  return hmac_sha256(token, m);
}

Digest server_mac(std::string_view token, std::string_view nc, std::string_view ns) {
  std::string m = "clustercomm server";
  m.append(nc).append(ns);
  return hmac_sha256(token, m);
}

}  // namespace

std::string random_nonce() {
  // One device for the process, opened at the first handshake: where it reads /dev/urandom,
  // a rank at its descriptor limit (a flood of connections) still makes nonces.
  static std::mutex mu;
  static std::random_device rd;
  std::lock_guard lock(mu);
  std::string s(kNonce, '\0');
  for (size_t i = 0; i < kNonce; i += 4) {
    const unsigned v = rd();
    for (size_t k = 0; k < 4; ++k) s[i + k] = static_cast<char>((v >> (8 * k)) & 0xffu);
  }
  return s;
}

void client_handshake(int fd, std::string_view token, std::string_view hello, Deadline deadline,
                      const std::string& who) {
  char challenge[kMagic.size() + kNonce];
  // A clustercomm endpoint greets a connection as it accepts it: a listener that accepts and
  // stays silent, or greets otherwise, is another program on the port (torchrun's and
  // mlx.launch's users meet a stale job or a server there: pytorch#126510).
  const std::string foreign =
      ": another program may hold that port (a stale job, a server: on that host `ss -ltnp` on "
      "Linux or `lsof -nP -iTCP -sTCP:LISTEN` on macOS names it; end it or choose another "
      "port), or the endpoint is stuck; look at its rank's own error first";
  try {
    tcp::read_exact(fd, challenge, sizeof(challenge), deadline, who);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kPeerLost) {
      throw Error(ErrorKind::kAuth, who + " closed the connection before the handshake");
    }
    if (e.kind() == ErrorKind::kTimeout) {
      throw Error(ErrorKind::kTimeout,
                  who +
                      " accepted the connection but never sent clustercomm's greeting before "
                      "the timeout" +
                      foreign,
                  e.ranks());
    }
    throw;
  }
  if (std::string_view(challenge, kMagic.size()) != kMagic) {
    std::string shown;  // what it sent instead, printable ("HTTP/1.0 400 Bad")
    for (char c : std::string_view(challenge, 16)) {
      shown += c >= 0x20 && c < 0x7f ? c : '.';
    }
    throw Error(ErrorKind::kAuth,
                who + " is not a clustercomm endpoint (it sent \"" + shown + "...\")" + foreign);
  }
  const std::string ns(challenge + kMagic.size(), kNonce);
  const std::string nc = random_nonce();
  std::string msg = nc + as_string(client_mac(token, ns, nc, hello));
  msg += WireWriter().str(hello).data();
  tcp::write_all(fd, msg.data(), msg.size(), deadline, who);
  char proof[kMac];
  try {
    tcp::read_exact(fd, proof, sizeof(proof), deadline, who);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kPeerLost) {
      // A clustercomm endpoint that does not know this job's token: most often another
      // job's, on the port this job's rank 0 could not listen on (two launches of one job).
      const bool coordinator = who.rfind("the coordinator", 0) == 0;
      throw Error(ErrorKind::kAuth,
                  who + " refused this rank: another job's " +
                      (coordinator ? "coordinator" : "endpoint") +
                      " is on that port (e.g. a second launch of the same job, whose rank 0 "
                      "then could not listen there: look at rank 0's own error first), or the "
                      "job tokens differ (check that every rank has the same CLUSTERCOMM_TOKEN), "
                      "or the hello was rejected");
    }
    throw;
  }
  if (!equal_constant_time(as_digest(std::string_view(proof, kMac)), server_mac(token, nc, ns))) {
    throw Error(ErrorKind::kAuth, who + " could not prove the job token");
  }
}

ServerHandshake::ServerHandshake(tcp::Fd fd, std::string token, Deadline deadline)
    : fd_(std::move(fd)), token_(std::move(token)), deadline_(deadline), nonce_s_(random_nonce()) {
  const std::string challenge = std::string(kMagic) + nonce_s_;
  const ssize_t n = ::send(fd_.get(), challenge.data(), challenge.size(), tcp::send_flags());
  if (n != static_cast<ssize_t>(challenge.size())) state_ = State::kFailed;
}

ServerHandshake::State ServerHandshake::step() {
  if (state_ != State::kPending) return state_;
  char buf[4096];
  while (true) {
    const ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      if (in_.size() > kNonce + kMac + 4 + kMaxHelloBytes) return state_ = State::kFailed;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return state_ = State::kFailed;  // closed or failed before finishing
  }
  constexpr size_t kFixed = kNonce + kMac + 4;
  if (in_.size() < kFixed) return state_;
  uint32_t len = 0;
  for (size_t i = 0; i < 4; ++i) {
    len |= static_cast<uint32_t>(static_cast<unsigned char>(in_[kNonce + kMac + i])) << (8 * i);
  }
  if (len > kMaxHelloBytes) return state_ = State::kFailed;
  if (in_.size() < kFixed + len) return state_;
  if (in_.size() > kFixed + len) return state_ = State::kFailed;  // must wait for our answer
  const std::string_view nc(in_.data(), kNonce);
  const std::string_view mac(in_.data() + kNonce, kMac);
  const std::string_view hello(in_.data() + kFixed, len);
  if (!equal_constant_time(as_digest(mac), client_mac(token_, nonce_s_, nc, hello))) {
    return state_ = State::kFailed;
  }
  const std::string proof = as_string(server_mac(token_, nc, nonce_s_));
  try {
    tcp::write_all(fd_.get(), proof.data(), proof.size(), deadline_, "a joining peer");
  } catch (const Error&) {
    return state_ = State::kFailed;
  }
  hello_ = std::string(hello);
  return state_ = State::kDone;
}

}  // namespace cc::comm
