#include "remote/inventory.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (moved there in fmt 11)
#include <pwd.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "util/address.h"
#include "util/host_name.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"
#include "util/state_dir.h"
#include "util/suggest.h"
#include "util/text.h"
#include "util/yaml_reader.h"

namespace cc::remote {
namespace {

using util::ExitCode;

const std::vector<std::string> kTopKeys = {"ssh_config", "known_hosts", "hosts"};
const std::vector<std::string> kHostKeys = {"name", "ssh", "address"};

std::filesystem::path resolve(const std::filesystem::path& file, const std::string& value) {
  std::filesystem::path p(value);
  if (p.is_absolute()) return p;
  return (std::filesystem::absolute(file).parent_path() / p).lexically_normal();
}

// A host name as first written, and its line (1-based), for "appears twice".
struct NameAt {
  std::string name;
  int line = 0;
};

// Where the hosts of the file are reached: "ssh KEY" (the ssh destination by util::host_key)
// and "address A" -> the entry that first gave it, so a second name for one machine is named.
using ReachedAt = std::unordered_map<std::string, NameAt>;

// One host entry, `- name: h1` with optional ssh and address, of `hosts_listed` entries. Every
// mistake of the entry is added to `errors` (a bad key, a bad value, a bad or repeated name:
// each on its own); the host is returned only when there is none.
std::optional<InventoryHost> host_entry(const util::YamlReader& r, const util::Field& entry,
                                        std::size_t hosts_listed,
                                        std::unordered_map<std::string, NameAt>& names,
                                        ReachedAt& reached, std::vector<util::Error>& errors) {
  const std::size_t before = errors.size();
  auto fields = r.mapping(entry, kHostKeys, errors);
  if (!fields) {
    errors.push_back(fields.error());
    return std::nullopt;
  }
  const bool bad_key = errors.size() != before;  // it may be the misspelt 'name'
  InventoryHost host;
  const util::Field* name_field = nullptr;
  const util::Field* ssh_field = nullptr;
  const util::Field* address_field = nullptr;
  for (const util::Field& f : *fields) {
    auto v = f.key == "address" ? r.address(f) : r.nonempty_string(f);
    if (!v) {
      errors.push_back(v.error());
      continue;
    }
    if (f.key == "name") {
      host.name = *v;
      name_field = &f;
    }
    if (f.key == "ssh") {
      host.ssh = *v;
      ssh_field = &f;
    }
    if (f.key == "address") {
      host.address = *v;
      address_field = &f;
    }
  }
  if (ssh_field != nullptr && !host.ssh.empty()) {
    if (auto why = util::ssh_destination_problem(host.ssh)) {
      errors.push_back(r.error(ssh_field->mark(), fmt::format("'{}': {}", ssh_field->path, *why)));
    }
  }
  // The management address is where the other hosts reach this one (rank 0's is the
  // coordinator): util::rank_address_problem, the one check of an address handed to ranks, by
  // the rule every hostfile and cluster state reader holds (a link-local IPv6 one names no
  // interface of the connecting host, a self-assigned IPv4 one leaves by whichever port holds
  // the 169.254/16 route, a loopback one is each host itself; one host alone may use any).
  if (address_field != nullptr && hosts_listed >= 2) {
    if (auto why = util::rank_address_problem(host.address)) {
      errors.push_back(r.error(
          address_field->mark(),
          fmt::format("'{}': '{}'{} {}: in an inventory of {} hosts the management address is "
                      "where the other hosts reach this one (rank 0's is the coordinator): give "
                      "an address they reach it on ('ssh' may still name this one, as ssh "
                      "takes it)",
                      address_field->path, host.address,
                      host.name.empty() ? std::string() : fmt::format(" of host '{}'", host.name),
                      *why, hosts_listed)));
    }
  }
  const bool named = std::any_of(fields->begin(), fields->end(),
                                 [](const util::Field& f) { return f.key == "name"; });
  if (!named && !bad_key) {
    errors.push_back(r.error(entry.mark(), fmt::format("'{}' has no 'name': give each host one, "
                                                       "like '- name: h1'",
                                                       entry.path)));
  }
  if (name_field != nullptr) {
    const util::Field& nf = *name_field;
    if (auto why = util::host_name_problem(host.name)) {
      errors.push_back(r.error(nf.mark(), *why));
    } else if (host.name == "all") {
      errors.push_back(
          r.error(nf.mark(), "host name 'all' is reserved: --hosts all means every host"));
    } else {
      // DNS names ignore case and a final dot: "Studio1" and "studio1." are studio1 again.
      // Checked whatever else is wrong with the entry: a user fixing its address should learn
      // of the repeated name in the same run.
      auto [first, added] =
          names.emplace(util::host_key(host.name), NameAt{host.name, nf.mark().line + 1});
      if (!added) {
        const NameAt& was = first->second;
        if (was.name == host.name) {
          errors.push_back(r.error(nf.mark(), fmt::format("host '{}' appears twice (first at "
                                                          "line {})",
                                                          host.name, was.line)));
        } else {
          errors.push_back(
              r.error(nf.mark(), fmt::format("host '{}' appears twice: it is '{}' "
                                             "of line {}{}; list each host once",
                                             host.name, was.name, was.line,
                                             util::same_host_note(was.name, host.name))));
        }
      }
    }
  }
  if (errors.size() != before) return std::nullopt;
  if (host.ssh.empty()) host.ssh = host.name;
  // One machine under two names (an alias): launch would give it two entries of the MLX
  // hostfile, one rank each, where an MLX hostfile holds one entry per host (our reader refuses
  // a host named twice: provision/mlx_hostfile.cc). Refused, naming both entries; compared as
  // written (no ssh_config or DNS lookup here: loading an inventory touches no network).
  const util::Field& ssh_at = ssh_field != nullptr ? *ssh_field : *name_field;
  const std::pair<std::string, const util::Field*> keys[] = {
      {"ssh " + util::host_key(host.ssh), &ssh_at},
      {"address " + host.address, address_field}};
  for (const auto& key : keys) {
    if (key.second == nullptr) continue;
    const NameAt here{host.name, key.second->mark().line + 1};
    auto [first, added] = reached.emplace(key.first, here);
    if (added) continue;
    const bool by_ssh = key.first.rfind("ssh ", 0) == 0;
    errors.push_back(r.error(
        key.second->mark(),
        fmt::format("hosts '{}' and '{}' (line {}) are one machine: both {} {}; list each "
                    "machine once (for more ranks on it, set ranks_per_host in the job)",
                    host.name, first->second.name, first->second.line,
                    by_ssh ? "are reached as ssh" : "have the address",
                    by_ssh ? host.ssh : host.address)));
    return std::nullopt;
  }
  return host;
}

util::Result<Inventory> parse(const std::filesystem::path& file, const std::string& text) {
  const util::YamlReader r(file.string(), "the inventory");
  auto doc = r.load(text);
  if (!doc) return doc.error();
  if (!doc->IsMap()) {
    return r.error(doc->Mark(), fmt::format("expected a mapping with a 'hosts:' list (see the "
                                            "format in README.md, \"An inventory is a YAML "
                                            "file\"), got {}",
                                            util::YamlReader::kind(*doc)));
  }
  // Every mistake of the file at once: each entry is read on its own.
  std::vector<util::Error> errors;
  auto fields = r.mapping(util::YamlReader::root(*doc), kTopKeys, errors);
  if (!fields) return fields.error();
  Inventory inv;
  inv.path = file;
  bool has_hosts = false;
  // By util::host_key; a map: 40,000 hosts load in linear time.
  std::unordered_map<std::string, NameAt> names;
  ReachedAt reached;
  for (const util::Field& f : *fields) {
    if (f.key != "hosts") {
      auto v = r.nonempty_string(f);
      if (!v) {
        errors.push_back(v.error());
        continue;
      }
      (f.key == "ssh_config" ? inv.ssh_config : inv.known_hosts) = resolve(file, *v);
      continue;
    }
    has_hosts = true;
    auto entries = r.list(f, "a list of entries like '- name: h1'");
    if (!entries) {
      errors.push_back(entries.error());
      continue;
    }
    if (entries->empty()) errors.push_back(r.error(f.mark(), "'hosts' lists no host"));
    std::size_t n = 0;
    for (const util::Field& e : *entries) {
      // An inventory of a million hosts takes seconds: Ctrl-C or SIGTERM ends it (exit 130).
      if (++n % util::YamlReader::kInterruptCheckEvery == 0 && util::interrupted()) {
        return util::interrupted_error(" while reading " + file.string());
      }
      if (auto h = host_entry(r, e, entries->size(), names, reached, errors)) {
        inv.hosts.push_back(std::move(*h));
      }
    }
  }
  errors = r.in_file_order(std::move(errors));
  if (!has_hosts) {
    errors.push_back(r.error(doc->Mark(), "missing 'hosts:', the list of the cluster's hosts"));
  }
  if (!errors.empty()) return util::YamlReader::all(errors);
  return inv;
}

std::string relative_if_inside(const std::filesystem::path& dir, const std::filesystem::path& p) {
  std::filesystem::path rel = p.lexically_relative(dir);
  if (rel.empty() || *rel.begin() == "..") return p.string();
  return rel.string();
}

}  // namespace

HostIndex::HostIndex(const std::vector<InventoryHost>& hosts) {
  by_key_.reserve(hosts.size());
  for (const auto& h : hosts) by_key_.emplace(util::host_key(h.name), &h);
}

const InventoryHost* HostIndex::find(std::string_view name) const {
  const auto found = by_key_.find(util::host_key(name));
  return found == by_key_.end() ? nullptr : found->second;
}

const InventoryHost* Inventory::find(std::string_view name) const {
  for (const auto& h : hosts) {
    if (util::same_host_name(h.name, name)) return &h;
  }
  return nullptr;
}

HostIndex Inventory::by_name() const { return HostIndex(hosts); }

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
    std::string name(util::trim(spec.substr(start, comma - start)));
    if (!name.empty()) names.push_back(std::move(name));
    start = comma + 1;
  }
  return names;
}

