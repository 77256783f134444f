#include "remote/executor.h"

#include <fmt/format.h>

#include "remote/quote.h"
#include "util/exit_code.h"

namespace cc::remote {

using util::ExitCode;

util::Status validate_command(const Command& cmd) {
  if (cmd.argv.empty()) return util::error(ExitCode::kUsage, "empty command: nothing to run");
  if (cmd.shell && cmd.argv.size() != 1) {
    return util::error(
        ExitCode::kUsage,
        fmt::format("a shell command takes exactly one script, got {} arguments", cmd.argv.size()));
  }
  for (std::size_t i = 0; i < cmd.argv.size(); ++i) {
    if (cmd.argv[i].find('\0') != std::string::npos) {
      return util::error(ExitCode::kUsage,
                         fmt::format("argument {} of `{}` contains a NUL byte, which no program "
                                     "can receive",
                                     i, shell_quote({cmd.argv[0]})));
    }
  }
  return {};
}

}  // namespace cc::remote
