#include "provision/mlx_hostfile.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <iterator>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "provision/hostfile.h"
#include "remote/quote.h"
#include "topology/checks.h"
#include "topology/graph.h"
#include "util/address.h"
#include "util/host_name.h"
#include "util/atomic_file.h"
#include "util/ipv4.h"
#include "util/json_error.h"
#include "util/json_text.h"
#include "util/text.h"

namespace cc::provision {
namespace {

using nlohmann::json;
using util::ExitCode;

constexpr const char* kShape =
    "an MLX hostfile is {\"backend\": ..., \"envs\": [...], \"hosts\": [{\"ssh\": NAME, "
    "\"ips\": [...], \"rdma\": [...]}, ...]} or a list of host objects";

util::Error bad(const std::string& path, const std::string& message) {
  if (path.empty()) return util::error(ExitCode::kUsage, message);  // built, not read
  return util::error(ExitCode::kUsage, fmt::format("{}: {}", path, message));
}

// When `text` (which is not JSON) reads as an MPI hostfile, its first host line (1-based line
// number, the line): every line blank, a '#' comment, or a host name followed by Open MPI's
// "slots=N" / "max_slots=N" (or any KEY=VALUE), or MPICH's "host:N".
std::optional<std::pair<std::size_t, std::string>> mpi_hostfile_line(std::string_view text) {
  std::optional<std::pair<std::size_t, std::string>> first;
  const auto lines = util::split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = util::trim(lines[i]);
    if (auto hash = line.find('#'); hash != std::string_view::npos) {
      line = util::trim(line.substr(0, hash));
    }
    if (line.empty()) continue;
    const auto words = util::split_words(line);
    const std::string_view host = words.front();
    const bool host_ok = std::all_of(host.begin(), host.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_' ||
             c == ':' || c == '@' || c == '%';
    });
    if (!host_ok) return std::nullopt;
    for (std::size_t w = 1; w < words.size(); ++w) {
      const auto eq = words[w].find('=');
      if (eq == std::string_view::npos || eq == 0) return std::nullopt;
    }
    if (!first) first = std::make_pair(i + 1, std::string(line));
  }
  return first;
}

// Whether `text` is an Open MPI or MPICH hostfile beyond doubt, for `hostfile -o` to replace:
// every line blank, a '#' comment, or a host (a name Open MPI takes, open_mpi_host_problem, or an
// IP address) followed only by Open MPI's slots=N / max_slots=N, or MPICH's HOST:N; and at least
// one line with such a count, as every line `hostfile --format mpi|mpich` writes has. A list of
// words ("TODO\nbackup\n", "precious") is a list of valid host names too, and a bare host list
// is no sign of a hostfile: only --force replaces it. (mpi_hostfile_line is looser: it spots a
// hostfile given where JSON was expected, to say so.)
bool mpi_hostfile_output(std::string_view text) {
  const auto count = [](std::string_view v) {
    const auto n = util::parse_u64(v);
    return n && *n > 0;
  };
  const auto host_ok = [](std::string_view h) {
    return !h.empty() && (!open_mpi_host_problem(h) || !util::address_problem(h));
  };
  bool counted = false;
  for (std::string_view line : util::split_lines(text)) {
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = util::trim(line);
    if (line.empty()) continue;
    const auto words = util::split_words(line);
    std::string_view host = words.front();
    if (const auto colon = host.rfind(':');
        colon != std::string_view::npos && words.size() == 1 && host_ok(host.substr(0, colon)) &&
        count(host.substr(colon + 1))) {
      counted = true;  // MPICH's HOST:N
      continue;
    }
    if (!host_ok(host)) return false;
    for (std::size_t w = 1; w < words.size(); ++w) {
      const auto eq = words[w].find('=');
      if (eq == std::string_view::npos) return false;
      const std::string_view key = words[w].substr(0, eq);
      if (key != "slots" && key != "max_slots" && key != "max-slots") return false;
      if (!count(words[w].substr(eq + 1))) return false;
      counted = true;
    }
  }
  return counted;
}

// Whether `j` is MLX's JSON hostfile, for `hostfile -o` to replace: {"hosts": [...]} with only
// MLX's keys beside it, or a bare list, each host an object with "ssh" (valid or not otherwise:
// one to rewrite). Any JSON object with a "hosts" list (an Ansible inventory, a state without
// its schema) is not.
bool mlx_hostfile_output(const json& j) {
  const json* hosts = &j;
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      if (key != "hosts" && key != "backend" && key != "envs") return false;
    }
    if (!j.contains("hosts")) return false;
    hosts = &j["hosts"];
  }
  if (!hosts->is_array() || (hosts->empty() && !j.is_object())) return false;
  return std::all_of(hosts->begin(), hosts->end(),
                     [](const json& h) { return h.is_object() && h.contains("ssh"); });
}

// A host of a text mpi_hostfile_line reads as an MPI hostfile: its name as first written
// (without MPICH's ":N"; an IPv6 address keeps its own colons), the line of that (1-based), the
// lines that name it again (as util::host_key compares: "H1" is h1), and the ranks the file
// gives it: each line's Open MPI "slots=N" or MPICH ":N", 1 without.
struct MpiHost {
  std::string name;
  std::size_t line = 0;
  std::vector<std::size_t> again;
  long ranks = 0;
};

// A count of 0 or more, or 1 (what mpirun starts for a line without one). 0 is kept: Open MPI
// starts no rank on a "HOST slots=0" line (ompi#9221), so that host is not one of the job's.
long slot_count(std::string_view v) {
  long n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  return ec == std::errc() && end == v.data() + v.size() && n >= 0 ? n : 1;
}

// The hosts of an MPI hostfile, in the order first named.
std::vector<MpiHost> mpi_hostfile_hosts(std::string_view text) {
  std::vector<MpiHost> hosts;
  std::unordered_map<std::string, std::size_t> index;  // host_key -> hosts[i]
  const auto lines = util::split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = util::trim(line);
    if (line.empty()) continue;
    const auto words = util::split_words(line);
    std::string_view host = words.front();
    long ranks = 1;
    if (const auto colon = host.find(':');
        colon != std::string_view::npos && host.find(':', colon + 1) == std::string_view::npos) {
      ranks = slot_count(host.substr(colon + 1));
      host = host.substr(0, colon);
    }
    for (std::size_t w = 1; w < words.size(); ++w) {
      if (words[w].starts_with("slots=")) ranks = slot_count(words[w].substr(6));
    }
    auto [it, fresh] = index.emplace(util::host_key(host), hosts.size());
    if (fresh) {
      hosts.push_back({std::string(host), i + 1, {}, 0});
    } else {
      hosts[it->second].again.push_back(i + 1);
    }
    hosts[it->second].ranks += ranks;
  }
  return hosts;
}

