// verify-mesh-bench: times `clusterctl verify-mesh` on a generated 64-host cluster state, in
// memory (no hosts, no files), against the goal of under 1 s; then on 1,000 hosts (-N)
// without cables and with a sparse cabling (make_large), against the goal of under 2 s.
//
//   verify-mesh-bench [-n hosts] [-N large-hosts] [-I inventory-hosts] [-r runs] [-o DIR]
// The state: n Macs (default 64), each with n - 1 Thunderbolt 5 ports (receptacle r = en<r> =
// rdma_en<r>, random domain UUIDs), every pair cabled once at 80 Gb/s, RDMA enabled, every port
// PORT_ACTIVE with its GID table and an IPv4 address; and a variant with 5 cables pulled (5
// disjoint pairs). Per variant, the median of -r runs (default 5) of:
//   state JSON   serialise the ClusterState to text and parse it back (what `verify-mesh
//                cluster.json` pays to read its input);
//   analysis     topology::verify_mesh: graph, checks, ring search, cabling plan;
//   render       text + JSON + DOT renderings of the report.
// -o DIR also writes both states as DIR/full.json and DIR/missing.json (and the large ones as
// DIR/large-no-cables.json, DIR/large-cabled.json), for trying `clusterctl verify-mesh
// DIR/missing.json` by hand. Last, an inventory of -I hosts (default 40,000) loaded and chosen
// by name, against the goal of under 1 s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <stdlib.h>  // mkdtemp
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "discovery/cluster_state.h"
#include "remote/inventory.h"
#include "topology/report.h"

namespace {

using cc::discovery::Cable;
using cc::discovery::CableSource;
using cc::discovery::ClusterState;
using cc::discovery::HostFacts;
using cc::discovery::NetInterface;
using cc::discovery::Peer;
using cc::discovery::Port;
using cc::discovery::RdmaState;

constexpr double kGoalMs = 1000;
constexpr double kLargeGoalMs = 2000;      // verify-mesh on 1,000 hosts
constexpr double kInventoryGoalMs = 1000;  // load 40,000 hosts and choose them all by name

std::string uuid(std::mt19937_64& rng) {
  std::uniform_int_distribution<unsigned long long> d;
  unsigned long long hi = d(rng), lo = d(rng);
  return fmt::format("{:08X}-{:04X}-{:04X}-{:04X}-{:012X}", hi >> 32, (hi >> 16) & 0xffff,
                     hi & 0xffff, lo >> 48, lo & 0xffffffffffffULL);
}

std::string mac_address(std::size_t host, int port) {
  return fmt::format("36:4d:{:02x}:{:02x}:4e:{:02x}", host & 0xff, port & 0xff,
                     (host * 7 + static_cast<std::size_t>(port)) & 0xff);
}

HostFacts make_mac(std::size_t i, int ports, std::mt19937_64& rng) {
  HostFacts h;
  h.host = fmt::format("studio{:02}", i + 1);
  h.os = {"macOS", "26.2", "25C56"};
  h.model = "Mac16,11";
  h.cpu = "Apple M4 Pro";
  h.memory_bytes = 64ULL << 30;
  h.management_address = fmt::format("10.0.{}.{}", i / 200, 10 + i % 200);
  h.rdma.state = RdmaState::kEnabled;
  for (int r = 1; r <= ports; ++r) {
    Port p;
    p.receptacle = r;
    p.domain_uuid = uuid(rng);
    NetInterface itf;
    itf.name = fmt::format("en{}", r);
    itf.mac = mac_address(i, r);
    itf.up = itf.running = true;
    itf.mtu = 1500;
    itf.ipv6 = {fmt::format("fe80::344d:{:x}ff:fe{:02x}:4e{:02x}", i, r, i & 0xff)};
    p.interface = itf;
    p.rdma_device = fmt::format("rdma_en{}", r);
    p.link_speed_gbps = 80;
    p.generation = 5;
    h.ports.push_back(p);
    cc::discovery::RdmaDevice d;
    d.name = *p.rdma_device;
    d.transport = "Thunderbolt (100)";
    d.node_guid = fmt::format("344d:04ff:fe{:02x}:{:04x}", i & 0xff, r);
    d.netdev = itf.name;
    d.ports.push_back({1,
                       "PORT_ACTIVE",
                       true,
                       4096,
                       "Thunderbolt",
                       {{0, fmt::format("fe80::344d:4ff:fe{:02x}:{:04x}", i & 0xff, r)}}});
    h.rdma.devices.push_back(d);
  }
  NetInterface lo{"lo0", "", true, true, 16384, {"127.0.0.1"}, {"::1"}, {}, {}, ""};
  NetInterface en0{"en0", mac_address(i, 0), true, true, 1500, {h.management_address}, {}, {}, {},
                   ""};
  NetInterface bridge{"bridge0", "", false, false, 1500, {}, {}, {}, {}, ""};
  h.interfaces = {lo, en0, bridge};
  return h;
}

// n Macs, every pair cabled once: host a's k-th cable on its receptacle k, in pair order.
ClusterState make_state(std::size_t n) {
  std::mt19937_64 rng(20261130);
  ClusterState s;
  s.created_at = "2026-11-30T18:00:00Z";
  const int ports = static_cast<int>(n) - 1;
  for (std::size_t i = 0; i < n; ++i) s.hosts.push_back(make_mac(i, ports, rng));
  std::vector<std::size_t> next(n, 0);
  std::size_t link = 0;
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a + 1; b < n; ++b, ++link) {
      // A /30 per cable: 10.<64 + link / 64>.<4 (link % 64)>.{1,2}
      const std::string net = fmt::format("10.{}.{}", 64 + link / 64, 4 * (link % 64));
      for (auto [h, other, last] : {std::tuple{a, b, 1}, std::tuple{b, a, 2}}) {
        Port& p = s.hosts[h].ports[next[h]];
        const Port& q = s.hosts[other].ports[next[other]];
        p.interface->ipv4 = {fmt::format("{}.{}", net, last)};
        Peer peer;
        peer.kind = Peer::Kind::kHost;
        peer.name = "Mac mini";
        peer.model = s.hosts[other].model;
        peer.vendor = "Apple Inc.";
        peer.domain_uuid = q.domain_uuid;
        peer.rdma_enabled = true;
        p.peers = {peer};
        // GID[1] = ::ffff:<IPv4>, GID[2] = IPv6 link-local (docs/platform.md#gid-table-and-addressing).
        auto& gids = s.hosts[h].rdma.devices[next[h]].ports[0].gids;
        gids.push_back({1, "::ffff:" + p.interface->ipv4.front()});
        gids.push_back({2, p.interface->ipv6.front()});
      }
      Cable c;
      c.a = cc::discovery::end_of(s.hosts[a], s.hosts[a].ports[next[a]++]);
      c.b = cc::discovery::end_of(s.hosts[b], s.hosts[b].ports[next[b]++]);
      c.link_speed_gbps = 80;
      c.generation = 5;
      c.sources = {CableSource::kThunderbolt, CableSource::kNeighbour};
      c.seen_from_a = c.seen_from_b = true;
      s.cables.push_back(c);
    }
  }
  return s;
}

