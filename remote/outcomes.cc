#include "remote/outcomes.h"

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (moved there in fmt 11)
#include <nlohmann/json.hpp>

#include "remote/quote.h"

namespace cc::remote {
namespace {

using util::ExitCode;

// Adds `host` to the group holding `text`, creating it at the end if new.
void add_to(std::vector<OutputGroup>& groups, const std::string& host, const std::string& text) {
  for (auto& g : groups) {
    if (g.hidden == 0 && g.text == text) {
      g.hosts.push_back(host);
      return;
    }
  }
  groups.push_back(OutputGroup{{host}, text});
}

}  // namespace

std::vector<OutputGroup> group_outputs(const std::vector<HostOutcome>& outcomes,
                                       bool stderr_stream) {
  std::vector<OutputGroup> groups;
  for (const auto& o : outcomes) {
    if (!o.result.ok()) continue;
    const std::string& text = stderr_stream ? o.result->err : o.result->out;
    const std::size_t hidden = stderr_stream ? o.result->err_hidden : o.result->out_hidden;
    if (hidden > 0) {
      groups.push_back(OutputGroup{{o.host}, text, hidden});
    } else if (!text.empty()) {
      add_to(groups, o.host, text);
    }
  }
  return groups;
}

std::string hosts_label(const std::vector<std::string>& hosts) {
  return fmt::format("{} ({})", fmt::join(hosts, ","), hosts.size());
}

std::vector<std::string> problem_lines(const std::vector<HostOutcome>& outcomes, double timeout_s) {
  std::vector<OutputGroup> status_groups;  // text = the problem, hosts = who has it
  std::vector<std::string> errors;
  for (const auto& o : outcomes) {
    if (!o.result.ok()) {
      errors.push_back(o.result.error().message);
      continue;
    }
    const CommandResult& r = *o.result;
    if (r.timed_out) {
      add_to(status_groups, o.host, fmt::format("timed out after {:g} s (killed)", timeout_s));
    } else if (r.exit_status < 0) {
      add_to(status_groups, o.host, "no exit status (the connection closed before it arrived)");
    } else if (r.exit_status > 128 && r.exit_status < 128 + 32) {
      add_to(
          status_groups, o.host,
          fmt::format("exit status {} (killed by signal {}?)", r.exit_status, r.exit_status - 128));
    } else if (auto m = (r.exit_status == 126 || r.exit_status == 127) ? missing_interpreter(r.err)
                                                                       : std::nullopt) {
      // A script that is there, run by an interpreter that is not: no PATH advice.
      add_to(status_groups, o.host,
             fmt::format("exit status {} (interpreter not found: {})", r.exit_status,
                         missing_interpreter_fix(m->interpreter, m->script)));
    } else if (r.exit_status == 127) {
      // The shell's "command not found" (ompi#599, #8870): the usual cause and fix.
      add_to(status_groups, o.host,
             fmt::format("exit status 127 (command not found: {}: give the absolute path, or "
                         "`--shell -- 'export PATH=DIR:$PATH; CMD'`)",
                         ssh_path_cause()));
    } else if (r.exit_status != 0) {
      add_to(status_groups, o.host, fmt::format("exit status {}", r.exit_status));
    }
  }
  std::vector<std::string> lines;
  for (const auto& g : status_groups) {
    lines.push_back(fmt::format("{}: {}", fmt::join(g.hosts, ","), g.text));
  }
  lines.insert(lines.end(), errors.begin(), errors.end());
  return lines;
}

std::string_view ssh_path_cause() {
  return "a non-interactive SSH session reads no login profile (~/.zprofile, ~/.bash_profile, "
         "conda activate), so ~/.local/bin, /opt/homebrew/bin or a conda or venv bin directory "
         "is often missing from its PATH";
}

std::optional<MissingInterpreter> missing_interpreter(std::string_view text) {
  constexpr std::string_view kBad = ": bad interpreter: ";
  constexpr std::string_view kNoFile = "o such file or directory";  // bash "No", zsh "no"
  for (size_t from = 0; from < text.size();) {
    const size_t nl = std::min(text.find('\n', from), text.size());
    const std::string_view line = text.substr(from, nl - from);
    from = nl + 1;
    if (const size_t bad = line.find(kBad); bad != std::string_view::npos) {
      const std::string_view head = line.substr(0, bad);  // "bash: S: I" or "zsh: S"
      const std::string_view tail = line.substr(bad + kBad.size());
      if (tail.ends_with(kNoFile) && tail.size() > kNoFile.size() + 3) {
        // zsh: "zsh: S: bad interpreter: I: no such file or directory"
        const std::string_view interp = tail.substr(0, tail.size() - kNoFile.size() - 3);
        const size_t colon = head.rfind(": ");
        return MissingInterpreter{std::string(interp), colon == std::string_view::npos
                                                           ? std::string()
                                                           : std::string(head.substr(colon + 2))};
      }
      // bash: "bash: S: I: bad interpreter: No such file or directory" (S may hold ": ")
      const size_t last = head.rfind(": ");
      if (last == std::string_view::npos) continue;
      const std::string_view before = head.substr(0, last);  // "bash[: line 1]: S"
      const size_t at = before.rfind(": ");
      return MissingInterpreter{
          std::string(head.substr(last + 2)),
          at == std::string_view::npos ? std::string() : std::string(before.substr(at + 2))};
    }
    // bash 5.2: "bash: line 1: S: cannot execute: required file not found" (no interpreter)
    constexpr std::string_view kRequired = ": cannot execute: required file not found";
    if (line.ends_with(kRequired)) {
      const std::string_view head = line.substr(0, line.size() - kRequired.size());
      const size_t at = head.rfind(": ");
      if (at != std::string_view::npos)
        return MissingInterpreter{"", std::string(head.substr(at + 2))};
    }
    // env: "/usr/bin/env: 'I': No such file or directory", "env: I: No such file or directory"
    constexpr std::string_view kEnvNoFile = ": No such file or directory";
    const size_t env = line.find("env: ");
    if (env == std::string_view::npos || !line.ends_with(kEnvNoFile) ||
        (env > 0 && line[env - 1] != '/')) {
      continue;
    }
    std::string_view interp = line.substr(env + 5, line.size() - kEnvNoFile.size() - (env + 5));
    for (std::string_view q : {"'", "\u2018", "\u2019", "\""}) {
      if (interp.starts_with(q)) interp.remove_prefix(q.size());
      if (interp.ends_with(q)) interp.remove_suffix(q.size());
    }
    if (!interp.empty()) return MissingInterpreter{std::string(interp), ""};
  }
  return std::nullopt;
}

std::string missing_interpreter_fix(std::string_view interpreter, std::string_view script) {
  std::string interp(interpreter);
  bool crlf = false;
  for (std::string_view cr : {"\r", "\\r"}) {
    while (interp.ends_with(cr)) {
      interp.resize(interp.size() - cr.size());
      crlf = true;
    }
  }
  const std::string file = script.empty() ? std::string("the script") : std::string(script);
  if (interp.empty() && !crlf) {
    // bash 5.2 names the script only: the interpreter, or a carriage return, is to be seen.
    const std::string q = script.empty() ? std::string("FILE") : shell_quote_arg(script);
    return fmt::format(
        "{} was found, the interpreter named on its #! line was not: `head -1 {} | od -c` shows "
        "it; install it there, or change that line to an interpreter the host has; a line "
        "ending in \\r means Windows (CRLF) line endings: `dos2unix {}` or `sed -i 's/\\r$//' "
        "{}`",
        file, q, q, q);
  }
  if (crlf) {
    const std::string q = script.empty() ? std::string("FILE") : shell_quote_arg(script);
    return fmt::format(
        "{} has Windows (CRLF) line endings: its #! line ends in a carriage return, so the "
        "interpreter looked for is \"{}\\r\", which no host has; convert the file with "
        "`dos2unix {}` or `sed -i 's/\\r$//' {}` (macOS: `sed -i '' $'s/\\r$//' {}`), where "
        "it is kept and where it runs",
        file, interp, q, q, q);
  }
  return fmt::format(
      "the interpreter {} named on the #! line of {} is missing there (the script itself was "
      "found): install it, or change that line to an interpreter the host has "
      "(`#!/usr/bin/env python3` finds one in PATH)",
      interp, file);
}

std::string summary_line(const std::vector<HostOutcome>& outcomes) {
  size_t ok = 0, nonzero = 0, timed_out = 0, unreachable = 0, interrupted = 0, other = 0;
  for (const auto& o : outcomes) {
    if (!o.result.ok()) {
      ExitCode c = o.result.error().code;
      (c == ExitCode::kUnreachable   ? unreachable
       : c == ExitCode::kInterrupted ? interrupted
                                     : other)++;
    } else if (o.result->timed_out) {
      ++timed_out;
    } else if (o.result->exit_status == 0) {
      ++ok;
    } else {
      ++nonzero;
    }
  }
  std::string line = fmt::format("exec: {} host{}, {} exit 0", outcomes.size(),
                                 outcomes.size() == 1 ? "" : "s", ok);
  if (nonzero > 0) line += fmt::format(", {} non-zero", nonzero);
  if (timed_out > 0) line += fmt::format(", {} timed out", timed_out);
  if (unreachable > 0) line += fmt::format(", {} unreachable", unreachable);
  if (interrupted > 0) line += fmt::format(", {} interrupted", interrupted);
  if (other > 0) line += fmt::format(", {} failed", other);
  return line;
}

int exec_exit_status(const std::vector<HostOutcome>& outcomes) {
  bool unreachable = false, other_error = false;
  int worst = 0;
  for (const auto& o : outcomes) {
    if (!o.result.ok()) {
      ExitCode c = o.result.error().code;
      if (c == ExitCode::kInterrupted) return util::to_int(ExitCode::kInterrupted);
      (c == ExitCode::kUnreachable ? unreachable : other_error) = true;
      continue;
    }
    int status = o.result->timed_out         ? 124
                 : o.result->exit_status < 0 ? 255
                                             : o.result->exit_status;
    worst = std::max(worst, status);
  }
  if (unreachable) return util::to_int(ExitCode::kUnreachable);
  if (other_error) return util::to_int(ExitCode::kUsage);
  return worst;
}

std::string outcomes_json(const std::vector<HostOutcome>& outcomes) {
  using Json = nlohmann::ordered_json;  // keys in the documented order
  Json arr = Json::array();
  for (const auto& o : outcomes) {
    Json j;
    j["host"] = o.host;
    if (o.result.ok()) {
      const CommandResult& r = *o.result;
      j["exit_status"] = r.exit_status >= 0 && !r.timed_out ? Json(r.exit_status) : Json(nullptr);
      j["timed_out"] = r.timed_out;
      j["stdout"] = r.out;
      j["stderr"] = r.err;
      if (r.out_hidden > 0) j["stdout_hidden_bytes"] = r.out_hidden;
      if (r.err_hidden > 0) j["stderr_hidden_bytes"] = r.err_hidden;
      j["error"] = nullptr;
    } else {
      j["exit_status"] = nullptr;
      j["timed_out"] = false;
      j["stdout"] = "";
      j["stderr"] = "";
      j["error"] = o.result.error().message;
    }
    arr.push_back(std::move(j));
  }
  return arr.dump(2, ' ', false, Json::error_handler_t::replace);
}

}  // namespace cc::remote