// The hosts of an MPI hostfile that get a rank (all of them when none does: then there is no
// job to suggest, and the note says why).
std::vector<MpiHost> mpi_hosts_with_ranks(const std::vector<MpiHost>& all) {
  std::vector<MpiHost> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out),
               [](const MpiHost& h) { return h.ranks > 0; });
  return out.empty() ? all : out;
}

// What the error about an MPI hostfile says of hosts it names more than once and of more than
// one rank per host, "" when neither: clusterctl names each host once (the suggested --hosts
// and `hosts:` would be refused with a name twice) and runs `ranks_per_host` on each.
std::string mpi_ranks_note(const std::vector<MpiHost>& all, const std::string& path,
                           bool job_file) {
  std::vector<std::string> twice;
  for (const MpiHost& h : all) {
    if (h.again.empty()) continue;
    std::vector<std::string> at = {fmt::format("{}:{}", path, h.line)};
    for (std::size_t l : h.again) at.push_back(fmt::format("{}:{}", path, l));
    twice.push_back(fmt::format("{} is named on {} lines ({})", h.name, at.size(),
                                fmt::join(at, ", ")));
  }
  std::string note;
  if (!twice.empty()) {
    note = fmt::format(" {}: clusterctl names each host once.", fmt::join(twice, "; "));
  }
  // A host given slots=0 (ompi#9221: mpirun starts no rank there) is left out of the hosts the
  // fix names, and said so; were it named, the suggested job would run ranks on it.
  std::vector<std::string> idle;
  for (const MpiHost& h : all) {
    if (h.ranks == 0) idle.push_back(fmt::format("{} ({}:{})", h.name, path, h.line));
  }
  const std::vector<MpiHost> hosts = mpi_hosts_with_ranks(all);
  if (!idle.empty() && idle.size() < all.size()) {
    note += fmt::format(
        " It gives {} slots=0, so no rank runs there: left out of the hosts "
        "below.",
        fmt::join(idle, ", "));
  } else if (!idle.empty()) {
    return note +
           " It gives every host slots=0, so no rank would run anywhere: give each host "
           "at least 1.";
  }
  const bool same = std::all_of(hosts.begin(), hosts.end(),
                                [&](const MpiHost& h) { return h.ranks == hosts.front().ranks; });
  const long ranks = hosts.front().ranks;
  if (same && ranks == 1) return note;
  std::vector<std::string> per_host;
  for (const MpiHost& h : hosts) per_host.push_back(fmt::format("{} {}", h.name, h.ranks));
  if (!job_file) {
    return note + fmt::format(" It gives ranks per host ({}); MLX's hostfile runs one rank per "
                              "host, and a job's `ranks_per_host` sets more.",
                              fmt::join(per_host, ", "));
  }
  if (same) {
    return note + fmt::format(" For its {} ranks per host, set `ranks_per_host: {}` in the job "
                              "(runtime clustercomm; the MLX runtimes run one per host).",
                              ranks, ranks);
  }
  return note + fmt::format(" It gives the hosts different rank counts ({}); a job runs "
                            "`ranks_per_host` ranks on every one of its hosts.",
                            fmt::join(per_host, ", "));
}

std::string label(const std::vector<MlxHost>& hosts, std::size_t rank) {
  return fmt::format("rank {} ({})", rank, hosts.at(rank).ssh);
}

std::string cell_name(std::size_t i, std::size_t j) {
  return fmt::format("rdma[{}][{}]", i, j);
}

// A cell: null, "dev", or a list of "dev". An empty list is read as null.
std::optional<std::string> parse_cell(const json& c, MlxCell& out) {
  auto name_ok = [](const json& v) { return v.is_string() && !v.get<std::string>().empty(); };
  // "null" or "None" in quotes (a script's str(None), a hand edit): a string, so read as a device
  // of that name, where null was meant; no RDMA device is called that.
  auto null_text = [](const json& v) {
    if (!v.is_string()) return false;
    const std::string t = v.get<std::string>();
    return t == "null" || t == "NULL" || t == "None" || t == "none";
  };
  if (c.is_null()) return std::nullopt;
  for (const json& v : c.is_array() ? c : json::array({c})) {
    if (null_text(v)) {
      return fmt::format("is the string \"{}\", not JSON null: write null without quotes",
                         v.get<std::string>());
    }
  }
  if (name_ok(c)) {
    out.push_back(c.get<std::string>());
    return std::nullopt;
  }
  if (c.is_array()) {
    for (const json& v : c) {
      if (!name_ok(v)) return std::string("has an entry that is not a device name");
      out.push_back(v.get<std::string>());
    }
    return std::nullopt;
  }
  return fmt::format("must be null, a device name or a list of device names (found JSON {})",
                     c.type_name());
}

// One host object of a hostfile of `n` hosts. Every problem of it is added to `errors` (each
// ips entry and each cell on its own); nullopt when it has no "ssh" name. `rdma_ok` is false
// when its "rdma" row is not what the file says (the matrix rules cannot judge it).
std::optional<MlxHost> parse_host(const json& h, std::size_t rank, std::size_t n,
                                  const std::string& path, const discovery::FixCommand& fix,
                                  std::vector<util::Error>& errors, bool& rdma_ok) {
  auto ssh = h.is_object() ? h.find("ssh") : h.end();
  if (!h.is_object() || ssh == h.end() || !ssh->is_string() || ssh->get<std::string>().empty()) {
    errors.push_back(
        bad(path, fmt::format("rank {} has no \"ssh\" name (hosts[{}]); {}", rank, rank, kShape)));
    return std::nullopt;
  }
  MlxHost host;
  host.ssh = ssh->get<std::string>();
  const std::string who = fmt::format("rank {} ({})", rank, host.ssh);
  if (auto why = util::ssh_destination_problem(host.ssh)) {
    errors.push_back(bad(path, fmt::format("rank {}: \"ssh\": {}", rank, *why)));
  }
  if (auto ips = h.find("ips"); ips != h.end() && !ips->is_null()) {
    if (!ips->is_array())
      errors.push_back(bad(path, fmt::format("{}: \"ips\" must be a list", who)));
    for (std::size_t k = 0; ips->is_array() && k < ips->size(); ++k) {
      if (!(*ips)[k].is_string()) {
        errors.push_back(bad(path, fmt::format("{}: ips[{}] must be an address string", who, k)));
        continue;
      }
      std::string ip = (*ips)[k].get<std::string>();
      if (auto why = util::address_problem(ip)) {
        errors.push_back(bad(path, fmt::format("{}: ips[{}]: '{}' {}", who, k, ip, *why)));
        continue;
      }
      // Several hosts: every ips entry is where the others reach that host (rank 0's ips[0] is
      // the coordinator, a ring's entries its neighbours' peers). 0.0.0.0 (exo's placeholder
      // for a rank itself) or 127.0.0.1 there makes each rank connect to itself and wait out
      // the start-up timeout; a 169.254 one leaves by whichever port holds the 169.254/16
      // route, and an fe80 one names no interface of the connecting host: the writers never
      // write them (hostfile.h). One host alone (ranks on one machine) may use loopback.
      if (auto why = n >= 2 ? util::rank_address_problem(ip) : std::nullopt) {
        errors.push_back(bad(
            path, fmt::format("{}: ips[{}]: '{}' {}: in a hostfile of {} hosts each ips entry "
                              "must be an address the other hosts reach {} on{}; {}`{}` (or "
                              "--format mlx-ring) writes them",
                              who, k, ip, *why, n, host.ssh,
                              rank == 0 && k == 0 ? " (rank 0's ips[0] is the coordinator)" : "",
                              util::self_assigned_ipv4(ip)
                                  ? fmt::format("give every cable an address of its own with "
                                                "`{}`, then ",
                                                fix.command("network apply"))
                                  : std::string(),
                              fix.command("hostfile", "--format mlx-jaccl"))));
      } else if (auto v6 = mlx_address_problem(ip)) {
        errors.push_back(bad(path, fmt::format("{}: ips[{}]: {}: give {}'s IPv4 address; `{}` "
                                               "(or --format mlx-ring) writes them",
                                               who, k, *v6, host.ssh,
                                               fix.command("hostfile", "--format mlx-jaccl"))));
      }
      host.ips.push_back(std::move(ip));
    }
  }
  if (auto rdma = h.find("rdma"); rdma != h.end() && !rdma->is_null()) {
    if (!rdma->is_array()) {
      errors.push_back(bad(path, fmt::format("{}: \"rdma\" must be a list", who)));
      rdma_ok = false;
    }
    for (std::size_t j = 0; rdma->is_array() && j < rdma->size(); ++j) {
      MlxCell cell;
      if (auto e = parse_cell((*rdma)[j], cell)) {
        errors.push_back(bad(path, fmt::format("{}: {} {}", who, cell_name(rank, j), *e)));
        rdma_ok = false;
      }
      host.rdma.push_back(std::move(cell));
    }
  }
  return host;
}

