#include "discovery/linux_ip.h"

#include "discovery/json_util.h"
#include "discovery/natural_sort.h"
#include "discovery/text.h"

namespace cc::discovery {

using nlohmann::json;

namespace {

util::Result<std::vector<NetInterface>> parse_ip(std::string_view command, std::string_view out) {
  auto parsed = parse_json_output(command, out);
  if (!parsed) return parsed.error();
  if (!parsed->is_array()) return parse_error(command, "expected a JSON array of interfaces");
  std::vector<NetInterface> result;
  for (const json& e : *parsed) {
    auto name = get_string(e, "ifname");
    if (!name || name->empty()) continue;
    NetInterface ifc;
    ifc.name = *name;
    if (get_string(e, "link_type").value_or("ether") == "ether") {
      ifc.mac = get_string(e, "address").value_or("");
    }
    if (const json* flags = get_array(e, "flags")) {
      for (const json& f : *flags) {
        if (!f.is_string()) continue;
        if (f == "UP") ifc.up = true;
        if (f == "LOWER_UP") ifc.running = true;
      }
    }
    ifc.mtu = get_int(e, "mtu").value_or(0);
    ifc.bridge = get_string(e, "master");
    if (const json* info = get_object(e, "linkinfo")) {
      ifc.kind = get_string(*info, "info_kind").value_or("");
    } else if (get_string(e, "link_type") == "loopback") {
      ifc.kind = "loopback";
    }
    if (const json* addrs = get_array(e, "addr_info")) {
      for (const json& a : *addrs) {
        auto family = get_string(a, "family");
        auto local = get_string(a, "local");
        if (!family || !local) continue;
        if (*family == "inet") ifc.ipv4.push_back(*local);
        if (*family == "inet6") ifc.ipv6.push_back(*local);
      }
    }
    result.push_back(std::move(ifc));
  }
  for (NetInterface& br : result) {
    for (const NetInterface& m : result) {
      if (m.bridge == br.name) br.members.push_back(m.name);
    }
    natural_sort(br.members);
  }
  return result;
}

}  // namespace

util::Result<std::vector<NetInterface>> parse_ip_addr(std::string_view out,
                                                      std::string_view command) {
  return parse_ip(command, out);
}

util::Result<std::vector<NetInterface>> parse_ip_link(std::string_view out) {
  return parse_ip(kIpLinkCommand, out);
}

}  // namespace cc::discovery
