// How a probe command ended, decided before its output is parsed. A command missing on the
// host (an older macOS without rdma_ctl or the RDMA tools; a Linux host without iproute2's
// `rdma`) is a fact about the host, not a parse error: the probe records it (for example
// RdmaState::kUnsupported) and moves on.
#pragma once

#include <string_view>

namespace cc::discovery {

enum class CommandOutcome {
  kRan,      // exit status 0: parse stdout
  kMissing,  // exit 127, or the shell said "command not found" / "No such file or directory"
  kFailed,   // any other non-zero exit (or a timeout, exit -1): report stderr
};

CommandOutcome classify_command(int exit_status, std::string_view err);

}  // namespace cc::discovery