// "rank 1 (mac2)", or "rank 1" when the ranks have no names.
std::string ranked(const std::vector<std::string>& names, std::size_t rank) {
  return rank < names.size() ? fmt::format("rank {} ({})", rank, names[rank])
                             : fmt::format("rank {}", rank);
}

std::string where_prefix(std::string_view where) {
  return where.empty() ? std::string() : fmt::format("{}: ", where);
}

// "rdma[0][2] is null", "rdma[0][2] and rdma[2][0] are null": the cells of `cells` (i, j).
std::string cells_are(const std::vector<std::pair<std::size_t, std::size_t>>& cells,
                      std::string_view what) {
  std::vector<std::string> names;
  for (const auto& c : cells) names.push_back(cell_name(c.first, c.second));
  return fmt::format("{} {} {}", fmt::join(names, " and "), names.size() == 1 ? "is" : "are",
                     what);
}

// JACCL's Config::is_valid_mesh: every off-diagonal cell names a device, the diagonal is null.
// Every violation, one per rank or rank pair, in rank order.
std::vector<std::string> mesh_problems(const std::vector<std::vector<MlxCell>>& m,
                                       const std::vector<std::string>& names) {
  const std::size_t n = m.size();
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) {
    if (!m[i][i].empty()) {
      out.push_back(fmt::format("{}: {} must be null (a host has no cable to itself)",
                                ranked(names, i), cell_name(i, i)));
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      std::vector<std::pair<std::size_t, std::size_t>> null;
      if (m[i][j].empty()) null.emplace_back(i, j);
      if (m[j][i].empty()) null.emplace_back(j, i);
      if (null.empty()) continue;
      out.push_back(fmt::format(
          "{} and {}: {}, but a JACCL mesh needs a device in every off-diagonal cell (a direct "
          "RDMA cable between every pair)",
          ranked(names, i), ranked(names, j), cells_are(null, "null")));
    }
  }
  return out;
}

// JACCL's Config::is_valid_ring, made strict: the cells of each rank's two ring neighbours
// (rank - 1 and rank + 1, wrapping) all have the length of rdma[0][1] (at least 1), and every
// other cell is null. Every violation, one per rank pair, in rank order.
std::vector<std::string> ring_problems(const std::vector<std::vector<MlxCell>>& m,
                                       const std::vector<std::string>& names) {
  const std::size_t n = m.size();
  const std::size_t want = m[0][1].size();
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) {
    if (!m[i][i].empty()) {
      out.push_back(fmt::format("{}: {} must be null (a host has no cable to itself)",
                                ranked(names, i), cell_name(i, i)));
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t left = (i + n - 1) % n, right = (i + 1) % n;
    for (std::size_t j = i + 1; j < n; ++j) {
      const std::string pair = fmt::format("{} and {}", ranked(names, i), ranked(names, j));
      std::vector<std::pair<std::size_t, std::size_t>> null, set, wrong;
      for (const auto& [x, y] : {std::pair{i, j}, std::pair{j, i}}) {
        const std::size_t got = m[x][y].size();
        (got == 0 ? null : set).emplace_back(x, y);
        if (got != 0 && want != 0 && got != want) wrong.emplace_back(x, y);
      }
      if (j != left && j != right) {
        if (!set.empty()) {
          out.push_back(fmt::format(
              "{}: {}, but they are not ring neighbours: in a JACCL ring only the cells of "
              "rank - 1 and rank + 1 name devices",
              pair, cells_are(set, "set")));
        }
        continue;
      }
      if (i == 0 && j == 1 && want == 0) {
        out.push_back(fmt::format(
            "{}: {} is null, but in a JACCL ring every rank has a device to each ring "
            "neighbour: list the hosts in ring order",
            pair, cell_name(0, 1)));
        continue;
      }
      if (!null.empty()) {
        out.push_back(fmt::format(
            "{}: {}, but a JACCL ring needs a device to each ring neighbour ({} and {}): list "
            "the hosts in ring order",
            pair, cells_are(null, "null"), ranked(names, left), ranked(names, right)));
      }
      if (!wrong.empty()) {
        const auto [x, y] = wrong.front();
        const std::size_t got = m[x][y].size();
        out.push_back(fmt::format(
            "{}: {} lists {} device(s) but {} lists {}: a JACCL ring needs the same number of "
            "cables in every neighbour cell; list only {} per neighbour (the ring's smallest "
            "cable count, as mlx.distributed_config does)",
            pair, cell_name(x, y), got, cell_name(0, 1), want, std::min(got, want)));
      }
    }
  }
  return out;
}