// The same state with the cables of up to 5 disjoint pairs pulled (hosts k and n-1-k, both
// ports left free).
ClusterState pull_five(ClusterState s) {
  const std::size_t n = s.hosts.size();
  for (std::size_t k = 0; k < 5 && k < n - 1 - k; ++k) {
    const std::string& a = s.hosts[k].host;
    const std::string& b = s.hosts[n - 1 - k].host;
    auto it = std::find_if(s.cables.begin(), s.cables.end(), [&](const Cable& c) {
      return (c.a.host == a && c.b.host == b) || (c.a.host == b && c.b.host == a);
    });
    if (it == s.cables.end()) continue;
    for (const auto& end : {it->a, it->b}) {
      for (auto& h : s.hosts) {
        if (h.host != end.host) continue;
        for (auto& p : h.ports) {
          if (p.interface && p.interface->name == end.interface) {
            p.peers.clear();
            p.link_speed_gbps = p.generation = 0;
            p.interface->running = false;
          }
        }
      }
    }
    s.cables.erase(it);
  }
  return s;
}

// The scale case: n Macs with 4 TB5 ports each (a Mac Studio M4 Max), either without any cable
// or cabled as a ring (host i port 2 - host i+1 port 1) plus a chord from each host i < n/2 to
// host i + n/2 on port 3 (a Moebius ladder: 3 cables per host, port 4 free, n/2 + n cables).
// Nearly every pair is missing, so the report holds ~n^2/2 missing-cable findings and as many
// unplanned pairs.
ClusterState make_large(std::size_t n, bool cabled) {
  std::mt19937_64 rng(20261201);
  ClusterState s;
  s.created_at = "2026-12-01T18:00:00Z";
  for (std::size_t i = 0; i < n; ++i) s.hosts.push_back(make_mac(i, 4, rng));
  if (!cabled) return s;
  auto cable = [&](std::size_t a, int pa, std::size_t b, int pb) {
    if (b < a) {
      std::swap(a, b);
      std::swap(pa, pb);
    }
    Cable c;
    c.a = cc::discovery::end_of(s.hosts[a], s.hosts[a].ports[static_cast<std::size_t>(pa - 1)]);
    c.b = cc::discovery::end_of(s.hosts[b], s.hosts[b].ports[static_cast<std::size_t>(pb - 1)]);
    c.link_speed_gbps = 80;
    c.generation = 5;
    c.sources = {CableSource::kThunderbolt, CableSource::kNeighbour};
    c.seen_from_a = c.seen_from_b = true;
    s.cables.push_back(c);
  };
  for (std::size_t i = 0; i < n; ++i) cable(i, 2, (i + 1) % n, 1);
  for (std::size_t i = 0; i < n / 2; ++i) cable(i, 3, i + n / 2, 3);
  return s;
}