util::Status check_distinct_hosts(const std::vector<std::string>& names, std::string_view what) {
  auto same = util::same_host(names);
  if (!same) return {};
  const std::string& a = names[same->first];
  const std::string& b = names[same->second];
  if (a == b) {
    return util::error(ExitCode::kUsage,
                       fmt::format("{} names host '{}' twice: give it once", what, a));
  }
  return util::error(ExitCode::kUsage,
                     fmt::format("{} names one host twice, as '{}' and '{}'{}: give it once", what,
                                 a, b, util::same_host_note(a, b)));
}

util::Error unknown_host_error(std::string_view name, const std::vector<std::string>& known,
                               std::string_view where) {
  constexpr size_t kListed = 12;
  std::string listed = fmt::format(
      "{}", fmt::join(known.begin(),
                      known.begin() + static_cast<std::ptrdiff_t>(std::min(known.size(), kListed)),
                      ", "));
  if (known.size() > kListed) listed += fmt::format(" +{} more", known.size() - kListed);
  return util::error(ExitCode::kUsage,
                     fmt::format("no host {} in {}{}; its hosts: {}", util::quote(name), where,
                                 util::did_you_mean(name, known), listed));
}

util::Result<std::vector<InventoryHost>> select_hosts(const Inventory& inv, std::string_view spec) {
  if (util::trim(spec) == "all") return inv.hosts;
  std::vector<std::string> names = split_host_list(spec);
  if (names.empty()) {
    return util::error(ExitCode::kUsage, "--hosts is empty: give host names (h1,h2) or 'all'");
  }
  if (auto st = check_distinct_hosts(names, "--hosts"); !st) return st.error();
  const auto by_name = inv.by_name();
  std::vector<InventoryHost> chosen;
  for (const auto& name : names) {
    const InventoryHost* h = by_name.find(name);
    if (h == nullptr) {
      return unknown_host_error(name, inv.names(),
                                inv.path.empty() ? "the inventory" : inv.path.string());
    }
    chosen.push_back(*h);
  }
  return chosen;
}

std::filesystem::path lab_dir(const std::string& name) {
  return util::state_dir() / "labs" / name;
}

util::Status validate_lab_name(std::string_view name) {
  constexpr std::size_t kMaxLabName = 32;
  auto ok_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  };
  bool ok = !name.empty() && name.size() <= kMaxLabName && name[0] != '-' && name[0] != '_' &&
            std::all_of(name.begin(), name.end(), ok_char);
  if (!ok) {
    return util::error(util::ExitCode::kUsage,
                       fmt::format("invalid lab name '{}': use 1 to {} letters, digits, '-' or "
                                   "'_', starting with a letter or digit",
                                   name, kMaxLabName));
  }
  return {};
}

}  // namespace cc::remote