// The structural matrix rules of parse_mlx_hostfile's contract, every broken one (a row of the
// wrong length stops there: the cell checks need N x N); JACCL's own rules follow in
// validate_mlx_hostfile.
std::vector<util::Error> matrix_problems(const MlxHostfile& hf, const discovery::FixCommand& fix) {
  const auto& hosts = hf.hosts;
  const std::size_t n = hosts.size();
  std::vector<util::Error> out;
  const bool any =
      std::any_of(hosts.begin(), hosts.end(), [](const MlxHost& h) { return !h.rdma.empty(); });
  const bool jaccl = hf.backend == "jaccl", ring = hf.backend == "jaccl-ring";
  if (!any) {
    if (jaccl || ring) {
      out.push_back(bad(
          hf.path, fmt::format("backend {} needs the \"rdma\" device matrix, and no "
                               "host has one: write it with `{}`",
                               hf.backend, fix.command("hostfile", "--format mlx-" + hf.backend))));
    }
    return out;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (hosts[i].rdma.size() != n) {
      out.push_back(bad(hf.path, fmt::format("{}: \"rdma\" is a list of {}, want {} cells (one "
                                             "per rank)",
                                             label(hosts, i), hosts[i].rdma.size(), n)));
    }
  }
  if (!out.empty()) return out;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& row = hosts[i].rdma;
    if (!row[i].empty()) {
      out.push_back(bad(hf.path, fmt::format("{}: {} must be null (a host has no cable to itself)",
                                             label(hosts, i), cell_name(i, i))));
    }
    std::set<std::string> seen, twice;
    for (std::size_t j = 0; j < n; ++j) {
      for (const std::string& d : row[j]) {
        if (!seen.insert(d).second && twice.insert(d).second) {
          out.push_back(bad(hf.path, fmt::format("{}: {} is named twice in its row (one device is "
                                                 "one cable)",
                                                 label(hosts, i), d)));
        }
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const auto& a = hosts[i].rdma[j];
      const auto& b = hosts[j].rdma[i];
      if (a.size() != b.size()) {
        out.push_back(bad(hf.path, fmt::format("{} lists {} device(s) but {} lists {}: both ends "
                                               "of a pair name the same cables ({} and {})",
                                               cell_name(i, j), a.size(), cell_name(j, i), b.size(),
                                               label(hosts, i), label(hosts, j))));
      }
    }
  }
  return out;
}

// Several errors of one file as one (kUsage), one line each, in the order found.
util::Error all_of(const std::vector<util::Error>& errors) {
  std::string text;
  for (const auto& e : errors) text += (text.empty() ? "" : "\n") + e.message;
  return util::error(ExitCode::kUsage, std::move(text));
}

}  // namespace

std::optional<std::string> mlx_address_problem(std::string_view ip) {
  if (ip.find(':') == std::string_view::npos) return std::nullopt;
  return fmt::format(
      "'{}' is an IPv6 address, and MLX cuts each HOST:PORT it is given "
      "(MLX_JACCL_COORDINATOR, MLX_HOSTFILE) at the first ':', so its ranks would "
      "stop with \"Can't parse address\"",
      ip);
}

std::optional<std::string> env_entry_problem(std::string_view entry) {
  const auto eq = entry.find('=');
  if (eq == std::string_view::npos) {
    return std::string("expected NAME=VALUE, but there is no '=' (an empty value is NAME=)");
  }
  if (eq == 0) return std::string("expected NAME=VALUE, but there is no name before '='");
  const std::string_view name = entry.substr(0, eq);
  if (!util::is_env_name(name)) {
    return fmt::format(
        "expected NAME=VALUE, but '{}' is not a valid environment variable name: "
        "use letters, digits and '_', not starting with a digit",
        name);
  }
  if (entry.size() > kMaxEnvEntryBytes) {
    return fmt::format("{} is {} bytes long, more than the {} bytes of one environment variable "
                       "that exec takes (Linux's MAX_ARG_STRLEN): no rank could start with it; "
                       "pass that much data in a file",
                       name, entry.size(), kMaxEnvEntryBytes);
  }
  return std::nullopt;
}

std::optional<std::string> env_size_problem(std::size_t bytes, std::size_t entries) {
  if (bytes <= kMaxEnvBytes) return std::nullopt;
  return fmt::format("the environment holds {} bytes in {} entries by here, more than the {} bytes "
                     "(1 MiB) a rank's environment can carry (exec's ARG_MAX, shared with the "
                     "command's arguments: 1 MiB on macOS, 2 MiB on Linux): no rank could start; "
                     "pass that much data in a file",
                     bytes, entries, kMaxEnvBytes);
}

bool valid_env_entry(std::string_view entry) {
  return !env_entry_problem(entry);
}

const char* to_string(JacclGroup g) {
  switch (g) {
    case JacclGroup::kMesh:
      return "mesh";
    case JacclGroup::kRing:
      return "ring";
    case JacclGroup::kMeshOrRing:
      return "mesh or ring";
  }
  return "unknown";
}

util::Status check_jaccl_devices(const std::vector<std::vector<MlxCell>>& rdma, JacclGroup want,
                                 const discovery::FixCommand& fix, std::string_view where,
                                 const std::vector<std::string>& names) {
  const std::size_t n = rdma.size();
  const std::string at = where_prefix(where);
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < n; ++i) {
    if (rdma[i].size() != n) {
      lines.push_back(fmt::format("{}{}: the device matrix row has {} cells, want {} (one per "
                                  "rank): JACCL needs the full N x N matrix",
                                  at, ranked(names, i), rdma[i].size(), n));
    }
  }
  if (!lines.empty()) return util::error(ExitCode::kUsage, fmt::format("{}", fmt::join(lines, "\n")));
  if (n < 2) return {};  // one rank: JACCL forms no group, and none is needed
  const auto mesh = want == JacclGroup::kRing ? std::vector<std::string>{} : mesh_problems(rdma, names);
  const auto ring = want == JacclGroup::kMesh ? std::vector<std::string>{} : ring_problems(rdma, names);
  const char* fallback =
      "JACCL's init() would otherwise fall back to a group of one rank without a word";
  // One line per broken rule, each naming where it is and what to do.
  switch (want) {
    case JacclGroup::kMesh:
      for (const auto& m : mesh) {
        lines.push_back(fmt::format("{}not a valid JACCL mesh: {} ({}); write the file with "
                                    "`{}` on a full mesh",
                                    at, m, fallback, fix.command("hostfile", "--format mlx-jaccl")));
      }
      break;
    case JacclGroup::kRing:
      for (const auto& r : ring) {
        lines.push_back(fmt::format("{}not a valid JACCL ring: {} ({}); write the file with `{}`",
                                    at, r, fallback,
                                    fix.command("hostfile", "--format mlx-jaccl-ring")));
      }
      break;
    case JacclGroup::kMeshOrRing:
      if (mesh.empty() || ring.empty()) return {};
      for (const auto& [kind, problems] : {std::pair{"mesh", &mesh}, std::pair{"ring", &ring}}) {
        for (const auto& p : *problems) {
          lines.push_back(fmt::format(
              "{}the device matrix is neither a valid JACCL mesh nor a valid JACCL ring ({}): as "
              "a {}, {}; write the file with `{}` or `--format mlx-jaccl-ring`",
              at, fallback, kind, p, fix.command("hostfile", "--format mlx-jaccl")));
        }
      }
      break;
  }
  if (lines.empty()) return {};
  return util::error(ExitCode::kUsage, fmt::format("{}", fmt::join(lines, "\n")));
}

