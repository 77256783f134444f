#include "discovery/macos_ifconfig.h"

#include <fmt/format.h>

#include "discovery/natural_sort.h"
#include "discovery/text.h"

namespace cc::discovery {

namespace {

// "en2: flags=8863<UP,...> mtu 1500" -> true and fills name/up/running/mtu.
bool parse_header(std::string_view line, NetInterface& ifc, std::string& error) {
  std::size_t colon = line.find(": flags=");
  if (colon == std::string_view::npos || colon == 0) return false;
  std::string_view name = line.substr(0, colon);
  if (name.find_first_of(" \t") != std::string_view::npos) return false;
  ifc.name = std::string(name);
  std::string_view rest = line.substr(colon + 2);
  std::size_t lt = rest.find('<');
  std::size_t gt = rest.find('>');
  if (lt != std::string_view::npos && gt != std::string_view::npos && lt < gt) {
    std::string_view flags = rest.substr(lt + 1, gt - lt - 1);
    while (!flags.empty()) {
      std::size_t comma = flags.find(',');
      std::string_view f = flags.substr(0, comma);
      if (f == "UP") ifc.up = true;
      if (f == "RUNNING") ifc.running = true;
      if (comma == std::string_view::npos) break;
      flags.remove_prefix(comma + 1);
    }
  }
  auto words = split_words(rest);
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] == "mtu") {
      auto mtu = parse_int(words[i + 1]);
      if (!mtu) {
        error =
            fmt::format("interface {}: mtu {} is not a number", ifc.name, excerpt(words[i + 1]));
        return false;
      }
      ifc.mtu = *mtu;
    }
  }
  return true;
}

}  // namespace

util::Result<std::vector<NetInterface>> parse_ifconfig(std::string_view out) {
  if (blank(out)) return parse_error(kIfconfigCommand, "empty output");
  std::vector<NetInterface> result;
  auto lines = split_lines(out);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line.empty()) continue;
    if (line.front() != ' ' && line.front() != '\t') {
      NetInterface ifc;
      std::string error;
      if (parse_header(line, ifc, error)) {
        result.push_back(std::move(ifc));
      } else if (!error.empty()) {
        return parse_error(kIfconfigCommand, fmt::format("line {}: {}", i + 1, error));
      }
      continue;  // a prompt or an elision: not an interface
    }
    if (result.empty()) continue;
    NetInterface& ifc = result.back();
    auto words = split_words(line);
    if (words.size() < 2) continue;
    if (words[0] == "ether") {
      ifc.mac = std::string(words[1]);
    } else if (words[0] == "inet") {
      ifc.ipv4.emplace_back(words[1]);
    } else if (words[0] == "inet6") {
      std::string_view a = words[1];
      ifc.ipv6.emplace_back(a.substr(0, a.find('%')));
    } else if (words[0] == "member:") {
      ifc.members.emplace_back(words[1]);
    } else if (words[0] == "status:") {
      if (words[1] != "active") ifc.running = false;
    }
  }
  if (result.empty()) {
    return parse_error(
        kIfconfigCommand,
        fmt::format("no interface line (\"NAME: flags=...\") in {}", excerpt(trim(out))));
  }
  for (NetInterface& ifc : result) {
    natural_sort(ifc.members);
    for (const std::string& m : ifc.members) {
      for (NetInterface& other : result) {
        if (other.name == m) other.bridge = ifc.name;
      }
    }
  }
  return result;
}

}  // namespace cc::discovery
