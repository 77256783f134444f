#include "cli/context.h"

#include <cstdio>

#include <fmt/format.h>

#include "util/interrupt.h"

namespace cc::cli {

util::ExitCode report_error(const Context& ctx, std::string_view command, const util::Error& e) {
  fmt::print(stderr, "clusterctl {}: {}\n", command, util::red(ctx.style, e.message));
  return e.code;
}

util::ExitCode report_interrupted(std::string_view command, std::string_view what) {
  const util::Error e = util::interrupted_error(what.empty() ? "" : fmt::format("; {}", what));
  fmt::print(stderr, "clusterctl {}: {}\n", command, e.message);
  return e.code;
}

}  // namespace cc::cli