util::Status validate_mlx_hostfile(const MlxHostfile& hf, const discovery::FixCommand& fix) {
  if (auto problems = matrix_problems(hf, fix); !problems.empty()) return all_of(problems);
  const bool any = std::any_of(hf.hosts.begin(), hf.hosts.end(),
                               [](const MlxHost& h) { return !h.rdma.empty(); });
  if (!any || hf.backend == "ring") return {};  // no matrix, or TCP ring (the matrix unused)
  const JacclGroup want = hf.backend == "jaccl"        ? JacclGroup::kMesh
                          : hf.backend == "jaccl-ring" ? JacclGroup::kRing
                                                       : JacclGroup::kMeshOrRing;
  std::vector<std::vector<MlxCell>> matrix;
  std::vector<std::string> names;
  for (const MlxHost& h : hf.hosts) {
    matrix.push_back(h.rdma);
    names.push_back(h.ssh);
  }
  return check_jaccl_devices(matrix, want, fix, hf.path, names);
}

std::string rank_label(const MlxHostfile& hf, std::size_t rank) {
  return label(hf.hosts, rank);
}

std::string render_mlx_hostfile(const MlxHostfile& hf) {
  nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
  for (const MlxHost& h : hf.hosts) {
    nlohmann::ordered_json rdma = nlohmann::ordered_json::array();
    for (const MlxCell& c : h.rdma) {
      if (c.empty()) {
        rdma.push_back(nullptr);
      } else if (c.size() == 1) {
        rdma.push_back(c.front());
      } else {
        rdma.push_back(c);
      }
    }
    hosts.push_back({{"ssh", h.ssh}, {"ips", h.ips}, {"rdma", rdma}});
  }
  nlohmann::ordered_json j = {{"backend", hf.backend}, {"envs", hf.envs}, {"hosts", hosts}};
  return util::json_text(j, 2) + "\n";
}

