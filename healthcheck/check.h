// Health checks as data: every check `clusterctl health` makes is one CheckResult (PASS, WARN
// or FAIL with the measured value and the threshold beside it; INTERRUPTED: Ctrl-C ended it
// before it could be judged; SKIP: it could not run because a host it needs was not probed,
// whose own reachable check is the failure; the last two are neither a pass nor a failure),
// grouped by host, by cable and cluster-wide. Renderers (render.h, junit.h) and the exit code read only this.
//
// Subjects: a host's name ("h1"), a cable's label ("h1:tb2-h3:tb1": each end as HOST:PORT, the
// port by interface, or "rN" for a receptacle with no known interface), or "cluster".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "discovery/cluster_state.h"
#include "util/exit_code.h"

namespace cc::healthcheck {

enum class Status { kPass, kWarn, kFail, kInterrupted, kSkipped };
enum class Scope { kHost, kCable, kCluster };

const char* to_string(Status s);  // "PASS", "WARN", "FAIL", "INTERRUPTED", "SKIP"
const char* to_string(Scope s);   // "host", "cable", "cluster"

struct CheckResult {
  Scope scope = Scope::kHost;
  std::string subject;    // host name, cable label, or "cluster"
  std::string check;      // "reachable", "os-version", "link-up", "bandwidth", ...
  Status status = Status::kPass;
  std::string measured;   // the value as shown, with its unit: "0.012 s", "41.2 Gb/s"; "" = none
  std::string threshold;  // the limit as shown: "< 1 s", ">= 10 Gb/s"; "" = none
  std::string detail;     // one line; on WARN/FAIL it names the hosts and ports involved
  std::string fix;        // what to do; "" on PASS
  std::optional<double> value;  // the measured number, in `unit` (for JSON and baselines)
  std::string unit;             // "s", "us", "Gb/s", "GiB", ""
};

/// One row of the version matrix.
struct HostVersions {
  std::string host;
  std::string os;          // "macOS 26.2 (25C56)", "Debian GNU/Linux 12"; "" when not probed
  std::string clusterctl;  // "0.1.0", "missing", "" when not probed
};

/// Everything one run found, in the order checks were made (hosts, then cables, then cluster).
struct Report {
  std::string level;                   // "quick", "default", "full"
  std::vector<CheckResult> results;
  std::vector<std::string> unreachable;  // hosts that could not be reached (exit code 3)
  std::vector<std::string> bad_destination;  // hosts whose SSH destination was refused before
                                             // any connection (exit code 2)
  bool interrupted = false;              // Ctrl-C ended the run early (exit code 130)
  std::string interrupted_while;         // what Ctrl-C cut short when it came before the
                                         // checks: "discovering the hosts"; else ""
  std::vector<HostVersions> versions;    // the version matrix, host order
  std::string local_version;             // this clusterctl's version
  double elapsed_s = 0;                 // wall time of the whole command, seconds (a live
                                        // discovery before the checks included)

  void add(CheckResult r) { results.push_back(std::move(r)); }
  int count(Status s) const;
};

/// 130 when the run was interrupted; else 3 when a host was unreachable; else 2 when a host's
/// destination was refused (the operator's input, README "Exit codes"); else 1 when any check
/// FAILed; else 0 (WARN passes).
util::ExitCode exit_code(const Report& r);

/// The result of a check that Ctrl-C ended before it could be judged: INTERRUPTED, measured
/// "not finished", no fix (nothing is wrong with the cluster), `detail` saying what was not done.
CheckResult interrupted_check(Scope scope, std::string subject, std::string check,
                              std::string detail);

/// The result of a check that could not run because `hosts` (named in `detail`) were not
/// probed: SKIP, measured "not checked", no fix (the hosts' reachable checks carry it).
CheckResult skipped_check(Scope scope, std::string subject, std::string check,
                          std::string detail);

/// "h1:tb2" for one cable end: the interface, else "r<receptacle>", else "?".
std::string end_name(const discovery::CableEnd& end);
/// "h1:tb2-h3:tb1".
std::string cable_label(const discovery::CableEnd& a, const discovery::CableEnd& b);

/// {"scope", "subject", "check", "status", "measured", "threshold", "value", "unit", "detail",
/// "fix"}; value null when there is none.
void to_json(nlohmann::json& j, const CheckResult& r);

}  // namespace cc::healthcheck
