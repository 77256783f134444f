#include "healthcheck/check.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

namespace cc::healthcheck {

const char* to_string(Status s) {
  switch (s) {
    case Status::kPass:
      return "PASS";
    case Status::kWarn:
      return "WARN";
    case Status::kFail:
      return "FAIL";
    case Status::kInterrupted:
      return "INTERRUPTED";
    case Status::kSkipped:
      return "SKIP";
  }
  return "?";
}

const char* to_string(Scope s) {
  switch (s) {
    case Scope::kHost:
      return "host";
    case Scope::kCable:
      return "cable";
    case Scope::kCluster:
      return "cluster";
  }
  return "?";
}

int Report::count(Status s) const {
  return static_cast<int>(
      std::count_if(results.begin(), results.end(), [&](const auto& r) { return r.status == s; }));
}

util::ExitCode exit_code(const Report& r) {
  if (r.interrupted) return util::ExitCode::kInterrupted;
  if (!r.unreachable.empty()) return util::ExitCode::kUnreachable;
  if (!r.bad_destination.empty()) return util::ExitCode::kUsage;
  return r.count(Status::kFail) > 0 ? util::ExitCode::kCheckFailed : util::ExitCode::kOk;
}

namespace {

// A check that has no measurement: interrupted, or not run.
CheckResult unmeasured_check(Scope scope, std::string subject, std::string check, Status status,
                             const char* measured, std::string detail) {
  CheckResult r;
  r.scope = scope;
  r.subject = std::move(subject);
  r.check = std::move(check);
  r.status = status;
  r.measured = measured;
  r.detail = std::move(detail);
  return r;
}

}  // namespace

CheckResult interrupted_check(Scope scope, std::string subject, std::string check,
                              std::string detail) {
  return unmeasured_check(scope, std::move(subject), std::move(check), Status::kInterrupted,
                          "not finished", std::move(detail));
}

CheckResult skipped_check(Scope scope, std::string subject, std::string check,
                          std::string detail) {
  return unmeasured_check(scope, std::move(subject), std::move(check), Status::kSkipped,
                          "not checked", std::move(detail));
}

std::string end_name(const discovery::CableEnd& end) {
  std::string port = !end.interface.empty() ? end.interface
                     : end.receptacle       ? "r" + std::to_string(*end.receptacle)
                                            : "?";
  return end.host + ":" + port;
}

std::string cable_label(const discovery::CableEnd& a, const discovery::CableEnd& b) {
  return end_name(a) + "-" + end_name(b);
}

void to_json(nlohmann::json& j, const CheckResult& r) {
  j = nlohmann::json{{"scope", to_string(r.scope)},
                     {"subject", r.subject},
                     {"check", r.check},
                     {"status", to_string(r.status)},
                     {"measured", r.measured},
                     {"threshold", r.threshold},
                     {"value", nullptr},
                     {"unit", r.unit},
                     {"detail", r.detail},
                     {"fix", r.fix}};
  if (r.value) j["value"] = *r.value;
}

}  // namespace cc::healthcheck
