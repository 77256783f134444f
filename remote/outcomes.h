// Summing up a fan-out for the operator: identical outputs collapsed (as `clush -b` does), one
// exit status for the whole run, and the JSON form of `clusterctl exec --json`.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "remote/fan_out.h"

namespace cc::remote {

/// Hosts that produced byte-identical text, in order of first appearance.
struct OutputGroup {
  std::vector<std::string> hosts;
  std::string text;
  std::size_t hidden = 0;  // bytes after `text` not kept (CommandResult::out_hidden, err_hidden)
};

/// Groups the hosts that ran the command by identical stdout (`stderr_stream` false) or
/// stderr (true). Hosts whose text is empty, and hosts that failed, are left out. A host whose
/// output was cut (hidden bytes) is a group of its own: what was not kept cannot be compared.
std::vector<OutputGroup> group_outputs(const std::vector<HostOutcome>& outcomes,
                                       bool stderr_stream);

/// "h1,h3 (2)": the hosts, comma-separated, and how many.
std::string hosts_label(const std::vector<std::string>& hosts);

/// What went wrong per host, for the operator, collapsed across identical lines:
/// "h2,h5: exit status 7" (127: with why a command is not found over SSH and what to do),
/// "h3: timed out after 5 s (killed)", "h4: killed by signal 9
/// (exit status 137)", "h6: no exit status (the connection closed before it arrived)", and
/// for each failed host its error message as is (messages name their host). Empty when all 0.
std::vector<std::string> problem_lines(const std::vector<HostOutcome>& outcomes, double timeout_s);

/// Why a command that runs in a terminal is not found (exit 127) when an SSH session runs it:
/// "a non-interactive SSH session reads no login profile (...), so ~/.local/bin, ... is often
/// missing from its PATH". exec's problem line for exit 127 and launch's "to fix" line
/// (launch::not_found_advice) both give it, each with the fix its own input allows.
std::string_view ssh_path_cause();

/// A script's interpreter that is missing, as the program that tried to run it said:
/// bash's "S: I: bad interpreter: No such file or directory", zsh's "S: bad interpreter: I:
/// no such file or directory", GNU env's "/usr/bin/env: 'I': No such file or directory" (any
/// quotes), BSD env's "env: I: No such file or directory" and bash 5.2's "S: cannot execute:
/// required file not found". `script` is "" when the text does not name it (env's),
/// `interpreter` "" when it does not name that (bash 5.2's). dash's "S: not found" is not one:
/// a missing script reads the same. A carriage return in `interpreter` is kept as is (a CRLF
/// script).
struct MissingInterpreter {
  std::string interpreter;
  std::string script;
};
std::optional<MissingInterpreter> missing_interpreter(std::string_view stderr_text);

/// What to do about a script whose #! interpreter is missing on a host: install it or fix the
/// #! line; when `interpreter` ends in a carriage return (a real one, or the two characters
/// "\r" as launch's waiter shows it), the script has CRLF line endings: dos2unix or sed, each
/// with the script's path quoted for a shell. `script` "" : "the script". exec's problem line
/// (exit 126 and 127) and launch's "to fix" line (launch::interpreter_advice) both give it.
std::string missing_interpreter_fix(std::string_view interpreter, std::string_view script);

/// One line: "exec: 8 hosts, 6 exit 0, 1 non-zero, 1 unreachable" (also "timed out",
/// "interrupted", "failed" for other errors; zero counts left out).
std::string summary_line(const std::vector<HostOutcome>& outcomes);

/// The exit status of `clusterctl exec` (README, "Exit codes"): 130 when any host was
/// interrupted; else 3 when any host was unreachable; else 2 for any other per-host error
/// (e.g. a missing recording); else the highest remote exit status, counting a timed-out host
/// as 124 (as timeout(1)) and a missing exit status as 255 (as ssh); 0 when all exited 0.
int exec_exit_status(const std::vector<HostOutcome>& outcomes);

/// `--json`: a JSON array, one object per host in input order:
///   {"host": "h1", "exit_status": 0 | null, "timed_out": false, "stdout": "...",
///    "stderr": "...", "error": null | "message"}
/// plus "stdout_hidden_bytes" / "stderr_hidden_bytes" (how many bytes after "stdout" /
/// "stderr" were not kept: CommandResult::out_hidden) only for a host whose output was cut.
/// exit_status is null when the host failed or no status arrived. Bytes that are not UTF-8
/// are replaced with U+FFFD. Pretty-printed, two-space indent, no trailing newline.
std::string outcomes_json(const std::vector<HostOutcome>& outcomes);

}  // namespace cc::remote
