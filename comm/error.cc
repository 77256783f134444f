#include "comm/error.h"

#include <cstring>
#include <utility>

namespace cc::comm {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return "invalid argument";
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kPeerLost:
      return "peer lost";
    case ErrorKind::kProtocol:
      return "protocol error";
    case ErrorKind::kAuth:
      return "authentication failed";
    case ErrorKind::kWorld:
      return "world formation failed";
    case ErrorKind::kSystem:
      return "system error";
    case ErrorKind::kBroken:
      return "communicator broken";
    case ErrorKind::kInterrupted:
      return "interrupted";
  }
  return "error";
}

Error::Error(ErrorKind kind, const std::string& message, std::vector<int> ranks)
    : std::runtime_error("clustercomm: " + message),
      kind_(kind),
      message_(message),
      ranks_(std::move(ranks)) {}

std::string describe_ranks(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(ranks[i]);
  }
  return s;
}

void throw_system(const std::string& what, int err) {
  throw Error(ErrorKind::kSystem, what + ": " + std::strerror(err));
}

}  // namespace cc::comm
