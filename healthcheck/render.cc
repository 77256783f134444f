#include "healthcheck/render.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "healthcheck/xml_writer.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"
#include "util/json_text.h"

namespace cc::healthcheck {
namespace {

std::string colored(const util::OutputStyle& style, Status s) {
  switch (s) {
    case Status::kPass:
      return util::green(style, "PASS");
    case Status::kWarn:
      return util::yellow(style, "WARN");
    case Status::kFail:
      return util::red(style, "FAIL");
    case Status::kInterrupted:
      return util::yellow(style, "INTERRUPTED");
    case Status::kSkipped:
      return util::yellow(style, "SKIP");
  }
  return "?";
}

// The status column's width: 4 ("PASS"), wider only when a check was interrupted.
std::size_t status_width(const Report& r) {
  std::size_t w = 4;
  for (const auto& c : r.results)
    w = std::max<std::size_t>(w, std::string_view(to_string(c.status)).size());
  return w;
}

// The one line of an interrupted run: what was done, and what was not.
std::string interrupted_summary(const Report& r) {
  std::vector<const CheckResult*> open;
  for (const auto& c : r.results) {
    if (c.status == Status::kInterrupted) open.push_back(&c);
  }
  const std::size_t done = r.results.size() - open.size();
  std::string line = fmt::format(
      "health ({}): {}{}: {} of {} checks done: {} PASS, {} WARN, {} FAIL", r.level,
      util::interruption(), r.interrupted_while.empty() ? "" : " while " + r.interrupted_while,
      done, r.results.size(), r.count(Status::kPass), r.count(Status::kWarn),
      r.count(Status::kFail));
  if (open.size() == 1) {
    line += fmt::format("; not finished: {} ({})", open[0]->check, open[0]->detail);
  } else if (!open.empty()) {
    std::vector<std::string> checks;
    for (const auto* c : open) {
      if (std::find(checks.begin(), checks.end(), c->check) == checks.end())
        checks.push_back(c->check);
    }
    line += fmt::format("; {} not finished ({})", open.size(), fmt::join(checks, ", "));
  }
  return line;
}

// Subjects of one scope, in first-seen order.
std::vector<std::string> subjects(const Report& r, Scope scope) {
  std::vector<std::string> out;
  for (const auto& c : r.results) {
    if (c.scope == scope && std::find(out.begin(), out.end(), c.subject) == out.end()) {
      out.push_back(c.subject);
    }
  }
  return out;
}

std::string group_name(const CheckResult& c) {
  return c.scope == Scope::kCluster ? "cluster"
                                    : fmt::format("{} {}", to_string(c.scope), c.subject);
}

}  // namespace

std::string render_text(const Report& r, const util::OutputStyle& style) {
  std::string out;
  std::size_t wc = 5, wm = 8;
  const std::size_t ws = status_width(r);
  for (const auto& c : r.results) {
    wc = std::max(wc, c.check.size());
    wm = std::max(wm, c.measured.size());
  }
  auto section = [&](Scope scope, const char* title) {
    auto names = subjects(r, scope);
    if (names.empty()) return;
    out += fmt::format("{}\n", util::bold(style, title));
    for (const auto& name : names) {
      int fails = 0, warns = 0;
      for (const auto& c : r.results) {
        if (c.scope != scope || c.subject != name) continue;
        fails += c.status == Status::kFail;
        warns += c.status == Status::kWarn;
      }
      out += fmt::format("  {}{}\n", name,
                         fails ? fmt::format("  ({} failed)", fails)
                         : warns ? fmt::format("  ({} warnings)", warns)
                                 : "");
      for (const auto& c : r.results) {
        if (c.scope != scope || c.subject != name) continue;
        // Padded before colouring (the escapes have no width).
        const std::string pad(ws - std::string_view(to_string(c.status)).size(), ' ');
        out += fmt::format("    {}{}  {:<{}}  {:<{}}  {}\n", colored(style, c.status), pad, c.check,
                           wc, c.measured, wm, c.threshold.empty() ? "" : "(" + c.threshold + ")");
        // An interrupted check's detail is in the one "interrupted" line at the end; a skipped
        // one's names the host it needed.
        if ((c.status == Status::kWarn || c.status == Status::kFail ||
             c.status == Status::kSkipped) &&
            !c.detail.empty()) {
          out += fmt::format("          {}\n", c.detail);
        }
      }
    }
    out += "\n";
  };
  section(Scope::kHost, "Hosts");
  section(Scope::kCable, "Cables");
  section(Scope::kCluster, "Cluster");
  if (!r.versions.empty()) {
    std::size_t wh = 4, wo = 2;
    for (const auto& v : r.versions) {
      wh = std::max(wh, v.host.size());
      wo = std::max(wo, v.os.size());
    }
    out += fmt::format("{}\n", util::bold(style, "Versions"));
    out += fmt::format("  {:<{}}  {:<{}}  clusterctl (here: {})\n", "host", wh, "os", wo,
                       r.local_version);
    for (const auto& v : r.versions) {
      out += fmt::format("  {:<{}}  {:<{}}  {}\n", v.host, wh, v.os.empty() ? "-" : v.os, wo,
                         v.clusterctl.empty() ? "-" : v.clusterctl);
    }
    out += "\n";
  }
  std::set<std::string> seen;
  std::string todo;
  for (const auto& c : r.results) {
    const bool judged = c.status == Status::kWarn || c.status == Status::kFail;
    if (!judged || c.fix.empty() || !seen.insert(c.fix).second) continue;
    todo += fmt::format("  - {}\n", c.fix);
  }
  if (!todo.empty()) out += fmt::format("{}\n{}\n", util::bold(style, "What to do"), todo);
  const int pass = r.count(Status::kPass), warn = r.count(Status::kWarn),
            fail = r.count(Status::kFail), skip = r.count(Status::kSkipped);
  std::string summary = r.interrupted
                            ? interrupted_summary(r)
                            : fmt::format("health ({}): {} checks: {} PASS, {} WARN, {} FAIL",
                                          r.level, r.results.size(), pass, warn, fail);
  if (skip > 0 && !r.interrupted) summary += fmt::format(", {} SKIP", skip);
  if (!r.unreachable.empty()) {
    summary += fmt::format("; unreachable: {}", fmt::join(r.unreachable, ", "));
  }
  if (!r.bad_destination.empty()) {
    summary += fmt::format("; bad destination: {}", fmt::join(r.bad_destination, ", "));
  }
  summary += fmt::format(" in {:.2f} s", r.elapsed_s);
  out += (fail || !r.unreachable.empty() || !r.bad_destination.empty())
             ? util::red(style, summary)
         : (warn || r.interrupted)        ? util::yellow(style, summary)
                                          : util::green(style, summary);
  out += "\n";
  return out;
}

std::string render_json(const Report& r) {
  nlohmann::json j;
  j["schema"] = kHealthSchema;
  j["level"] = r.level;
  j["exit_code"] = util::to_int(exit_code(r));
  j["elapsed_s"] = r.elapsed_s;
  j["counts"] = {{"pass", r.count(Status::kPass)},
                 {"warn", r.count(Status::kWarn)},
                 {"fail", r.count(Status::kFail)},
                 {"interrupted", r.count(Status::kInterrupted)},
                 {"skip", r.count(Status::kSkipped)}};
  j["interrupted"] = r.interrupted;
  j["interrupted_while"] = r.interrupted_while;
  j["unreachable"] = r.unreachable;
  j["bad_destination"] = r.bad_destination;
  j["clusterctl_version"] = r.local_version;
  j["versions"] = nlohmann::json::array();
  for (const auto& v : r.versions) {
    j["versions"].push_back({{"host", v.host}, {"os", v.os}, {"clusterctl", v.clusterctl}});
  }
  j["results"] = r.results;
  return util::json_text(j, 2) + "\n";
}

std::string render_junit(const Report& r) {
  XmlWriter w;
  // Groups in first-seen order.
  std::vector<std::string> groups;
  std::map<std::string, std::vector<const CheckResult*>> by_group;
  for (const auto& c : r.results) {
    const std::string g = group_name(c);
    if (!by_group.count(g)) groups.push_back(g);
    by_group[g].push_back(&c);
  }
  w.open("testsuites", {{"name", "clusterctl health"},
                        {"tests", std::to_string(r.results.size())},
                        {"failures", std::to_string(r.count(Status::kFail))},
                        {"errors", "0"},
                        {"skipped", std::to_string(r.count(Status::kInterrupted) +
                                                   r.count(Status::kSkipped))},
                        {"time", fmt::format("{:.3f}", r.elapsed_s)}});
  for (const auto& g : groups) {
    const auto& cases = by_group[g];
    const auto fails = std::count_if(cases.begin(), cases.end(),
                                     [](const auto* c) { return c->status == Status::kFail; });
    const auto skipped = std::count_if(cases.begin(), cases.end(), [](const auto* c) {
      return c->status == Status::kInterrupted || c->status == Status::kSkipped;
    });
    w.open("testsuite", {{"name", g},
                         {"tests", std::to_string(cases.size())},
                         {"failures", std::to_string(fails)},
                         {"errors", "0"},
                         {"skipped", std::to_string(skipped)}});
    for (const CheckResult* c : cases) {
      w.open("testcase",
             {{"classname", fmt::format("health.{}.{}", to_string(c->scope), c->subject)},
              {"name", c->check},
              {"time", "0"}});
      if (c->status == Status::kFail) {
        w.leaf("failure", {{"message", c->detail}, {"type", "FAIL"}},
               c->fix.empty() ? c->detail : c->detail + "\nfix: " + c->fix);
      } else if (c->status == Status::kInterrupted || c->status == Status::kSkipped) {
        // Not run (to its end): skipped, no failure.
        w.leaf("skipped", {{"message", c->detail}}, "");
      }
      std::string so = fmt::format("{}: measured {} (threshold {})", to_string(c->status),
                                   c->measured.empty() ? "-" : c->measured,
                                   c->threshold.empty() ? "-" : c->threshold);
      if (!c->detail.empty()) so += "\n" + c->detail;
      w.leaf("system-out", {}, so);
      w.close();
    }
    w.close();
  }
  return w.finish();
}

util::OwnOutput junit_output() {
  return {"a JUnit XML report (what `health --junit` writes, with <testsuites>)",
          [](std::string_view text) {
            // An XML document (its first non-blank character '<') with the element JUnit
            // readers take: enough to tell a report from a job file or a state.
            const std::size_t first = text.find_first_not_of(" \t\r\n");
            return first != std::string_view::npos && text[first] == '<' &&
                   text.find("<testsuites") != std::string_view::npos;
          }};
}

util::Status write_junit(const Report& r, const std::string& path) {
  return util::write_file_atomic(path, render_junit(r));
}

}  // namespace cc::healthcheck
