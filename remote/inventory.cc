#include "remote/inventory.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (moved there in fmt 11)
#include <pwd.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "util/atomic_file.h"
#include "util/state_dir.h"
#include "util/suggest.h"

namespace cc::remote {
namespace {

using util::ExitCode;

const std::vector<std::string> kTopKeys = {"ssh_config", "known_hosts", "hosts"};
const std::vector<std::string> kHostKeys = {"name", "ssh", "address"};
constexpr size_t kMaxNameLength = 64;

// "FILE:LINE:COLUMN: what" (yaml-cpp marks count from 0).
util::Error at(const std::filesystem::path& file, const YAML::Mark& m, std::string_view what) {
  if (m.line < 0) return util::error(ExitCode::kUsage, fmt::format("{}: {}", file.string(), what));
  return util::error(ExitCode::kUsage,
                     fmt::format("{}:{}:{}: {}", file.string(), m.line + 1, m.column + 1, what));
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(name.front())) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

// Rejects keys not in `known`, suggesting the closest known one.
util::Status check_keys(const std::filesystem::path& file, const YAML::Node& map,
                        const std::vector<std::string>& known, std::string_view where) {
  std::vector<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it->first.IsScalar()) return at(file, it->first.Mark(), "a key must be a plain word");
    std::string key = it->first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return at(file, it->first.Mark(),
                fmt::format("unknown key '{}' in {}{}; known keys: {}", key, where,
                            util::did_you_mean(key, known), fmt::join(known, ", ")));
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return at(file, it->first.Mark(), fmt::format("'{}' appears twice in {}", key, where));
    }
    seen.push_back(key);
  }
  return {};
}

util::Result<std::string> scalar(const std::filesystem::path& file, const YAML::Node& node,
                                 std::string_view key) {
  if (!node.IsScalar()) {
    return at(file, node.Mark(), fmt::format("'{}' must be a single value (a string)", key));
  }
  return node.Scalar();
}

std::filesystem::path resolve(const std::filesystem::path& file, const std::string& value) {
  std::filesystem::path p(value);
  if (p.is_absolute()) return p;
  return (std::filesystem::absolute(file).parent_path() / p).lexically_normal();
}

util::Result<Inventory> parse(const std::filesystem::path& file, const std::string& text) {
  YAML::Node loaded;
  try {
    loaded = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return at(file, e.mark, e.msg);
  }
  const YAML::Node& root = loaded;  // const: lookups of absent keys must not add them
  if (!root.IsMap()) {
    return at(file, root.Mark(),
              "expected a mapping with a 'hosts:' list (see the format in "
              "README.md, \"An inventory is a YAML file\")");
  }
  if (auto st = check_keys(file, root, kTopKeys, "the inventory"); !st) return st.error();

  Inventory inv;
  inv.path = file;
  for (const char* key : {"ssh_config", "known_hosts"}) {
    if (!root[key]) continue;
    auto v = scalar(file, root[key], key);
    if (!v) return v.error();
    if (v->empty()) return at(file, root[key].Mark(), fmt::format("'{}' is empty", key));
    (std::string_view(key) == "ssh_config" ? inv.ssh_config : inv.known_hosts) = resolve(file, *v);
  }

  YAML::Node hosts = root["hosts"];
  if (!hosts) return at(file, root.Mark(), "missing 'hosts:', the list of the cluster's hosts");
  if (!hosts.IsSequence()) {
    return at(file, hosts.Mark(), "'hosts' must be a list of entries like '- name: h1'");
  }
  if (hosts.size() == 0) return at(file, hosts.Mark(), "'hosts' lists no host");
  for (const auto& h : hosts) {
    if (!h.IsMap()) return at(file, h.Mark(), "each host must be a mapping like 'name: h1'");
    if (auto st = check_keys(file, h, kHostKeys, "a host"); !st) return st.error();
    if (!h["name"]) return at(file, h.Mark(), "this host has no 'name'");
    InventoryHost host;
    auto name = scalar(file, h["name"], "name");
    if (!name) return name.error();
    if (!valid_name(*name)) {
      return at(file, h["name"].Mark(),
                fmt::format("host name '{}' is not valid: use letters, digits, '.', '_' and "
                            "'-', starting with a letter or digit, at most {} characters",
                            *name, kMaxNameLength));
    }
    if (*name == "all") {
      return at(file, h["name"].Mark(),
                "host name 'all' is reserved: --hosts all means every host");
    }
    if (inv.find(*name) != nullptr) {
      return at(file, h["name"].Mark(), fmt::format("host '{}' appears twice", *name));
    }
    host.name = *name;
    host.ssh = host.name;
    if (h["ssh"]) {
      auto ssh = scalar(file, h["ssh"], "ssh");
      if (!ssh) return ssh.error();
      if (ssh->empty()) return at(file, h["ssh"].Mark(), "'ssh' is empty");
      host.ssh = *ssh;
    }
    if (h["address"]) {
      auto addr = scalar(file, h["address"], "address");
      if (!addr) return addr.error();
      host.address = *addr;
    }
    inv.hosts.push_back(std::move(host));
  }
  return inv;
}

