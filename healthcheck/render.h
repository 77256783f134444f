// The health report as text for people, JSON for programs, and JUnit XML for CI systems.
//
// JSON (schema "clusterctl.health/1"; field names are stable):
//   {"schema": "clusterctl.health/1", "level": "quick", "exit_code": 1, "elapsed_s": 1.2,
//    "counts": {"pass": 57, "warn": 0, "fail": 2, "interrupted": 0, "skip": 3},
//    "unreachable": ["h4"],
//    "bad_destination": ["h5"],             // SSH destination refused before connecting
//                                           // (fe80::1 without %scope): exit_code 2
//    "interrupted": false,                  // Ctrl-C ended the run (exit_code 130)
//    "interrupted_while": "",               // "discovering the hosts": Ctrl-C came before
//                                           // the checks, during a live discovery; else ""
//    "clusterctl_version": "0.1.0",
//    "versions": [{"host": "h1", "os": "Debian GNU/Linux 12", "clusterctl": "0.1.0"}],
//    "results": [CheckResult JSON (check.h), ...]}
//
// JUnit: <testsuites name="clusterctl health" tests failures errors="0" skipped time>, one
// <testsuite> per subject (name "host h1", "cable h1:tb1-h2:tb1", "cluster"), one <testcase
// classname="health.host.h1" name="CHECK"> per result; a FAIL carries <failure message=DETAIL
// type="FAIL">, an INTERRUPTED check (Ctrl-C) and a SKIP (a host it needs was not probed) are
// <skipped message=DETAIL/> (counted in skipped, never a failure), a WARN passes with
// <system-out>WARN: ...</system-out>; every testcase's <system-out> also holds the measured
// value and the threshold.
#pragma once

#include <string>

#include "healthcheck/check.h"
#include "util/result.h"
#include "util/term.h"

namespace cc::healthcheck {

inline constexpr const char* kHealthSchema = "clusterctl.health/1";

/// Hosts (each host's checks), cables (each cable's checks), cluster-wide checks, the version
/// matrix, what to do (each fix of a WARN or FAIL once), and a summary line; after Ctrl-C that
/// line says "interrupted (Ctrl-C)" (" while discovering the hosts" when it came before the
/// checks), how many checks were done and which were not finished; it ends with the elapsed
/// time of the whole command ("in 2.31 s").
std::string render_text(const Report& r, const util::OutputStyle& style);
/// The JSON document above, pretty-printed with a final newline.
std::string render_json(const Report& r);
/// The JUnit XML document above.
std::string render_junit(const Report& r);
/// Writes render_junit atomically (util::write_file_atomic). Errors: kUsage naming the file.
util::Status write_junit(const Report& r, const std::string& path);

/// What `health --junit FILE` replaces without --force (util::check_output_path): a JUnit XML
/// report, known by its look: XML (a '<' first) with a <testsuites> element.
util::OwnOutput junit_output();

}  // namespace cc::healthcheck
