#include "discovery/cluster_state.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "discovery/fix_command.h"
#include "discovery/json_fields.h"
#include "discovery/json_util.h"
#include "remote/inventory.h"
#include "util/address.h"
#include "util/host_name.h"
#include "util/atomic_file.h"
#include "util/ipv4.h"
#include "util/json_text.h"
#include "util/suggest.h"

namespace cc::discovery {

using detail::BadField;
using detail::opt;
using detail::read;
using nlohmann::json;

util::ExitCode HostProblem::code() const {
  if (unreachable()) return util::ExitCode::kUnreachable;
  if (bad_destination()) return util::ExitCode::kUsage;
  return util::ExitCode::kCheckFailed;
}

HostProblem host_problem(const std::string& host, const util::Error& e) {
  const util::ExitCode code =
      e.code == util::ExitCode::kUnreachable || e.code == util::ExitCode::kUsage
          ? e.code
          : util::ExitCode::kCheckFailed;
  // Errors from the executor already start with the host name; parsers' ones too.
  return HostProblem{host, util::to_int(code),
                     e.message.starts_with(host) ? e.message : host + ": " + e.message};
}

const HostFacts* ClusterState::find_host(const std::string& name) const {
  for (const auto& h : hosts) {
    if (h.host == name) return &h;
  }
  return nullptr;
}

const char* to_string(CableSource s) {
  return s == CableSource::kThunderbolt ? "thunderbolt" : "neighbour";
}

std::string port_label(const CableEnd& end) {
  if (end.receptacle && !end.interface.empty()) {
    return fmt::format("receptacle {} ({})", *end.receptacle, end.interface);
  }
  if (end.receptacle) return fmt::format("receptacle {}", *end.receptacle);
  return end.interface.empty() ? std::string("unknown port") : end.interface;
}

std::string end_label(const CableEnd& end) {
  return fmt::format("{} {}", end.host, port_label(end));
}

CableEnd end_of(const HostFacts& host, const Port& port) {
  CableEnd e;
  e.host = host.host;
  if (port.interface) e.interface = port.interface->name;
  e.receptacle = port.receptacle;
  e.rdma_device = port.rdma_device;
  return e;
}

void to_json(json& j, const CableEnd& v) {
  j = json{{"host", v.host},
           {"interface", v.interface},
           {"receptacle", opt(v.receptacle)},
           {"rdma_device", opt(v.rdma_device)}};
}
static void from_json(const json& j, CableEnd& v) {
  read(j, "host", v.host);
  read(j, "interface", v.interface);
  read(j, "receptacle", v.receptacle);
  read(j, "rdma_device", v.rdma_device);
}

static void from_json(const json& j, CableSource& v) {
  std::string s = j.get<std::string>();
  if (s == "thunderbolt") {
    v = CableSource::kThunderbolt;
  } else if (s == "neighbour") {
    v = CableSource::kNeighbour;
  } else {
    throw BadField(fmt::format("\"{}\" is neither \"thunderbolt\" nor \"neighbour\"", s));
  }
}

void to_json(json& j, const Cable& v) {
  json sources = json::array();
  for (auto s : v.sources) sources.push_back(to_string(s));
  j = json{{"a", v.a},
           {"b", v.b},
           {"link_speed_gbps", v.link_speed_gbps},
           {"generation", v.generation},
           {"sources", sources},
           {"seen_from_a", v.seen_from_a},
           {"seen_from_b", v.seen_from_b}};
}
static void from_json(const json& j, Cable& v) {
  read(j, "a", v.a);
  read(j, "b", v.b);
  read(j, "link_speed_gbps", v.link_speed_gbps);
  read(j, "generation", v.generation);
  read(j, "sources", v.sources);
  read(j, "seen_from_a", v.seen_from_a);
  read(j, "seen_from_b", v.seen_from_b);
}

void to_json(json& j, const HostProblem& v) {
  j = json{{"host", v.host}, {"exit_code", v.exit_code}, {"message", v.message}};
}
static void from_json(const json& j, HostProblem& v) {
  read(j, "host", v.host);
  read(j, "exit_code", v.exit_code);
  read(j, "message", v.message);
}

void to_json(json& j, const LinkAddress& v) {
  j = json{{"a", v.a},
           {"b", v.b},
           {"subnet", v.subnet},
           {"a_address", v.a_address},
           {"b_address", v.b_address},
           {"prefix_length", v.prefix_length}};
}
static void from_json(const json& j, LinkAddress& v) {
  read(j, "a", v.a);
  read(j, "b", v.b);
  read(j, "subnet", v.subnet);
  read(j, "a_address", v.a_address);
  read(j, "b_address", v.b_address);
  read(j, "prefix_length", v.prefix_length);
}

void to_json(json& j, const ClusterState& v) {
  j = json{{"schema", kClusterSchema},
           {"created_at", v.created_at},
           {"hosts", v.hosts},
           {"cables", v.cables},
           {"problems", v.problems},
           {"network", v.network}};
  if (!v.lab.empty()) j["lab"] = v.lab;
}

namespace {

constexpr const char* kCloneAdvice =
    "if they are two machines cloned from one image, give one of them ";
constexpr const char* kMachineIdAdvice =
    "its own machine ID (`sudo rm /etc/machine-id && sudo systemd-machine-id-setup`, then "
    "reboot it)";
constexpr const char* kHostKeyAdvice =
    "its own SSH host keys (`sudo rm /etc/ssh/ssh_host_*_key* && sudo ssh-keygen -A`, restart "
    "sshd, then replace its old key in known_hosts: `ssh-keygen -R NAME`, and connect with "
    "--accept-new-host-keys)";

// A machine ID as messages name it: "hardware UUID X (IOPlatformUUID)" on a Mac, "machine ID X
// (/etc/machine-id)" elsewhere.
std::string machine_id_label(const HostFacts& h, const std::string& id) {
  return h.os.name == "macOS" ? fmt::format("hardware UUID {} (IOPlatformUUID)", id)
                              : fmt::format("machine ID {} (/etc/machine-id)", id);
}

// Both known and different: proof of two machines.
bool differ(const std::optional<std::string>& a, const std::optional<std::string>& b) {
  return a && b && *a != *b;
}

}  // namespace

std::vector<SameMachine> same_machines(const std::vector<HostFacts>& hosts) {
  struct Evidence {
    std::vector<std::string> why;
    bool hardware = false;  // Thunderbolt or address: no clone shares it
    bool machine_id = false, host_key = false;
  };
  std::map<std::pair<std::size_t, std::size_t>, Evidence> pairs;
  auto at = [&](std::size_t a, std::size_t b) -> Evidence& {
    return pairs[{std::min(a, b), std::max(a, b)}];
  };
  std::map<std::string, std::pair<std::size_t, std::string>> uuid_at;  // uuid -> host, port
  std::vector<std::set<std::string>> uuids(hosts.size());
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    for (const Port& p : hosts[i].ports) {
      if (p.domain_uuid.empty()) continue;
      uuids[i].insert(p.domain_uuid);
      const std::string where = port_label(end_of(hosts[i], p));
      auto [it, fresh] = uuid_at.emplace(p.domain_uuid, std::make_pair(i, where));
      if (fresh || it->second.first == i) continue;
      Evidence& e = at(it->second.first, i);
      if (e.hardware) continue;  // one shared UUID is proof enough
      e.hardware = true;
      e.why.push_back(fmt::format("both have Thunderbolt domain UUID {} ({} on {}, {} on {})",
                                  p.domain_uuid, it->second.second, hosts[it->second.first].host,
                                  where, hosts[i].host));
    }
  }
  std::map<std::string, std::size_t> id_at, key_at;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (const auto& id = hosts[i].machine_id; id && !id->empty()) {
      if (auto [it, fresh] = id_at.emplace(*id, i); !fresh) {
        Evidence& e = at(it->second, i);
        e.machine_id = hosts[i].os.name != "macOS";  // a Mac's hardware UUID is not cloned
        e.hardware = e.hardware || !e.machine_id;
        e.why.push_back("both have " + machine_id_label(hosts[i], *id));
      }
    }
    if (const auto& key = hosts[i].ssh_host_key; key && !key->empty()) {
      if (auto [it, fresh] = key_at.emplace(*key, i); !fresh) {
        Evidence& e = at(it->second, i);
        e.host_key = true;
        e.why.push_back(fmt::format("both have SSH host key {}", *key));
      }
    }
  }
  std::map<std::string, std::size_t> address_at;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const std::string& addr = hosts[i].management_address;
    if (addr.empty()) continue;
    auto [it, fresh] = address_at.emplace(addr, i);
    if (fresh) continue;
    const HostFacts &a = hosts[it->second], &b = hosts[i];
    if (uuids[it->second] != uuids[i] || differ(a.machine_id, b.machine_id) ||
        differ(a.ssh_host_key, b.ssh_host_key)) {
      continue;  // told apart
    }
    Evidence& e = at(it->second, i);
    e.hardware = true;
    e.why.push_back(fmt::format("both have the management address {}", addr));
  }
  std::vector<SameMachine> out;
  for (auto& [pair, e] : pairs) {
    SameMachine m{pair.first, pair.second, fmt::format("{}", fmt::join(e.why, "; ")), ""};
    if (!e.hardware) {
      std::vector<std::string> advice;
      if (e.machine_id) advice.emplace_back(kMachineIdAdvice);
      if (e.host_key) advice.emplace_back(kHostKeyAdvice);
      if (!advice.empty()) m.advice = kCloneAdvice + fmt::format("{}", fmt::join(advice, " and "));
    }
    out.push_back(std::move(m));
  }
  return out;
}

