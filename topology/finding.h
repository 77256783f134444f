// One result of a mesh check (topology/checks.h): which check, how bad, which hosts and ports,
// what is wrong and what to do. The check ids are stable kebab-case strings that scripts may
// match on (they appear in `verify-mesh --json`, topology/report.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "discovery/cluster_state.h"

namespace cc::topology {

enum class Severity {
  kFail,  // the mesh is not usable as it is: exit status 1 (topology/report.h)
  kWarn,  // works, but something is off or will degrade
  kInfo,  // worth knowing, nothing to fix
};

/// "fail", "warn", "info".
const char* to_string(Severity s);

struct Finding {
  std::string check;  // stable id: "missing-cable", "rdma-disabled", ... (checks.h lists them)
  Severity severity = Severity::kInfo;
  std::vector<std::string> hosts;          // the hosts involved, cluster order
  std::vector<discovery::CableEnd> ports;  // the ports involved (may be empty)
  std::string message;                     // one line naming the hosts and ports
  std::string fix;                         // what to do; "" when nothing is to be done
};

/// {"check", "severity", "hosts", "ports": [CableEnd JSON], "message", "fix"}.
void to_json(nlohmann::json& j, const Finding& f);

}  // namespace cc::topology