util::Result<MlxHostfile> parse_mlx_hostfile(std::string_view text, const std::string& path,
                                             const EnvCheck& env_check,
                                             const MpiHostfileAdvice& advice) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    if (auto mpi = mpi_hostfile_line(text)) {
      // Commands that run as printed: `hostfile --hosts` discovers those hosts and writes MLX's
      // file of them; or the hosts are named where the file was given. A host that cannot be
      // used there is named with why, never put in them: each would be refused when run.
      const std::string shown = path.empty() ? std::string("the hostfile") : path;
      const std::vector<MpiHost> mpi_hosts = mpi_hostfile_hosts(text);
      std::vector<std::string> hosts;  // each once, as clusterctl takes them
      std::string left_out;            // one line per host that cannot be used
      const std::vector<MpiHost> ranked = mpi_hosts_with_ranks(mpi_hosts);  // slots=0: no rank
      for (const MpiHost& h : ranked) {
        std::optional<std::string> why;
        if (ranked.size() >= 2) {
          // An address the ranks could not reach each other on (169.254, fe80, loopback), or
          // this machine's own name, which each host resolves to itself.
          if (!util::address_problem(h.name)) {
            if (auto r = util::rank_address_problem(h.name)) {
              why = *r + ": name it by an address (or SSH name) the other hosts reach it on";
            }
          } else if (util::host_key(h.name) == "localhost" ||
                     util::host_key(h.name).ends_with(".localhost")) {
            why = "is the name of the machine it is looked up on (a loopback address), so each "
                  "host would reach itself: name it by an address (or SSH name) the other hosts "
                  "reach it on";
          }
        }
        if (!why && advice.host_check) why = advice.host_check(h.name);
        if (why) {
          left_out += fmt::format("\n{}: host '{}' {}", shown, h.name, *why);
          continue;
        }
        hosts.push_back(h.name);
      }
      const std::string list = remote::shell_quote_arg(fmt::format("{}", fmt::join(hosts, ",")));
      // The format asked for (`hostfile --format mpi`), else MLX's, with TCP's beside it.
      const std::string format = advice.format.empty() ? "mlx-jaccl" : advice.format;
      const bool mlx = format.starts_with("mlx-");
      const std::string kind = mlx ? "mlx" : format;
      const std::string ext = format == "mpi" || format == "mpich" ? ".txt" : ".json";
      const std::string out = remote::shell_quote_arg(
          path.empty() ? kind + "-hostfile" + ext
                       : std::filesystem::path(path).replace_extension("").string() + "-" + kind +
                             ext);
      const std::string instead =
          advice.job_file
              ? fmt::format("list them in the job file instead of its `cluster:` (`hosts: [{}]`; "
                            "launch takes no --hosts)",
                            fmt::join(hosts, ", "))
              : fmt::format("name them with `--hosts {}` instead of --hostfile", list);
      std::string what_to_do;
      if (format == "mpi" || format == "mpich") {
        // Writing an MPI hostfile of an MPI hostfile's hosts would be going round in a circle.
        what_to_do = fmt::format(
            " It is an MPI hostfile already: give it to {} as it is (`{} {}`){}",
            format == "mpi" ? "mpirun" : "mpiexec",
            format == "mpi" ? "mpirun --hostfile" : "mpiexec -f", remote::shell_quote_arg(shown),
            hosts.empty() ? "" : fmt::format(", or, for clusterctl's from what its hosts report, {}",
                                             instead));
      } else if (hosts.empty()) {
        // No host runs a rank (every one slots=0): the note above says so, nothing is below.
        if (!ranked.empty()) {
          what_to_do = " None of its hosts can be used (below): name the hosts by addresses or "
                       "SSH names the others reach them on";
        }
      } else {
        what_to_do = fmt::format(
            " Write {} of its hosts with `clusterctl{}{} hostfile --hosts {} --format {} -o {}`{}, "
            "or {}",
            mlx ? "one" : "the " + format + " hostfile", advice.global.empty() ? "" : " ",
            advice.global, list, format, out,
            advice.format.empty() ? " (--format mlx-ring for TCP)" : "", instead);
      }
      return util::error(
          ExitCode::kUsage,
          fmt::format("{} looks like an MPI hostfile (line {}: '{}'); clusterctl reads MLX's "
                      "JSON hostfile: {}.{}{}{}",
                      shown, mpi->first, mpi->second, kShape,
                      mpi_ranks_note(mpi_hosts, shown, advice.job_file), what_to_do,
                      left_out.empty() ? "" : "\nLeft out of that, as they cannot be used:" +
                                                  left_out));
    }
    const util::JsonSyntaxError at = util::json_syntax_error(text, e);
    return bad(path, fmt::format("not valid JSON at line {}, column {}: {}; {}", at.line, at.column,
                                 at.problem, kShape));
  }
  MlxHostfile hf;
  hf.path = path;
  // Every problem of the file at once: backend, each envs entry, each host and each of its
  // values are checked on their own. The matrix rules need every host read, and JACCL's rules
  // a sound matrix and backend, so those come only when what they rest on is right.
  std::vector<util::Error> errors;
  bool backend_ok = true;
  bool runtime_mismatch = false;  // the rules of the file's backend would not apply
  const json* hosts = &j;
  if (j.is_object()) {
    auto it = j.find("hosts");
    if (it == j.end()) {
      errors.push_back(bad(path, fmt::format("no \"hosts\" list; {}", kShape)));
      hosts = nullptr;
    } else {
      hosts = &*it;
    }
    if (auto b = j.find("backend"); b != j.end() && !b->is_null()) {
      static const std::set<std::string> known = {"", "jaccl", "jaccl-ring", "ring"};
      if (!b->is_string() || known.count(b->get<std::string>()) == 0) {
        errors.push_back(bad(path, fmt::format("unknown backend {}: use \"jaccl\", \"jaccl-ring\", "
                                               "\"ring\" or \"\"",
                                               b->dump())));
        backend_ok = false;
      } else {
        hf.backend = b->get<std::string>();
      }
    }
    if (!hf.backend.empty() && !advice.runtime.empty() && "mlx-" + hf.backend != advice.runtime) {
      const std::string want =
          advice.runtime.starts_with("mlx-") ? advice.runtime.substr(4) : advice.runtime;
      errors.push_back(bad(
          path, fmt::format("\"backend\": \"{}\", but the job's runtime is {}: change one of "
                            "them: the job's `runtime: mlx-{}` to run this file as it is, or the "
                            "file to backend {} (`clusterctl{}{} hostfile --hostfile {} --format "
                            "{} -o NEW.json`, then `cluster: hostfile:NEW.json`)",
                            hf.backend, advice.runtime, hf.backend, want,
                            advice.global.empty() ? "" : " ", advice.global,
                            remote::shell_quote_arg(path), advice.runtime)));
      backend_ok = false;
      runtime_mismatch = true;
    }
    if (auto envs = j.find("envs"); envs != j.end() && !envs->is_null()) {
      if (!envs->is_array()) {
        errors.push_back(bad(path, "\"envs\" must be a list of \"K=V\" strings"));
      }
      // An entry as written, cut when long (one of 100 KiB would fill the screen).
      const auto shown = [](const json& e) {
        return e.is_string() && e.get_ref<const std::string&>().size() > 200
                   ? util::excerpt(e.get_ref<const std::string&>(), 200)
                   : util::json_text(e);
      };
      std::size_t env_bytes = 0;
      for (std::size_t k = 0; envs->is_array() && k < envs->size(); ++k) {
        const json& e = (*envs)[k];
        if (!e.is_string()) {
          errors.push_back(bad(path, fmt::format("envs[{}] = {} is not a \"NAME=VALUE\" string", k,
                                                 util::json_text(e))));
          continue;
        }
        const std::string entry = e.get<std::string>();
        auto why = env_entry_problem(entry);
        if (!why && env_check) why = env_check(entry);
        if (why) {
          errors.push_back(bad(path, fmt::format("envs[{}] = {}: {}", k,
                                                 shown(e), *why)));
          continue;
        }
        env_bytes += entry.size() + 1;
        if (auto big = env_size_problem(env_bytes, k + 1)) {
          // The rest is not looked at: one line, not one per entry beyond.
          errors.push_back(bad(path, fmt::format("envs[{}] = {}: {}", k,
                                                 shown(e), *big)));
          break;
        }
        hf.envs.push_back(entry);
      }
    }
  }
  bool hosts_ok = hosts != nullptr;
  if (hosts != nullptr && (!hosts->is_array() || hosts->empty())) {
    errors.push_back(
        bad(path, fmt::format("\"hosts\" must be a non-empty list of host objects; {}", kShape)));
    hosts_ok = false;
  }
  // By util::host_key: the first rank of each host and its name as written.
  std::unordered_map<std::string, std::pair<std::size_t, std::string>> rank_of;
  const std::size_t n = hosts_ok ? hosts->size() : 0;
  // The `clusterctl hostfile` the messages suggest writes a file of these hosts (as named),
  // with the global options of where the file was given: runnable as printed.
  // Each host once: a file that names one twice (refused below) must not be answered with a
  // --hosts that is refused for the same reason.
  std::vector<std::string> names;
  std::set<std::string> named;
  for (std::size_t i = 0; i < n; ++i) {
    const json& h = (*hosts)[i];
    auto ssh = h.is_object() ? h.find("ssh") : h.end();
    if (ssh != h.end() && ssh->is_string() &&
        named.insert(util::host_key(ssh->get<std::string>())).second) {
      names.push_back(ssh->get<std::string>());
    }
  }
  const discovery::FixCommand fix{advice.global, "", fmt::format("{}", fmt::join(names, ","))};
  for (std::size_t i = 0; i < n; ++i) {
    bool rdma_ok = true;
    auto h = parse_host((*hosts)[i], i, n, path, fix, errors, rdma_ok);
    if (!h || !rdma_ok) hosts_ok = false;  // the matrix rules need every row as written
    if (!h) continue;
    auto [r, fresh] = rank_of.emplace(util::host_key(h->ssh), std::make_pair(i, h->ssh));
    if (!fresh) {
      const std::string& was = r->second.second;
      if (was == h->ssh) {
        errors.push_back(bad(path, fmt::format("{} is named twice (ranks {} and {}): one rank "
                                               "per host",
                                               h->ssh, r->second.first, i)));
      } else {
        errors.push_back(bad(
            path, fmt::format("{} (rank {}) and {} (rank {}) are one host{}: "
                              "one rank per host",
                              was, r->second.first, h->ssh, i, util::same_host_note(was, h->ssh))));
      }
      hosts_ok = false;
    }
    hf.hosts.push_back(std::move(*h));
  }
  if (hosts_ok && !runtime_mismatch) {
    auto matrix = matrix_problems(hf, fix);
    if (matrix.empty() && backend_ok) {
      if (auto st = validate_mlx_hostfile(hf, fix); !st) errors.push_back(st.error());
    }
    for (auto& e : matrix) errors.push_back(std::move(e));
  }
  if (!errors.empty()) return all_of(errors);
  return hf;
}

util::OwnOutput hostfile_output() {
  return {"a hostfile (what `clusterctl hostfile` writes: clusterctl's or MLX's JSON, or an MPI "
          "host list)",
          [](std::string_view text) {
            const json j = json::parse(text, nullptr, false);
            if (j.is_discarded()) return mpi_hostfile_output(text);
            // Ours has a schema; MLX's has none (a cluster state has "hosts" and its schema).
            if (j.is_object() && j.contains("schema")) return j["schema"] == kHostfileSchema;
            return mlx_hostfile_output(j);
          }};
}