namespace {

// Reads the list j[key] element by element, so a bad field's message names its index
// ("cables[3].a.receptacle: ..."). Every bad element is added to `problems` (within one
// element, its first bad field), and the others are read on.
template <class T>
void read_list(const json& j, const char* key, std::vector<T>& out,
               std::vector<std::string>& problems) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if (!it->is_array()) {
    problems.push_back(fmt::format("{}: must be a list, but is {}", key, it->type_name()));
    return;
  }
  out.reserve(it->size());
  for (std::size_t i = 0; i < it->size(); ++i) {
    try {
      out.push_back((*it)[i].template get<T>());
    } catch (const json::exception& e) {
      problems.push_back(fmt::format("{}[{}]: {}", key, i, json_error_text(e)));
    } catch (const BadField& e) {
      problems.push_back(fmt::format("{}[{}].{}", key, i, e.what()));
    }
  }
}

// One top-level field; its problem is added to `problems`.
template <class T>
void read_top(const json& j, const char* key, T& out, std::vector<std::string>& problems) {
  try {
    read(j, key, out);
  } catch (const json::exception& e) {
    problems.push_back(fmt::format("{}: {}", key, json_error_text(e)));
  } catch (const BadField& e) {
    problems.push_back(e.what());
  }
}

// A port of `host` as a cable end names it: by interface when it has one, else by receptacle
// (topology's ClusterGraph::port_index rule); with both, they must be the same port.
std::optional<std::string> end_problem(const HostFacts& host, const CableEnd& end) {
  if (end.receptacle && *end.receptacle < 1) {
    return fmt::format("receptacle {} is not a receptacle number (they count from 1)",
                       *end.receptacle);
  }
  std::vector<std::string> names;
  for (const Port& p : host.ports) names.push_back(port_label(end_of(host, p)));
  const std::string its = names.empty() ? std::string("it has no ports")
                                        : fmt::format("its ports: {}", fmt::join(names, ", "));
  if (end.interface.empty() && !end.receptacle) {
    return fmt::format("names no port (neither an interface nor a receptacle) of {}", host.host);
  }
  if (!end.interface.empty()) {
    auto p = std::find_if(host.ports.begin(), host.ports.end(), [&](const Port& q) {
      return q.interface && q.interface->name == end.interface;
    });
    if (p == host.ports.end()) {
      return fmt::format("interface \"{}\" is not a port of {} ({})", end.interface, host.host,
                         its);
    }
    if (end.receptacle && p->receptacle != end.receptacle) {
      return fmt::format("receptacle {} is not {}'s receptacle of {} ({})", *end.receptacle,
                         host.host, end.interface, its);
    }
    return std::nullopt;
  }
  if (std::none_of(host.ports.begin(), host.ports.end(),
                   [&](const Port& q) { return q.receptacle == end.receptacle; })) {
    return fmt::format("receptacle {} is not a port of {} ({})", *end.receptacle, host.host, its);
  }
  return std::nullopt;
}

