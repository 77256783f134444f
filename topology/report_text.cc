// The human rendering of the verify-mesh report (report.h, render_text).
#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "topology/report.h"

namespace cc::topology {
namespace {

constexpr std::size_t kWidth = 100;  // columns the matrix tries to fit in

std::string marker(const util::OutputStyle& style, Severity s) {
  switch (s) {
    case Severity::kFail:
      return util::red(style, "FAIL");
    case Severity::kWarn:
      return util::yellow(style, "WARN");
    case Severity::kInfo:
      return util::bold(style, "INFO");
  }
  return "INFO";
}

std::string findings_text(const VerifyReport& r, const util::OutputStyle& style) {
  if (r.findings.empty()) return "Findings: none\n";
  std::string out = "Findings:\n";
  for (const auto& f : r.findings) {
    out += fmt::format("  {} {}: {}\n", marker(style, f.severity), f.check, f.message);
    if (!f.fix.empty()) out += fmt::format("       fix: {}\n", f.fix);
  }
  return out;
}

// Beyond this many hosts the n x n matrix is unreadable (and a 1,000-host one is 4 MB).
constexpr std::size_t kMatrixHosts = 64;

std::string cell(const VerifyReport& r, std::size_t a, std::size_t b) {
  if (a == b) return "-";
  return r.matrix[a][b] == 0 ? "." : fmt::format("{}", r.matrix[a][b]);
}

std::string matrix_text(const VerifyReport& r) {
  const std::size_t n = r.hosts.size();
  if (n < 2) return "";
  if (n > kMatrixHosts) {
    return fmt::format(
        "Cables per pair: not shown for {} hosts (more than {}); the JSON report "
        "(--json) has the matrix\n",
        n, kMatrixHosts);
  }
  std::size_t name_width = 0;
  for (const auto& h : r.hosts) name_width = std::max(name_width, h.size());
  std::size_t cell_width = 1;
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) cell_width = std::max(cell_width, cell(r, a, b).size());
  }
  // Host names as column headers when they fit; otherwise numbers, with rows "3 name".
  const bool by_name = 2 + name_width + n * (std::max(cell_width, name_width) + 1) <= kWidth;
  const std::size_t col = by_name ? std::max(cell_width, name_width)
                                  : std::max(cell_width, fmt::format("{}", n).size());
  const std::size_t num_width = fmt::format("{}", n).size();
  auto row_label = [&](std::size_t i) {
    return by_name ? fmt::format("{:<{}}", r.hosts[i], name_width)
                   : fmt::format("{:>{}} {:<{}}", i + 1, num_width, r.hosts[i], name_width);
  };
  const std::size_t label_width = by_name ? name_width : num_width + 1 + name_width;
  std::string out = "Cables per pair:\n";
  std::string header = fmt::format("  {:<{}}", "", label_width);
  for (std::size_t b = 0; b < n; ++b) {
    header += fmt::format(" {:>{}}", by_name ? r.hosts[b] : fmt::format("{}", b + 1), col);
  }
  out += header + "\n";
  for (std::size_t a = 0; a < n; ++a) {
    std::string line = "  " + row_label(a);
    for (std::size_t b = 0; b < n; ++b) line += fmt::format(" {:>{}}", cell(r, a, b), col);
    out += line + "\n";
  }
  return out;
}

std::string ring_text(const VerifyReport& r) {
  const Ring& ring = r.ring;
  switch (ring.status) {
    case RingStatus::kTooFewHosts:
      return "Ring: none (fewer than 2 hosts)\n";
    case RingStatus::kNotFound:
      return "Ring: none (no cycle through every host uses only cabled pairs)\n";
    case RingStatus::kGaveUp:
      return fmt::format(
          "Ring: not found within the search budget ({} steps); the cabling may still allow "
          "one\n",
          ring.steps);
    case RingStatus::kFound:
      break;
  }
  std::vector<std::string> names;
  for (std::size_t i : ring.order) names.push_back(r.hosts[i]);
  if (names.size() > 2) names.push_back(names.front());
  // "Ring: h1 - h2 - ...", wrapped before kWidth columns, continued under the first host.
  std::string out = "Ring: ";
  std::size_t column = out.size();
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::string word = names[i] + (i + 1 < names.size() ? " -" : "");
    if (i > 0 && column + 1 + word.size() > kWidth) {
      out += "\n      ";
      column = 6;
    } else if (i > 0) {
      out += " ";
      ++column;
    }
    out += word;
    column += word.size();
  }
  out += " (";
  out += ring.order.size() == 2
             ? fmt::format("one pair, {} cable{}", ring.total_cables,
                           ring.total_cables == 1 ? "" : "s")
             : fmt::format("at least {} cable{} per pair, {} in all", ring.min_cables,
                           ring.min_cables == 1 ? "" : "s", ring.total_cables);
  if (!ring.min_is_best) out += "; a ring with more cables per pair may exist";
  return out + ")\n";
}

std::string plan_text(const VerifyReport& r) {
  const CablingPlan& p = r.plan;
  if (p.steps.empty() && p.unplanned.empty() && p.shortages.empty()) return "";
  std::string out = "Cabling plan:\n";
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    out += fmt::format("  {}. {}\n", i + 1, p.steps[i].text);
  }
  for (const auto& u : p.unplanned) {
    out += fmt::format("  not planned: {}-{} ({})\n", u.a, u.b, u.reason);
  }
  if (p.unplanned_total > p.unplanned.size()) {
    out += fmt::format("  not planned: {} more pairs (no free ports left)\n",
                       p.unplanned_total - p.unplanned.size());
  }
  for (const auto& s : p.shortages) out += fmt::format("  {}\n", s.text);
  return out;
}

}  // namespace

std::string render_text(const VerifyReport& r, const util::OutputStyle& style) {
  const util::ExitCode rc = exit_code(r);
  std::string summary = rc == util::ExitCode::kOk ? util::green(style, r.summary.text)
                                                  : util::red(style, r.summary.text);
  std::string out = summary + "\n\n" + findings_text(r, style);
  if (std::string m = matrix_text(r); !m.empty()) out += "\n" + m;
  out += "\n" + ring_text(r);
  if (std::string p = plan_text(r); !p.empty()) out += "\n" + p;
  return out;
}

}  // namespace cc::topology
