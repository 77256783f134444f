#include "lab/record.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lab/files.h"
#include "lab/plan.h"
#include "util/json_text.h"

namespace cc::lab {

// Field order in lab.json follows the structs (ordered_json); reading takes any order.
using Json = nlohmann::ordered_json;

void to_json(Json& j, const HostRecord& h) {
  j = Json{{"name", h.name},
           {"namespace", h.netns},
           {"address", h.address},
           {"mgmt_interface", h.mgmt_interface},
           {"mgmt_mac", h.mgmt_mac},
           {"mgmt_link", h.mgmt_link},
           {"sshd_pid", h.sshd_pid},
           {"ports", h.ports},
           {"free_ports", h.free_ports},
           {"machine_id", h.machine_id},
           {"data_dir", h.data_dir}};
}

void from_json(const Json& j, HostRecord& h) {
  j.at("name").get_to(h.name);
  j.at("namespace").get_to(h.netns);
  j.at("address").get_to(h.address);
  j.at("mgmt_interface").get_to(h.mgmt_interface);
  j.at("mgmt_mac").get_to(h.mgmt_mac);
  j.at("mgmt_link").get_to(h.mgmt_link);
  j.at("sshd_pid").get_to(h.sshd_pid);
  j.at("ports").get_to(h.ports);
  if (j.contains("free_ports")) j.at("free_ports").get_to(h.free_ports);
  if (j.contains("machine_id")) j.at("machine_id").get_to(h.machine_id);
  if (j.contains("data_dir")) j.at("data_dir").get_to(h.data_dir);
}

void to_json(Json& j, const PortRecord& p) {
  j = Json{{"host", p.host}, {"port", p.port}, {"mac", p.mac}};
}

void from_json(const Json& j, PortRecord& p) {
  j.at("host").get_to(p.host);
  j.at("port").get_to(p.port);
  j.at("mac").get_to(p.mac);
}

void to_json(Json& j, const CableRecord& c) {
  j = Json{{"a", c.a}, {"b", c.b}};
}

void from_json(const Json& j, CableRecord& c) {
  j.at("a").get_to(c.a);
  j.at("b").get_to(c.b);
}

void to_json(Json& j, const LabRecord& r) {
  j = Json{{"version", r.version},
           {"name", r.name},
           {"tag", r.tag},
           {"state", r.state},
           {"dir", r.dir},
           {"data_dir", r.data_dir},
           {"data_size", r.data_size},
           {"topology", r.topology},
           {"subnet", r.subnet},
           {"bridge", r.bridge},
           {"bridge_address", r.bridge_address},
           {"namespaces", r.namespaces},
           {"hosts", r.hosts},
           {"cables", r.cables}};
}

void from_json(const Json& j, LabRecord& r) {
  j.at("version").get_to(r.version);
  j.at("name").get_to(r.name);
  j.at("tag").get_to(r.tag);
  j.at("state").get_to(r.state);
  j.at("dir").get_to(r.dir);
  if (j.contains("data_dir")) j.at("data_dir").get_to(r.data_dir);
  if (j.contains("data_size")) j.at("data_size").get_to(r.data_size);
  j.at("topology").get_to(r.topology);
  j.at("subnet").get_to(r.subnet);
  j.at("bridge").get_to(r.bridge);
  j.at("bridge_address").get_to(r.bridge_address);
  j.at("namespaces").get_to(r.namespaces);
  j.at("hosts").get_to(r.hosts);
  j.at("cables").get_to(r.cables);
}

LabRecord record_from_plan(const LabPlan& plan, std::string dir, std::uint64_t data_size) {
  LabRecord r;
  r.name = plan.name;
  r.tag = plan.tag;
  r.state = "creating";
  r.dir = std::move(dir);
  r.data_dir = data_dir(plan.name).string();
  r.data_size = data_size;
  r.topology = plan.topology;
  r.subnet = format_prefix(plan.subnet);
  r.bridge = plan.bridge;
  r.bridge_address = plan.bridge_address;
  for (const auto& h : plan.hosts) {
    r.namespaces.push_back(h.netns);
    HostRecord hr{h.name,
                  h.netns,
                  h.address,
                  std::string(kMgmtInterface),
                  h.mgmt_mac,
                  h.mgmt_link,
                  0,
                  {},
                  {},
                  "",
                  host_data_dir(plan.name, h.name).string()};
    for (int p = 1; p <= h.ports; ++p) hr.ports.push_back(port_name(p));
    for (int p = h.ports + 1; p <= h.receptacles; ++p) hr.free_ports.push_back(port_name(p));
    r.hosts.push_back(std::move(hr));
  }
  auto end = [&plan](const PortEnd& e) {
    return PortRecord{plan.hosts[static_cast<std::size_t>(e.host - 1)].name, port_name(e.port),
                      e.mac};
  };
  for (const auto& c : plan.cables) r.cables.push_back({end(c.a), end(c.b)});
  return r;
}

std::string lab_json_text(const LabRecord& lab) {
  Json j = lab;
  return util::json_text(j, 2) + "\n";
}

util::Result<LabRecord> parse_lab_json(std::string_view text, std::string_view source) {
  try {
    return Json::parse(text).get<LabRecord>();
  } catch (const nlohmann::json::exception& e) {
    return util::error(util::ExitCode::kUsage,
                       fmt::format("{}: not a lab record ({}); `clusterctl lab down` still "
                                   "removes the lab by name",
                                   source, e.what()));
  }
}

}  // namespace cc::lab