// The port an end names, as a key for finding duplicates: interface, else #receptacle.
std::string end_key(const CableEnd& e) {
  return e.interface.empty() ? fmt::format("{}\n#{}", e.host, e.receptacle.value_or(0))
                             : fmt::format("{}\n{}", e.host, e.interface);
}

// The saved network plan as a hand edit can break it: an address that is no IPv4 address or
// one on two ports, a subnet that is no prefix or shared by two cables (overlapping counts:
// the two cables would then route into each other; exo#2067 and exo#2309 are duplicate
// addresses that silently broke RDMA). Every message "PATH: problem", naming both places.
// Cost: O(entries) for addresses, O(entries^2) for subnet overlaps (a few thousand at most).
std::vector<std::string> network_problems(const std::vector<LinkAddress>& plan,
                                          const std::string& plan_again) {
  std::vector<std::string> out;
  std::map<std::string, std::string> address_at;  // address -> "network[i].a_address (h1 tb1)"
  std::vector<std::pair<util::Ipv4Prefix, std::size_t>> subnets;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const LinkAddress& l = plan[i];
    const std::string at = fmt::format("network[{}]", i);
    const std::pair<const CableEnd*, const std::string*> ends[] = {{&l.a, &l.a_address},
                                                                   {&l.b, &l.b_address}};
    for (std::size_t e = 0; e < 2; ++e) {
      const std::string& addr = *ends[e].second;
      if (addr.empty()) continue;  // a plan entry without addresses: nothing to collide
      const std::string path = fmt::format("{}.{}_address", at, e == 0 ? "a" : "b");
      auto v4 = util::parse_ipv4_prefix(addr);
      if (!v4 || v4->length != 32) {
        out.push_back(fmt::format("{}: '{}' {}", path, addr,
                                  util::address_problem(addr).value_or(
                                      "is not an IPv4 address (a cable's planned addresses are "
                                      "IPv4: the GID RDMA connects through is IPv4-mapped)")));
        continue;
      }
      const std::string here = fmt::format("{} ({})", path, end_label(*ends[e].first));
      auto [it, fresh] = address_at.emplace(addr, here);
      if (!fresh) {
        out.push_back(
            fmt::format("{}: {} is also {}: one address belongs to one port; give "
                        "one of them another address, or plan again with `{}`",
                        here, addr, it->second, plan_again));
      }
    }
    if (l.subnet.empty()) continue;
    auto prefix = util::parse_ipv4_prefix(l.subnet);
    if (!prefix || l.subnet.find('/') == std::string::npos) {
      out.push_back(
          fmt::format("{}.subnet: '{}' is not an IPv4 subnet (like 10.231.0.4/30)", at, l.subnet));
      continue;
    }
    for (const auto& [other, j] : subnets) {
      if (!util::overlaps(*prefix, other)) continue;
      out.push_back(fmt::format(
          "{}.subnet ({} - {}): {} {} network[{}].subnet {} ({} - {}): one subnet belongs to one "
          "cable; give one of them another subnet, or plan again with `{}`",
          at, end_label(l.a), end_label(l.b), l.subnet, *prefix == other ? "is also" : "overlaps",
          j, plan[j].subnet, end_label(plan[j].a), end_label(plan[j].b), plan_again));
      break;
    }
    subnets.emplace_back(*prefix, i);
  }
  return out;
}