double median_ms(int runs, const std::function<void()>& f) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Figures {
  double json = 0, analysis = 0, render = 0;
  double total() const { return json + analysis + render; }
  std::size_t json_bytes = 0;
  std::string summary;
  int exit_code = 0;
};

Figures measure(const ClusterState& state, int runs) {
  Figures f;
  volatile std::size_t sink = 0;
  f.json = median_ms(runs, [&] {
    std::string text = nlohmann::json(state).dump(2);
    auto back = cc::discovery::cluster_state_from_json(nlohmann::json::parse(text));
    if (!back) {
      std::fprintf(stderr, "verify-mesh-bench: %s\n", back.error().message.c_str());
      std::exit(1);
    }
    f.json_bytes = text.size();
    sink = sink + back->cables.size();
  });
  cc::topology::VerifyReport report;
  f.analysis = median_ms(runs, [&] { report = cc::topology::verify_mesh(state); });
  f.render = median_ms(runs, [&] {
    std::string all = cc::topology::render_text(report, cc::util::OutputStyle{}) +
                      cc::topology::render_json(report) + cc::topology::render_dot(report);
    sink = sink + all.size();
  });
  f.summary = report.summary.text;
  f.exit_code = cc::util::to_int(cc::topology::exit_code(report));
  return f;
}

