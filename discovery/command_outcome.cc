#include "discovery/command_outcome.h"

namespace cc::discovery {

CommandOutcome classify_command(int exit_status, std::string_view err) {
  if (exit_status == 0) return CommandOutcome::kRan;
  if (exit_status == 127 || err.find("command not found") != std::string_view::npos ||
      err.find("No such file or directory") != std::string_view::npos) {
    return CommandOutcome::kMissing;
  }
  return CommandOutcome::kFailed;
}

}  // namespace cc::discovery