// Referential integrity: every message is "PATH: problem". All of them, in file order.
std::vector<std::string> reference_problems(const ClusterState& s, const std::string& plan_again) {
  std::vector<std::string> out;
  std::map<std::string, std::size_t> host_at;
  std::map<std::string, std::size_t> host_key_at;  // by util::host_key: "A" and "a." are "a"
  std::vector<std::string> names;  // each once, in host order
  for (std::size_t i = 0; i < s.hosts.size(); ++i) {
    const std::string& name = s.hosts[i].host;
    if (name.empty()) {
      out.push_back(
          fmt::format("hosts[{}].host: missing, null or empty: every host needs the "
                      "name it is reached by (its SSH name)",
                      i));
      continue;
    }
    // The host is reached by this name (ssh, a hostfile's `ssh`): the one rule of a name.
    if (auto why = util::ssh_destination_problem(name)) {
      out.push_back(fmt::format("hosts[{}].host: {}", i, *why));
    }
    auto [it, fresh] = host_at.emplace(name, i);
    auto [same, new_key] = host_key_at.emplace(util::host_key(name), i);
    if (fresh) names.push_back(name);
    if (!fresh) {
      out.push_back(
          fmt::format("hosts[{}].host: \"{}\" is already hosts[{}]: a host is listed "
                      "once; remove one of them",
                      i, name, it->second));
    } else if (!new_key) {
      const std::string& was = s.hosts[same->second].host;
      out.push_back(
          fmt::format("hosts[{}].host: \"{}\" is hosts[{}] (\"{}\") again{}: a host "
                      "is listed once; remove one of them",
                      i, name, same->second, was, util::same_host_note(was, name)));
    }
  }
  for (const SameMachine& m : same_machines(s.hosts)) {
    if (util::host_key(s.hosts[m.first].host) == util::host_key(s.hosts[m.second].host)) {
      continue;  // named twice: said above
    }
    out.push_back(
        fmt::format("hosts[{}].host: \"{}\" is the same machine as hosts[{}] (\"{}\": "
                    "{}): list each machine once, under one name{}{}",
                    m.second, s.hosts[m.second].host, m.first, s.hosts[m.first].host, m.why,
                    m.advice.empty() ? "" : "; ", m.advice));
  }
  const std::string hosts_list = names.empty()
                                     ? std::string("it has none")
                                     : fmt::format("its hosts: {}", fmt::join(names, ", "));
  // Checks one end; true when it names a port of a host of the state.
  auto check_end = [&](const std::string& path, const CableEnd& e) {
    if (e.host.empty()) {
      out.push_back(fmt::format("{}.host: missing, null or empty: name a host of this state ({})",
                                path, hosts_list));
      return false;
    }
    auto h = host_at.find(e.host);
    if (h == host_at.end()) {
      out.push_back(fmt::format("{}.host: \"{}\" is not a host of this state ({})", path, e.host,
                                hosts_list));
      return false;
    }
    if (auto why = end_problem(s.hosts[h->second], e)) {
      out.push_back(fmt::format("{}: {}", path, *why));
      return false;
    }
    return true;
  };
  std::map<std::pair<std::string, std::string>, std::size_t> cable_at;
  for (std::size_t i = 0; i < s.cables.size(); ++i) {
    const Cable& c = s.cables[i];
    const std::string at = fmt::format("cables[{}]", i);
    const bool a = check_end(at + ".a", c.a), b = check_end(at + ".b", c.b);
    if (!a || !b) continue;
    if (c.a.host == c.b.host) {
      out.push_back(
          fmt::format("{}: joins {} to itself ({} and {}): a cable joins two hosts; "
                      "remove it",
                      at, c.a.host, port_label(c.a), port_label(c.b)));
      continue;
    }
    auto ka = end_key(c.a), kb = end_key(c.b);
    if (kb < ka) std::swap(ka, kb);
    auto [it, fresh] = cable_at.emplace(std::make_pair(ka, kb), i);
    if (!fresh) {
      out.push_back(
          fmt::format("{}: the same cable as cables[{}] ({} - {}): list each cable "
                      "once; remove one of them",
                      at, it->second, end_label(c.a), end_label(c.b)));
    }
    if (c.sources.empty()) {
      out.push_back(
          fmt::format("{}.sources: empty: say which source saw the cable "
                      "(\"thunderbolt\", \"neighbour\")",
                      at));
    }
  }
  for (std::size_t i = 0; i < s.network.size(); ++i) {
    const std::string at = fmt::format("network[{}]", i);
    check_end(at + ".a", s.network[i].a);
    check_end(at + ".b", s.network[i].b);
  }
  for (std::string& p : network_problems(s.network, plan_again)) out.push_back(std::move(p));
  for (std::size_t i = 0; i < s.problems.size(); ++i) {
    if (s.problems[i].host.empty()) {
      out.push_back(
          fmt::format("problems[{}].host: missing, null or empty: name the host that "
                      "could not be probed",
                      i));
    }
  }
  return out;
}

}  // namespace

