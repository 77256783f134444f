// The JSON rendering of the verify-mesh report (schema in report.h).
#include <nlohmann/json.hpp>

#include "topology/report.h"
#include "util/json_text.h"

namespace cc::topology {

nlohmann::json report_json(const VerifyReport& r) {
  using nlohmann::json;
  const Summary& s = r.summary;
  json summary = {{"text", s.text},
                  {"hosts", s.hosts},
                  {"expected_hosts", s.expected_hosts},
                  {"unreachable", s.unreachable},
                  {"bad_destination", s.bad_destination},
                  {"probe_failed", s.probe_failed},
                  {"pairs", s.pairs},
                  {"pairs_cabled", s.pairs_cabled},
                  {"cables", s.cables},
                  {"hub_cables", s.hub_cables},
                  {"missing_pairs", s.pairs - s.pairs_cabled},
                  {"multi_rail_pairs", s.multi_rail_pairs},
                  {"full_mesh", s.full_mesh},
                  {"rdma_ready", s.rdma_ready},
                  {"fail", s.fail},
                  {"warn", s.warn},
                  {"info", s.info}};
  json matrix = json::array();
  for (std::size_t a = 0; a < r.matrix.size(); ++a) {
    json row = json::array();
    for (std::size_t b = 0; b < r.matrix[a].size(); ++b) {
      row.push_back(a == b ? json(nullptr) : json(r.matrix[a][b]));
    }
    matrix.push_back(std::move(row));
  }
  json ring_hosts = json::array();
  if (r.ring.status == RingStatus::kFound) {
    for (std::size_t i : r.ring.order) ring_hosts.push_back(r.hosts.at(i));
  }
  json ring = {{"status", to_string(r.ring.status)}, {"hosts", ring_hosts},
               {"min_cables", r.ring.min_cables},    {"total_cables", r.ring.total_cables},
               {"min_is_best", r.ring.min_is_best},  {"steps", r.ring.steps}};
  return json{{"schema", kVerifyMeshSchema},
              {"exit_code", util::to_int(exit_code(r))},
              {"summary", std::move(summary)},
              {"hosts", r.hosts},
              {"findings", r.findings},
              {"matrix", std::move(matrix)},
              {"cables", r.cables},
              {"ring", std::move(ring)},
              {"plan", r.plan}};
}

std::string render_json(const VerifyReport& r) {
  return util::json_text(report_json(r), 2) + "\n";
}

}  // namespace cc::topology
