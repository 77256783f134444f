#include "cli/context.h"

#include <cstdio>

#include <fmt/format.h>

namespace cc::cli {

util::ExitCode report_error(const Context& ctx, std::string_view command, const util::Error& e) {
  fmt::print(stderr, "clusterctl {}: {}\n", command, util::red(ctx.style, e.message));
  return e.code;
}

}  // namespace cc::cli