util::Result<MlxHostfile> read_mlx_hostfile(const std::string& path, const EnvCheck& env_check,
                                            const MpiHostfileAdvice& mpi) {
  auto text = util::read_file(path);
  if (!text) return text.error();
  return parse_mlx_hostfile(*text, path, env_check, mpi);
}

namespace {

// The port of host `h` whose interface holds IPv4 address `ip`.
std::optional<std::size_t> port_with_address(const topology::HostNode& h, const std::string& ip) {
  for (std::size_t p = 0; p < h.ports.size(); ++p) {
    const auto& itf = h.ports[p].port->interface;
    if (itf && std::find(itf->ipv4.begin(), itf->ipv4.end(), ip) != itf->ipv4.end()) return p;
  }
  return std::nullopt;
}

// The length of the common leading bits of two IPv4 addresses (0 when either is none).
int common_bits(const std::string& a, const std::string& b) {
  const auto x = util::parse_ipv4_prefix(a), y = util::parse_ipv4_prefix(b);
  if (!x || !y) return 0;
  return std::countl_zero(x->address ^ y->address);
}

}  // namespace

std::vector<std::string> down_cables(const MlxHostfile& hf, const discovery::ClusterState& state) {
  const topology::ClusterGraph g(state);
  const std::size_t n = hf.hosts.size();
  std::vector<std::optional<std::size_t>> host_of(n);
  for (std::size_t r = 0; r < n; ++r) host_of[r] = g.host_index(hf.hosts[r].ssh);
  std::vector<std::string> out;
  std::set<std::pair<std::string, std::string>> said;  // end labels, so a cable is said once
  auto judge = [&](std::size_t ha, discovery::CableEnd a, std::optional<std::size_t> hb,
                   discovery::CableEnd b) {
    if (hb && *hb < ha) {  // in the state's host order, as its cables are written
      std::swap(ha, *hb);
      std::swap(a, b);
    }
    const topology::CableLink link =
        topology::cable_link(a, b, g.host(ha).facts, hb ? g.host(*hb).facts : nullptr);
    if (link.up) return;
    const std::string la = discovery::end_label(a), lb = discovery::end_label(b);
    if (!said.insert({std::min(la, lb), std::max(la, lb)}).second) return;
    out.push_back(topology::cable_down_line(a, b, link));
  };
  auto device_port = [&](std::size_t h, const std::string& dev) -> std::optional<std::size_t> {
    const auto& ports = g.host(h).ports;
    for (std::size_t p = 0; p < ports.size(); ++p) {
      if (ports[p].end.rdma_device == dev) return p;
    }
    return std::nullopt;
  };
  // The device matrix: both ends of each cable are named.
  for (std::size_t i = 0; i < n; ++i) {
    if (!host_of[i] || hf.hosts[i].rdma.size() != n) continue;
    for (std::size_t j = i + 1; j < n; ++j) {
      if (!host_of[j] || hf.hosts[j].rdma.size() != n) continue;
      const MlxCell& cell = hf.hosts[i].rdma[j];
      const MlxCell& back = hf.hosts[j].rdma[i];
      for (std::size_t k = 0; k < cell.size() && k < back.size(); ++k) {
        const auto pi = device_port(*host_of[i], cell[k]);
        const auto pj = device_port(*host_of[j], back[k]);
        if (!pi || !pj) continue;  // a device the host does not have: check_against names it
        const topology::PortNode& a = g.host(*host_of[i]).ports[*pi];
        const topology::PortNode& b = g.host(*host_of[j]).ports[*pj];
        // A port cabled now (to another host) says the file is stale, not the cable down.
        if (a.cabled() || b.cabled()) continue;
        judge(*host_of[i], a.end, host_of[j], b.end);
      }
    }
  }
  // The ring: rank i's addresses face its left neighbour; the far end is found by address.
  if (hf.backend == "ring" && n >= 2) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t left = (i + n - 1) % n;
      if (!host_of[i] || !host_of[left] || *host_of[i] == *host_of[left]) continue;
      const topology::HostNode& here = g.host(*host_of[i]);
      const topology::HostNode& there = g.host(*host_of[left]);
      for (const std::string& ip : hf.hosts[i].ips) {
        const auto pi = port_with_address(here, ip);
        if (!pi) continue;  // no port's address: foreign_addresses or check_against says it
        const topology::PortNode& a = here.ports[*pi];
        if (a.cabled()) continue;  // up, or cabled elsewhere: the file is stale, not the cable
        std::optional<std::size_t> best;
        int best_bits = -1;
        for (std::size_t q = 0; q < there.ports.size(); ++q) {
          const topology::PortNode& b = there.ports[q];
          if (b.cabled() || !b.port->interface) continue;
          for (const std::string& addr : b.port->interface->ipv4) {
            if (int bits = common_bits(ip, addr); bits > best_bits) {
              best_bits = bits;
              best = q;
            }
          }
        }
        discovery::CableEnd far;
        far.host = there.name();
        if (best) far = there.ports[*best].end;
        judge(*host_of[i], a.end, best ? host_of[left] : std::nullopt, far);
      }
    }
  }
  return out;
}

std::vector<std::string> foreign_addresses(const MlxHostfile& hf,
                                           const discovery::ClusterState& state) {
  const topology::ClusterGraph g(state);
  std::vector<std::string> out;
  for (std::size_t r = 0; r < hf.hosts.size(); ++r) {
    const auto h = g.host_index(hf.hosts[r].ssh);
    if (!h) continue;  // check_against names a host outside the state
    const discovery::HostFacts& f = *g.host(*h).facts;
    std::vector<std::string> v4, v6;
    auto add = [&](const discovery::NetInterface& itf) {
      for (const auto& a : itf.ipv4) {
        if (std::find(v4.begin(), v4.end(), a) == v4.end()) v4.push_back(a);
      }
      for (const auto& a : itf.ipv6) {
        if (std::find(v6.begin(), v6.end(), a) == v6.end()) v6.push_back(a);
      }
    };
    if (!f.management_address.empty()) {
      (f.management_address.find(':') != std::string::npos ? v6 : v4)
          .push_back(f.management_address);
    }
    for (const auto& p : f.ports) {
      if (p.interface) add(*p.interface);
    }
    for (const auto& itf : f.interfaces) add(itf);
    for (std::size_t k = 0; k < hf.hosts[r].ips.size(); ++k) {
      const std::string& ip = hf.hosts[r].ips[k];
      const bool v6ip = ip.find(':') != std::string::npos;
      const auto& known = v6ip ? v6 : v4;
      if (std::find(known.begin(), known.end(), ip) != known.end()) continue;
      out.push_back(fmt::format(
          "{}: hosts[{}] ({}): ips[{}] = {} is not an address of {} ({})",
          hf.path.empty() ? std::string("the hostfile") : hf.path, r, f.host, k, ip, f.host,
          known.empty() ? fmt::format("it has no IPv{} address", v6ip ? 6 : 4)
                        : fmt::format("its addresses: {}", fmt::join(known, ", "))));
    }
  }
  return out;
}

