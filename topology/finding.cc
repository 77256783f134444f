#include "topology/finding.h"

#include <nlohmann/json.hpp>

namespace cc::topology {

const char* to_string(Severity s) {
  switch (s) {
    case Severity::kFail:
      return "fail";
    case Severity::kWarn:
      return "warn";
    case Severity::kInfo:
      return "info";
  }
  return "info";
}

void to_json(nlohmann::json& j, const Finding& f) {
  j = nlohmann::json{{"check", f.check},     {"severity", to_string(f.severity)},
                     {"hosts", f.hosts},     {"ports", f.ports},
                     {"message", f.message}, {"fix", f.fix}};
}

}  // namespace cc::topology
