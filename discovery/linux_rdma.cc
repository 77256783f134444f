#include "discovery/linux_rdma.h"

#include <algorithm>

#include <fmt/format.h>

#include "discovery/json_util.h"
#include "discovery/natural_sort.h"
#include "discovery/text.h"

namespace cc::discovery {

using nlohmann::json;

bool is_no_rdma_subsystem(std::string_view err) {
  return err.find("Failed to open NETLINK_RDMA socket") != std::string_view::npos;
}

util::Result<RdmaLinks> parse_rdma_link(std::string_view out, std::string_view err,
                                        int exit_status) {
  RdmaLinks links;
  if (exit_status != 0) {
    if (is_no_rdma_subsystem(err) || is_no_rdma_subsystem(out)) {
      links.subsystem = false;
      return links;
    }
    return parse_error(kRdmaLinkCommand,
                       fmt::format("exit status {}: {}", exit_status, excerpt(trim(err), 200)));
  }
  if (blank(out)) return links;
  auto parsed = parse_json_output(kRdmaLinkCommand, out);
  if (!parsed) return parsed.error();
  if (!parsed->is_array()) return parse_error(kRdmaLinkCommand, "expected a JSON array of links");
  for (std::size_t i = 0; i < parsed->size(); ++i) {
    const json& e = (*parsed)[i];
    auto name = get_string(e, "ifname");
    if (!name || name->empty()) {
      return parse_error(kRdmaLinkCommand, fmt::format("link [{}] has no \"ifname\"", i));
    }
    auto dev = std::find_if(links.devices.begin(), links.devices.end(),
                            [&](const RdmaDevice& d) { return d.name == *name; });
    if (dev == links.devices.end()) {
      links.devices.push_back(RdmaDevice{});
      dev = links.devices.end() - 1;
      dev->name = *name;
    }
    RdmaPort p;
    p.port = get_int(e, "port").value_or(1);
    p.state = get_string(e, "state").value_or("");
    p.active = p.state == "ACTIVE";
    auto netdev = get_string(e, "netdev");
    if (netdev && !dev->netdev) dev->netdev = netdev;
    dev->ports.push_back(std::move(p));
  }
  std::stable_sort(
      links.devices.begin(), links.devices.end(),
      [](const RdmaDevice& a, const RdmaDevice& b) { return natural_less(a.name, b.name); });
  return links;
}

}  // namespace cc::discovery
