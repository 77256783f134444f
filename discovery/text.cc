#include "discovery/text.h"

#include <fmt/format.h>

namespace cc::discovery {

util::Error parse_error(std::string_view command, std::string_view what) {
  return util::error(util::ExitCode::kCheckFailed, fmt::format("`{}` output: {}", command, what));
}

}  // namespace cc::discovery
