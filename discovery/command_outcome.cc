#include "discovery/command_outcome.h"

#include <fmt/format.h>

#include "discovery/text.h"

namespace cc::discovery {

CommandOutcome classify_command(int exit_status, std::string_view err) {
  if (exit_status == 0) return CommandOutcome::kRan;
  if (exit_status == 127 || err.find("command not found") != std::string_view::npos ||
      err.find("No such file or directory") != std::string_view::npos) {
    return CommandOutcome::kMissing;
  }
  return CommandOutcome::kFailed;
}

util::Error for_host(std::string_view host, const util::Error& e) {
  return util::Error{e.code, fmt::format("{}: {}", host, e.message)};
}

util::Status check_ran(std::string_view command, const RawOutput& r) {
  switch (classify_command(r.exit_status, r.err)) {
    case CommandOutcome::kRan:
      return {};
    case CommandOutcome::kMissing:
      return parse_error(command, "command not found on this host");
    case CommandOutcome::kFailed:
      break;
  }
  if (r.exit_status == -1) return parse_error(command, "timed out");
  return parse_error(command,
                     fmt::format("exit status {}: {}", r.exit_status, excerpt(trim(r.err), 200)));
}

}  // namespace cc::discovery
