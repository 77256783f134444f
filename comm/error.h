// Errors of libclustercomm. Every failure of a call is thrown as cc::comm::Error; nothing is
// logged. The message is written for the operator and names the rank(s) involved; ranks()
// lists them for programs. After any error other than kInvalidArgument the communicator is
// broken: every later call throws kBroken at once (see README.md, "Error model").
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "comm/export.h"

namespace cc::comm {

enum class ErrorKind {
  kInvalidArgument,  // bad count, rank, type or config; the communicator stays usable
  kTimeout,          // a call (or start-up) did not finish within the timeout
  kPeerLost,         // a peer closed its connections or died; ranks() names it
  kProtocol,         // a peer sent something unexpected (ranks called different collectives)
  kAuth,             // the job token did not match (a stray or hostile connection)
  kWorld,            // world formation failed: size disagreement, duplicate rank
  kSystem,           // an OS call failed (bind, socket, ...): message carries strerror
  kBroken,           // an earlier call failed; the communicator cannot be used any more
  kInterrupted,      // Config::interrupted said to give up (Ctrl-C in Python); breaks it too
};

CLUSTERCOMM_API const char* to_string(ErrorKind kind);

class CLUSTERCOMM_API Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message, std::vector<int> ranks = {});
  ErrorKind kind() const { return kind_; }
  /// The rank(s) this rank was waiting for, or that misbehaved; may be empty.
  const std::vector<int>& ranks() const { return ranks_; }
  /// what() without the "clustercomm: " prefix, for wrapping with more context.
  const std::string& message() const { return message_; }

 private:
  ErrorKind kind_;
  std::string message_;
  std::vector<int> ranks_;
};

/// "rank 3" or "ranks 1, 2"; for messages.
CLUSTERCOMM_API std::string describe_ranks(const std::vector<int>& ranks);

/// Throws kSystem with `what` and strerror(err).
[[noreturn]] CLUSTERCOMM_API void throw_system(const std::string& what, int err);

}  // namespace cc::comm