util::Status check_against(const MlxHostfile& hf, const discovery::ClusterState& state,
                           const discovery::FixCommand& fix, const std::string& write_with) {
  const std::string again =
      !write_with.empty()
          ? write_with
          : fix.command("hostfile", "--format mlx-" + (hf.backend.empty() ? std::string("jaccl")
                                                                          : hf.backend));
  // An address no host has: MLX would fail on it with a raw socket error.
  if (auto foreign = foreign_addresses(hf, state); !foreign.empty()) {
    return util::error(ExitCode::kCheckFailed,
                       fmt::format("{}\nwrite the host's own addresses, or a matching file "
                                   "with `{}`",
                                   fmt::join(foreign, "\n"), again));
  }
  // A cable that is down is the cabling's fault, not the file's: said first, with its fix.
  if (auto down = down_cables(hf, state); !down.empty()) {
    return util::error(ExitCode::kCheckFailed,
                       fmt::format("{}: cables its ranks use are down:\n  {}\nfix the cabling: "
                                   "the file needs no change",
                                   hf.path.empty() ? std::string("the hostfile") : hf.path,
                                   fmt::join(down, "\n  ")));
  }
  const topology::ClusterGraph g(state);
  const std::size_t n = hf.hosts.size();
  std::vector<std::string> lines;
  ExitCode code = ExitCode::kCheckFailed;

  // The state's host of each rank, and the rank of each state host.
  std::vector<std::optional<std::size_t>> host_of(n);
  std::vector<std::optional<std::size_t>> rank_of(g.size());
  for (std::size_t r = 0; r < n; ++r) {
    const std::string& name = hf.hosts[r].ssh;
    host_of[r] = g.host_index(name);
    if (host_of[r]) {
      rank_of[*host_of[r]] = r;
      continue;
    }
    auto p = std::find_if(state.problems.begin(), state.problems.end(),
                          [&](const discovery::HostProblem& q) { return q.host == name; });
    if (p != state.problems.end()) {
      code = util::worst(code, p->code());
      lines.push_back(fmt::format("{} could not be probed: {}", rank_label(hf, r), p->message));
    } else {
      std::vector<std::string> names;
      for (const auto& h : g.hosts()) names.push_back(h.name());
      lines.push_back(fmt::format("{} is not a host of the cluster state (its hosts: {})",
                                  rank_label(hf, r), fmt::join(names, ", ")));
    }
  }
  auto who = [&](std::size_t h) {
    return rank_of[h] ? fmt::format("{} (rank {})", g.host(h).name(), *rank_of[h])
                      : fmt::format("{}, which is not in this hostfile", g.host(h).name());
  };

  for (std::size_t i = 0; i < n; ++i) {
    if (!host_of[i] || hf.hosts[i].rdma.size() != n) continue;
    const std::size_t hi = *host_of[i];
    const topology::HostNode& node = g.host(hi);
    for (std::size_t j = 0; j < n; ++j) {
      const MlxCell& cell = hf.hosts[i].rdma[j];
      for (std::size_t k = 0; k < cell.size(); ++k) {
        const std::string& dev = cell[k];
        const std::string at =
            cell.size() > 1 ? fmt::format("{}[{}]", cell_name(i, j), k) : cell_name(i, j);
        auto port =
            std::find_if(node.ports.begin(), node.ports.end(),
                         [&](const topology::PortNode& p) { return p.end.rdma_device == dev; });
        if (port == node.ports.end()) {
          std::vector<std::string> devs;
          for (const auto& p : node.ports) {
            if (p.end.rdma_device) devs.push_back(*p.end.rdma_device);
          }
          lines.push_back(fmt::format(
              "{}: {} names {}, which {} does not have ({})", rank_label(hf, i), at, dev,
              node.name(),
              devs.empty() ? std::string("it has no RDMA devices on its ports")
                           : fmt::format("its port devices: {}", fmt::join(devs, ", "))));
          continue;
        }
        std::optional<std::size_t> cable, other;
        for (std::size_t c : port->cables) {
          if ((other = topology::other_host(g, c, hi))) {
            cable = c;
            break;
          }
        }
        if (!cable) {
          lines.push_back(fmt::format("{}: {} names {}, but {} has no cable to another host",
                                      rank_label(hf, i), at, dev, discovery::end_label(port->end)));
          continue;
        }
        if (!host_of[j] || *other != *host_of[j]) {
          lines.push_back(
              fmt::format("{}: {} = {} is cabled to {}, not to {}: the rank order "
                          "does not match the cabling",
                          rank_label(hf, i), at, dev, who(*other), rank_label(hf, j)));
          continue;
        }
        // The k-th entries of both ends must be one cable; said once per pair, from i < j.
        if (i > j || hf.hosts[j].rdma.size() != n || k >= hf.hosts[j].rdma[i].size()) continue;
        const std::string& back = hf.hosts[j].rdma[i][k];
        auto far = cable_end_device(g, *cable, *other);
        if (far != back) {
          lines.push_back(fmt::format(
              "{}: {} = {} and {}{} = {} are not the same cable: {} {} is cabled to {} {}",
              rank_label(hf, i), at, dev, cell_name(j, i),
              cell.size() > 1 ? fmt::format("[{}]", k) : std::string(), back, node.name(), dev,
              g.host(*other).name(), far.value_or(std::string("a port without RDMA device"))));
        }
      }
    }
  }

  if (hf.backend == "ring" && n >= 2) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t left = (i + n - 1) % n;
      if (!host_of[i] || !host_of[left]) continue;
      const std::size_t hi = *host_of[i];
      for (std::size_t k = 0; k < hf.hosts[i].ips.size(); ++k) {
        const std::string& ip = hf.hosts[i].ips[k];
        bool found = false;
        for (const auto& p : g.host(hi).ports) {
          const bool to_left = std::any_of(p.cables.begin(), p.cables.end(), [&](std::size_t c) {
            return topology::other_host(g, c, hi) == host_of[left];
          });
          const auto& itf = p.port->interface;
          if (to_left && itf &&
              std::find(itf->ipv4.begin(), itf->ipv4.end(), ip) != itf->ipv4.end()) {
            found = true;
          }
        }
        if (!found) {
          lines.push_back(
              fmt::format("{}: ips[{}] = {} is not an address of {} on a port "
                          "cabled to its left neighbour {}",
                          rank_label(hf, i), k, ip, g.host(hi).name(), rank_label(hf, left)));
        }
      }
    }
  }
  if (lines.empty()) return {};
  return util::error(
      code, fmt::format(
                "{}: does not match the cabling of the cluster:\n  {}\nwrite a "
                "matching one with `{}`",
                hf.path.empty() ? std::string("the hostfile") : hf.path, fmt::join(lines, "\n  "),
                again));
}

}  // namespace cc::provision
