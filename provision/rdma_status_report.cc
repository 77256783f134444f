// The renderings of `clusterctl rdma status` (rdma_status.h): a text table and JSON.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "provision/rdma_status.h"
#include "util/json_text.h"

namespace cc::provision {
namespace {

using R = RdmaReadiness;

std::string paint(const util::OutputStyle& style, R state, const std::string& padded) {
  if (state == R::kReady) return util::green(style, padded);
  if (state == R::kWaitingForPeer) return util::yellow(style, padded);
  return util::red(style, padded);
}

struct Row {
  std::vector<std::string> cells;  // HOST PORT DEVICE PEER STATE DETAIL
  R state;
};

constexpr std::size_t kStateColumn = 4;

std::string table(const std::vector<Row>& rows, const util::OutputStyle& style) {
  std::vector<std::size_t> width;
  for (const auto& r : rows) {
    width.resize(std::max(width.size(), r.cells.size()));
    for (std::size_t i = 0; i < r.cells.size(); ++i) {
      width[i] = std::max(width[i], r.cells[i].size());
    }
  }
  std::string out;
  for (std::size_t ri = 0; ri < rows.size(); ++ri) {
    const auto& r = rows[ri];
    std::string line;
    for (std::size_t i = 0; i < r.cells.size(); ++i) {
      const bool last = i + 1 == r.cells.size();
      std::string cell = last ? r.cells[i] : fmt::format("{:<{}}  ", r.cells[i], width[i]);
      if (i == kStateColumn && ri > 0) cell = paint(style, r.state, cell);
      line += cell;
    }
    out += line + "\n";
  }
  return out;
}

nlohmann::json end_json(const discovery::CableEnd& e) {
  return {{"host", e.host},
          {"interface", e.interface},
          {"receptacle", e.receptacle ? nlohmann::json(*e.receptacle) : nlohmann::json()},
          {"rdma_device", e.rdma_device ? nlohmann::json(*e.rdma_device) : nlohmann::json()}};
}

nlohmann::json text_or_null(const std::string& s) {
  return s.empty() ? nlohmann::json() : nlohmann::json(s);
}

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

}  // namespace

std::string render_text(const RdmaStatus& s, const util::OutputStyle& style) {
  std::vector<Row> rows{{{"HOST", "PORT", "DEVICE", "PEER", "STATE", "DETAIL"}, R::kReady}};
  std::vector<std::string> fixes;
  auto add_fix = [&](const std::string& who, const std::string& fix) {
    if (fix.empty()) return;
    std::string line = fmt::format("{}: {}", who, fix);
    if (std::find(fixes.begin(), fixes.end(), line) == fixes.end()) fixes.push_back(line);
  };
  std::size_t hosts_ready = 0, ports = 0, ports_ready = 0;
  for (const auto& h : s.hosts) {
    hosts_ready += h.state == R::kReady;
    rows.push_back({{h.host, "-", "-", "-", to_string(h.state), h.detail}, h.state});
    add_fix(h.host, h.fix);
    for (const auto& p : h.ports) {
      ++ports;
      ports_ready += p.state == R::kReady;
      rows.push_back({{h.host, discovery::port_label(p.end), p.rdma_device.value_or("-"),
                       discovery::end_label(p.peer), to_string(p.state), p.detail},
                      p.state});
      add_fix(discovery::end_label(p.end), p.fix);
    }
  }
  std::string out = table(rows, style);
  const bool ready = exit_code(s) == util::ExitCode::kOk;
  out += fmt::format("\n{}: {} of {} host{} and {} of {} cabled port{} ready\n",
                     ready ? util::green(style, "RDMA ready") : util::red(style, "RDMA not ready"),
                     hosts_ready, s.hosts.size(), s.hosts.size() == 1 ? "" : "s", ports_ready,
                     ports, ports == 1 ? "" : "s");
  if (!fixes.empty()) {
    out += "\nWhat to do:\n";
    for (const auto& f : fixes) out += "  " + f + "\n";
  }
  return out;
}

void to_json(nlohmann::json& j, const RdmaStatus& s) {
  nlohmann::json hosts = nlohmann::json::array();
  for (const auto& h : s.hosts) {
    nlohmann::json ports = nlohmann::json::array();
    for (const auto& p : h.ports) {
      ports.push_back({{"interface", p.end.interface},
                       {"receptacle", opt(p.end.receptacle)},
                       {"rdma_device", opt(p.rdma_device)},
                       {"peer", end_json(p.peer)},
                       {"link_speed_gbps", p.link_speed_gbps},
                       {"port_state", text_or_null(p.port_state)},
                       {"gid", opt(p.gid)},
                       {"state", to_string(p.state)},
                       {"waiting_for", opt(p.waiting_for)},
                       {"detail", p.detail},
                       {"fix", text_or_null(p.fix)}});
    }
    nlohmann::json os;
    if (h.os) os = {{"name", h.os->name}, {"version", h.os->version}, {"build", h.os->build}};
    nlohmann::json platform;
    if (h.macos) platform = *h.macos ? "macos" : "linux";
    hosts.push_back({{"host", h.host},
                     {"platform", platform},
                     {"os", os},
                     {"state", to_string(h.state)},
                     {"detail", h.detail},
                     {"fix", text_or_null(h.fix)},
                     {"devices", h.devices},
                     {"ports", ports}});
  }
  const util::ExitCode rc = exit_code(s);
  j = {{"schema", kRdmaStatusSchema},
       {"ready", rc == util::ExitCode::kOk},
       {"exit_code", util::to_int(rc)},
       {"hosts", hosts}};
}

std::string render_json(const RdmaStatus& s) {
  return util::json_text(nlohmann::json(s), 2) + "\n";
}

}  // namespace cc::provision
