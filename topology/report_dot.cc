// The Graphviz rendering of the verify-mesh report (report.h, render_dot).
#include <string>

#include <fmt/format.h>

#include "topology/report.h"

namespace cc::topology {

std::string dot_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

std::string render_dot(const VerifyReport& r) {
  std::string out = "graph \"clusterctl-mesh\" {\n";
  out += fmt::format("  label={};\n", dot_quote(r.summary.text));
  out += "  node [shape=box];\n";
  for (const auto& h : r.hosts) out += fmt::format("  {};\n", dot_quote(h));
  for (const auto& c : r.cables) {
    std::string speed =
        c.link_speed_gbps > 0 ? fmt::format("{} Gb/s", c.link_speed_gbps) : "? Gb/s";
    std::string label =
        fmt::format("{} - {}, {}", discovery::port_label(c.a), discovery::port_label(c.b), speed);
    out += fmt::format("  {} -- {} [label={}];\n", dot_quote(c.a.host), dot_quote(c.b.host),
                       dot_quote(label));
  }
  std::size_t missing = 0;
  for (std::size_t a = 0; a < r.matrix.size(); ++a) {
    for (std::size_t b = a + 1; b < r.matrix.size(); ++b) {
      if (r.matrix[a][b] != 0 || missing++ >= kListedPairs) continue;
      out += fmt::format("  {} -- {} [style=dashed, color=red, label=\"missing\"];\n",
                         dot_quote(r.hosts[a]), dot_quote(r.hosts[b]));
    }
  }
  if (missing > kListedPairs) {
    out += fmt::format("  // {} more missing pairs not drawn\n", missing - kListedPairs);
  }
  return out + "}\n";
}

}  // namespace cc::topology
