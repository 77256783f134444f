#include "discovery/ibv_devinfo.h"

#include <fmt/format.h>

#include "discovery/text.h"

namespace cc::discovery {

namespace {

bool is_key(std::string_view w) {
  return w.size() > 1 && w.back() == ':';
}

util::Error bad(std::string_view what) {
  return parse_error(kIbvDevinfoCommand, what);
}

}  // namespace

util::Result<std::vector<RdmaDevice>> parse_ibv_devinfo(std::string_view out) {
  if (blank(out)) return bad("empty output");
  if (out.find("No IB devices found") != std::string_view::npos &&
      out.find("hca_id:") == std::string_view::npos) {
    return std::vector<RdmaDevice>{};
  }
  auto w = split_words(out);
  std::vector<RdmaDevice> devices;
  // The words after w[i] up to the next key, joined by one space ("Thunderbolt (100)").
  auto value_after = [&](std::size_t i) {
    std::string v;
    for (std::size_t k = i + 1;
         k < w.size() && !is_key(w[k]) && w[k] != "..." && w[k].substr(0, 4) != "GID["; ++k) {
      if (!v.empty()) v += ' ';
      v += w[k];
    }
    return v;
  };
  for (std::size_t i = 0; i < w.size(); ++i) {
    std::string_view key = w[i];
    bool has_next = i + 1 < w.size();
    if (key == "hca_id:") {
      if (!has_next) return bad("\"hca_id:\" without a device name at the end");
      devices.push_back(RdmaDevice{});
      devices.back().name = std::string(w[i + 1]);
    } else if (key == "transport:" && !devices.empty()) {
      devices.back().transport = value_after(i);
    } else if (key == "node_guid:" && !devices.empty()) {
      devices.back().node_guid = value_after(i);
    } else if (key == "port:") {
      if (devices.empty()) return bad("\"port:\" before any \"hca_id:\"");
      auto n = has_next ? parse_int(w[i + 1]) : std::nullopt;
      if (!n) {
        return bad(fmt::format("device {}: port number {} is not a number", devices.back().name,
                               has_next ? excerpt(w[i + 1]) : "(missing)"));
      }
      RdmaPort p;
      p.port = *n;
      devices.back().ports.push_back(std::move(p));
    } else if (key == "state:" && !devices.empty() && !devices.back().ports.empty()) {
      RdmaPort& p = devices.back().ports.back();
      p.state = has_next ? std::string(w[i + 1]) : "";
      p.active = p.state == "PORT_ACTIVE";
    } else if (key == "active_mtu:" && !devices.empty() && !devices.back().ports.empty()) {
      devices.back().ports.back().active_mtu = has_next ? parse_int(w[i + 1]).value_or(0) : 0;
    } else if (key == "link_layer:" && !devices.empty() && !devices.back().ports.empty()) {
      devices.back().ports.back().link_layer = value_after(i);
    } else if (key.substr(0, 4) == "GID[") {
      // "GID[" "1]:" or "GID[1]:", then the GID (Linux: "fe80::...," "RoCE" "v2").
      std::string index_text(key.substr(4));
      std::size_t k = i;
      while (index_text.find("]:") == std::string::npos && k + 1 < w.size()) {
        index_text += w[++k];
      }
      std::size_t close = index_text.find("]:");
      if (devices.empty() || devices.back().ports.empty()) return bad("a GID before any port");
      auto index = close == std::string::npos
                       ? std::nullopt
                       : parse_int(std::string_view(index_text).substr(0, close));
      if (!index) return bad(fmt::format("GID index {} is not a number", excerpt(index_text)));
      if (k + 1 >= w.size()) return bad(fmt::format("GID[{}] without a value at the end", *index));
      std::string_view gid = w[k + 1];
      if (!gid.empty() && gid.back() == ',') gid.remove_suffix(1);
      devices.back().ports.back().gids.push_back(Gid{*index, std::string(gid)});
      i = k + 1;
    }
  }
  if (devices.empty()) return bad(fmt::format("no \"hca_id:\" in {}", excerpt(trim(out))));
  return devices;
}

}  // namespace cc::discovery