// Loading an inventory of `n` hosts (YAML parse, checks) and choosing all of them by name
// (`--hosts h0,h1,...`), the medians of `runs`: both must grow linearly (40,000 hosts once took
// 2.75 s to load). The file lives in a directory made for this run (mkdtemp), removed after.
int inventory_part(std::size_t n, int runs) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "verify-mesh-bench-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    fmt::print(stderr, "verify-mesh-bench: cannot make a directory from {}\n", tmpl);
    return 1;
  }
  const std::filesystem::path dir = tmpl;
  cc::remote::Inventory inv;
  std::string names;
  for (std::size_t i = 0; i < n; ++i) {
    cc::remote::InventoryHost h;
    h.name = fmt::format("h{}", i);
    h.ssh = fmt::format("root@10.{}.{}.{}", (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff);
    h.address = fmt::format("10.{}.{}.{}", (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff);
    names += (i ? "," : "") + h.name;
    inv.hosts.push_back(std::move(h));
  }
  const std::filesystem::path file = dir / "inventory.yaml";
  if (auto st = cc::remote::save_inventory(file, inv); !st) {
    fmt::print(stderr, "verify-mesh-bench: {}\n", st.error().message);
    return 1;
  }
  std::size_t loaded = 0, chosen = 0;
  cc::remote::Inventory back;
  const double load = median_ms(runs, [&] {
    auto r = cc::remote::load_inventory(file);
    if (!r) {
      fmt::print(stderr, "verify-mesh-bench: {}\n", r.error().message);
      std::exit(1);
    }
    loaded = r->hosts.size();
    back = std::move(*r);
  });
  const double select = median_ms(runs, [&] {
    auto r = cc::remote::select_hosts(back, names);
    chosen = r ? r->size() : 0;
  });
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(file, ec);
  std::filesystem::remove_all(dir, ec);
  fmt::print(
      "\nverify-mesh-bench: an inventory of {} hosts ({:.1f} MB of YAML); median of {} "
      "runs\n\n",
      n, static_cast<double>(bytes) / 1e6, runs);
  fmt::print("{:<30} {:>9.1f} ms  ({} hosts)\n", "load + check the inventory", load, loaded);
  fmt::print("{:<30} {:>9.1f} ms  ({} hosts)\n", "--hosts naming every host", select, chosen);
  fmt::print("\ngoal: < {:.0f} ms; load + select at {:.2f}x the goal\n", kInventoryGoalMs,
             (load + select) / kInventoryGoalMs);
  return loaded == n && chosen == n ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t hosts = 64;
  std::size_t large = 1000;       // the scale case (0 = skip it)
  std::size_t inventory = 40000;  // the inventory case (0 = skip it)
  int runs = 5;
  std::string out_dir;
  CLI::App app{"Times verify-mesh on generated cluster states, and inventory loading"};
  app.add_option("-n", hosts, "Hosts of the full-mesh state")->check(CLI::Range(2, 512));
  app.add_option("-N", large, "Hosts of the scale states (0: skip)");
  app.add_option("-I", inventory, "Hosts of the inventory (0: skip)");
  app.add_option("-r", runs, "Runs per figure (the median is shown)")->check(CLI::PositiveNumber);
  app.add_option("-o", out_dir, "Also write the states there as JSON");
  CLI11_PARSE(app, argc, argv);
  const ClusterState full = make_state(hosts);
  const ClusterState missing = pull_five(full);
  if (!out_dir.empty()) {
    for (const auto& [state, name] : {std::pair{&full, "full.json"}, {&missing, "missing.json"}}) {
      auto st = cc::discovery::save_cluster_state(*state, out_dir + "/" + name);
      if (!st) {
        fmt::print(stderr, "verify-mesh-bench: {}\n", st.error().message);
        return 1;
      }
    }
  }
  const Figures a = measure(full, runs);
  const Figures b = measure(missing, runs);

  const std::string pulled =
      fmt::format("{} cables pulled", full.cables.size() - missing.cables.size());
  fmt::print(
      "verify-mesh-bench: {} Macs, {} TB5 ports each, {} cables; state JSON {:.1f} MB; "
      "median of {} runs\n\n",
      hosts, hosts - 1, full.cables.size(), static_cast<double>(a.json_bytes) / 1e6, runs);
  fmt::print("{:<30} {:>12} {:>18}\n", "", "full mesh", pulled);
  auto row = [](const char* what, double x, double y) {
    fmt::print("{:<30} {:>9.1f} ms {:>15.1f} ms\n", what, x, y);
  };
  row("state JSON serialise + parse", a.json, b.json);
  row("graph + checks + ring + plan", a.analysis, b.analysis);
  row("render text + json + dot", a.render, b.render);
  row("total", a.total(), b.total());
  fmt::print("\ngoal: < {:.0f} ms; full mesh at {:.2f}x the goal, {} at {:.2f}x\n", kGoalMs,
             a.total() / kGoalMs, pulled, b.total() / kGoalMs);
  fmt::print("full mesh: exit {}, {}\n", a.exit_code, a.summary);
  fmt::print("{}: exit {}, {}\n", pulled, b.exit_code, b.summary);
  if (large == 0) return inventory > 0 ? inventory_part(inventory, runs) : 0;

  const ClusterState bare = make_large(large, false);
  const ClusterState ladder = make_large(large, true);
  if (!out_dir.empty()) {
    for (const auto& [state, name] :
         {std::pair{&bare, "large-no-cables.json"}, {&ladder, "large-cabled.json"}}) {
      auto st = cc::discovery::save_cluster_state(*state, out_dir + "/" + name);
      if (!st) {
        fmt::print(stderr, "verify-mesh-bench: {}\n", st.error().message);
        return 1;
      }
    }
  }
  const Figures c = measure(bare, runs);
  const Figures d = measure(ladder, runs);
  fmt::print(
      "\nverify-mesh-bench: {} Macs, 4 TB5 ports each; without cables, and with {} cables (a "
      "ring plus chords); state JSON {:.1f} / {:.1f} MB; median of {} runs\n\n",
      large, ladder.cables.size(), static_cast<double>(c.json_bytes) / 1e6,
      static_cast<double>(d.json_bytes) / 1e6, runs);
  fmt::print("{:<30} {:>12} {:>18}\n", "", "no cables", "with cables");
  row("state JSON serialise + parse", c.json, d.json);
  row("graph + checks + ring + plan", c.analysis, d.analysis);
  row("render text + json + dot", c.render, d.render);
  row("total", c.total(), d.total());
  fmt::print("\ngoal: < {:.0f} ms; no cables at {:.2f}x the goal, with cables at {:.2f}x\n",
             kLargeGoalMs, c.total() / kLargeGoalMs, d.total() / kLargeGoalMs);
  fmt::print("no cables: exit {}, {}\n", c.exit_code, c.summary);
  fmt::print("with cables: exit {}, {}\n", d.exit_code, d.summary);
  return inventory > 0 ? inventory_part(inventory, runs) : 0;
}
