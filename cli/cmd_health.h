// `clusterctl health` as other commands use it (launch's `preflight: [health]`).
#pragma once

#include <string_view>

#include "cli/cluster_source.h"
#include "cli/context.h"
#include "util/result.h"

namespace cc::cli {

/// Runs `clusterctl health SOURCE` (`--quick` with `quick`) and prints its report, exactly as
/// the subcommand does. Returns its exit code: kOk when no check FAILs (warnings allowed),
/// kCheckFailed when one does, kUnreachable for a host that cannot be reached, kUsage for a
/// bad source or a host whose destination is refused before any connection. Its messages name `command`, the command that was run ("launch": `clusterctl
/// launch: ...`), as report_error does.
util::ExitCode run_health_check(const Context& ctx, const ClusterSource& source, bool quick,
                                std::string_view command);

}  // namespace cc::cli