util::Result<ClusterState> cluster_state_from_json(const json& j, const std::string& plan_again) {
  if (!j.is_object()) {
    return util::error(util::ExitCode::kUsage, "cluster state: expected a JSON object");
  }
  std::string schema;
  if (auto s = get_string(j, "schema")) schema = *s;
  if (schema != kClusterSchema) {
    return util::error(util::ExitCode::kUsage,
                       fmt::format("cluster state: schema is \"{}\", expected \"{}\"", schema,
                                   kClusterSchema));
  }
  try {
    ClusterState state;
    // Every value of the wrong shape at once; the references (which host a cable names) are
    // checked only when every value could be read.
    std::vector<std::string> problems;
    read_top(j, "created_at", state.created_at, problems);
    read_list(j, "hosts", state.hosts, problems);
    read_list(j, "cables", state.cables, problems);
    read_list(j, "problems", state.problems, problems);
    read_list(j, "network", state.network, problems);
    read_top(j, "lab", state.lab, problems);
    if (problems.empty()) problems = reference_problems(state, plan_again);
    if (problems.size() == 1) {
      return util::error(util::ExitCode::kUsage, fmt::format("cluster state: {}", problems[0]));
    }
    if (!problems.empty()) {
      return util::error(util::ExitCode::kUsage,
                         fmt::format("cluster state: {} problems:\n  {}", problems.size(),
                                     fmt::join(problems, "\n  ")));
    }
    return state;
  } catch (const json::exception& e) {
    return util::error(util::ExitCode::kUsage,
                       fmt::format("cluster state: {}", json_error_text(e)));
  } catch (const BadField& e) {
    return util::error(util::ExitCode::kUsage, fmt::format("cluster state: {}", e.what()));
  }
}

