// How a probe command ended, decided before its output is parsed. A command missing on the
// host (an older macOS without rdma_ctl or the RDMA tools; a Linux host without iproute2's
// `rdma`) is a fact about the host, not a parse error: the probe records it (for example
// RdmaState::kUnsupported) and moves on. Also the helpers every assembler (macos_facts,
// linux_facts) uses to parse the output of a command that must have run.
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"

namespace cc::discovery {

/// What one command left behind.
struct RawOutput {
  std::string out;
  std::string err;
  int exit_status = 0;  // 127 = command not found; -1 = timed out
};

enum class CommandOutcome {
  kRan,      // exit status 0: parse stdout
  kMissing,  // exit 127, or the shell said "command not found" / "No such file or directory"
  kFailed,   // any other non-zero exit (or a timeout, exit -1): report stderr
};

CommandOutcome classify_command(int exit_status, std::string_view err);

/// `e` with its message prefixed "HOST: ".
util::Error for_host(std::string_view host, const util::Error& e);

/// The parse_error for a required command that did not run (missing, or failed with its exit
/// status and stderr); an ok Status when it ran.
util::Status check_ran(std::string_view command, const RawOutput& r);

/// Parses the output of a command that must have run; errors name the host and the command.
template <class Parser>
auto parse_required(std::string_view host, std::string_view command, const RawOutput& raw,
                    Parser parser) -> decltype(parser(raw.out)) {
  if (auto ran = check_ran(command, raw); !ran) return for_host(host, ran.error());
  auto r = parser(raw.out);
  if (!r) return for_host(host, r.error());
  return r;
}

}  // namespace cc::discovery