std::string relative_if_inside(const std::filesystem::path& dir, const std::filesystem::path& p) {
  std::filesystem::path rel = p.lexically_relative(dir);
  if (rel.empty() || *rel.begin() == "..") return p.string();
  return rel.string();
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

const InventoryHost* Inventory::find(std::string_view name) const {
  for (const auto& h : hosts) {
    if (h.name == name) return &h;
  }
  return nullptr;
}

std::vector<std::string> Inventory::names() const {
  std::vector<std::string> out;
  for (const auto& h : hosts) out.push_back(h.name);
  return out;
}

util::Result<Inventory> load_inventory(const std::filesystem::path& path) {
  auto text = util::read_file(path);
  if (!text) return text.error();
  return parse(path, *text);
}

util::Status save_inventory(const std::filesystem::path& path, const Inventory& inv) {
  std::filesystem::path dir = std::filesystem::absolute(path).parent_path().lexically_normal();
  YAML::Emitter out;
  out << YAML::BeginMap;
  if (inv.ssh_config) {
    out << YAML::Key << "ssh_config" << YAML::Value << relative_if_inside(dir, *inv.ssh_config);
  }
  if (inv.known_hosts) {
    out << YAML::Key << "known_hosts" << YAML::Value << relative_if_inside(dir, *inv.known_hosts);
  }
  out << YAML::Key << "hosts" << YAML::Value << YAML::BeginSeq;
  for (const auto& h : inv.hosts) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << h.name;
    if (!h.ssh.empty() && h.ssh != h.name) out << YAML::Key << "ssh" << YAML::Value << h.ssh;
    if (!h.address.empty()) out << YAML::Key << "address" << YAML::Value << h.address;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  if (!out.good()) {
    return util::error(ExitCode::kUsage, fmt::format("{}: cannot write the inventory: {}",
                                                     path.string(), out.GetLastError()));
  }
  std::string text =
      "# clusterctl inventory (format: README.md, \"An inventory is a YAML file\")\n";
  text += out.c_str();
  text += '\n';
  return util::write_file_atomic(path, text, 0644);
}

std::vector<std::string> split_host_list(std::string_view spec) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string name = trim(spec.substr(start, comma - start));
    if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(std::move(name));
    }
    start = comma + 1;
  }
  return names;
}

util::Result<std::vector<InventoryHost>> select_hosts(const Inventory& inv, std::string_view spec) {
  if (trim(spec) == "all") return inv.hosts;
  std::vector<std::string> names = split_host_list(spec);
  if (names.empty()) {
    return util::error(ExitCode::kUsage, "--hosts is empty: give host names (h1,h2) or 'all'");
  }
  std::vector<InventoryHost> chosen;
  for (const auto& name : names) {
    const InventoryHost* h = inv.find(name);
    if (h == nullptr) {
      std::vector<std::string> known = inv.names();
      constexpr size_t kListed = 12;
      std::string listed = fmt::format(
          "{}",
          fmt::join(known.begin(),
                    known.begin() + static_cast<std::ptrdiff_t>(std::min(known.size(), kListed)),
                    ", "));
      if (known.size() > kListed) listed += fmt::format(" +{} more", known.size() - kListed);
      return util::error(ExitCode::kUsage,
                         fmt::format("no host '{}' in {}{}; its hosts: {}", name,
                                     inv.path.empty() ? "the inventory" : inv.path.string(),
                                     util::did_you_mean(name, known), listed));
    }
    chosen.push_back(*h);
  }
  return chosen;
}

std::filesystem::path lab_dir(const std::string& name) {
  return util::state_dir() / "labs" / name;
}

}  // namespace cc::remote
