#include "remote/outcomes.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (moved there in fmt 11)
#include <nlohmann/json.hpp>

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