util::Result<ClusterState> load_cluster_state(const std::string& path, std::string_view global,
                                              bool replan) {
  // The discovery that writes the file again, as the command that read it reaches the hosts.
  auto rediscover = [&](std::string_view globals) {
    return FixCommand{std::string(globals), path, ""}.rediscover();
  };
  auto text = util::read_file(path);
  if (!text) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) return text.error();  // there, but not a state file
    // A typo of a file beside it: read_file's "did you mean" is the fix, not a new discovery.
    if (!util::did_you_mean_file(path).empty()) return text.error();
    return util::error(util::ExitCode::kUsage, fmt::format("{} (make one with `{}`)",
                                                           text.error().message,
                                                           rediscover(global)));
  }
  auto j = parse_json_file(path, *text);
  if (!j) return util::error(util::ExitCode::kUsage, j.error().message);
  // A bad file may still name its lab: then the command that rewrites it needs --lab.
  std::string globals(global);
  if (globals.empty() && j->is_object()) {
    const auto lab = j->find("lab");
    if (lab != j->end() && lab->is_string() &&
        remote::validate_lab_name(lab->get<std::string>()).ok()) {
      globals = "--lab " + lab->get<std::string>();
    }
  }
  // `network plan` replaces the plan: a broken one (two ports with one address) is what it
  // mends, so it reads the file without it.
  if (replan && j->is_object()) j->erase("network");
  auto state = cluster_state_from_json(*j, FixCommand{globals, path, ""}.command("network plan"));
  if (!state) {
    std::string_view message = state.error().message;
    if (message.starts_with("cluster state: ")) message.remove_prefix(15);
    const bool many = message.find('\n') != std::string_view::npos;
    return util::error(util::ExitCode::kUsage,
                       fmt::format("{}: {}{}(fix it, or write it again with `{}`)", path, message,
                                   many ? "\n" : " ", rediscover(globals)));
  }
  return state;
}

util::OwnOutput cluster_state_output() {
  return {fmt::format("a clusterctl cluster state (the JSON `clusterctl discover -o` writes, "
                      "schema {})",
                      kClusterSchema),
          [](std::string_view text) {
            const json j = json::parse(text, nullptr, false);
            return j.is_object() && j.value("schema", json()) == kClusterSchema;
          }};
}

util::Status save_cluster_state(const ClusterState& state, const std::string& path) {
  return util::write_file_atomic(path, util::json_text(json(state), 2) + "\n");
}

}  // namespace cc::discovery
