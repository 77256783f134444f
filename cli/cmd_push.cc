// `clusterctl push SRC... [--to all|HOSTS] [--dest DIR] [--from HOST] [--manifest FILE]`: copies
// files and directory trees to every target host over the cluster's cables (push/rank.h): one job of
// launch/ with one rank of clusterctl-push-rank per host (uploaded from beside this binary),
// rank 0 on the source host. Exit: 0 done; 2 bad input or a failed preflight (nothing was
// written anywhere); 3 a host unreachable; 4 a transfer failed; 130 Ctrl-C (parts stay under
// their temporary names and the next push resumes them).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/cable_watch.h"
#include "cli/cluster_source.h"
#include "cli/context.h"
#include "cli/hosts.h"
#include "cli/options.h"
#include "discovery/cluster_state.h"
#include "launch/output.h"
#include "launch/placement.h"
#include "launch/rank_env.h"
#include "launch/runner.h"
#include "push/manifest.h"
#include "remote/inventory.h"
#include "util/address.h"
#include "util/atomic_file.h"
#include "util/clock.h"
#include "util/interrupt.h"
#include "util/json_text.h"
#include "util/self_exe.h"
#include "util/state_dir.h"
#include "util/text.h"
#include "util/yaml_reader.h"

namespace cc::cli {
namespace {

namespace fs = std::filesystem;
using util::ExitCode;

struct PushCli {
  std::vector<std::string> sources;
  std::string to = "all";
  std::string dest;
  std::string from;
  std::string cluster;
  std::string network = "cables";
  std::string manifest;
  bool checksum = false;
  std::uint64_t chunk = 8u << 20;
  int port = 32324;
  double timeout_s = 300;
};

// The rank program: $CLUSTERCTL_PUSH_RANK, else beside this binary (the build tree), else
// ../libexec/clusterctl/ (an install).
util::Result<fs::path> rank_program() {
  if (const char* env = std::getenv("CLUSTERCTL_PUSH_RANK"); env != nullptr && *env != '\0') {
    return fs::path(env);
  }
  const fs::path self = util::executable_path();
  for (const fs::path& p : {self.parent_path() / "clusterctl-push-rank",
                            self.parent_path().parent_path() / "libexec" / "clusterctl" /
                                "clusterctl-push-rank"}) {
    std::error_code ec;
    if (!self.empty() && fs::is_regular_file(p, ec)) return p;
  }
  return util::error(ExitCode::kUsage,
                     fmt::format("cannot find clusterctl-push-rank beside {} or in "
                                 "../libexec/clusterctl: in a build tree, build it (cmake "
                                 "--build BUILD --target clusterctl-push-rank); in an install, "
                                 "reinstall clusterctl; or set CLUSTERCTL_PUSH_RANK to its path",
                                 self.string()));
}

// The job's hosts: the source first, then the targets, each as placed by launch/.
util::Result<launch::Placement> push_hosts(const Context& ctx, const PushCli& o,
                                           GlobalOptions& g) {
  launch::JobSpec spec;
  spec.name = "push";
  spec.source = "clusterctl push";
  if (!o.cluster.empty()) {
    spec.cluster = launch::ClusterRef{launch::ClusterRef::Kind::kClusterState,
                                      fs::absolute(o.cluster).lexically_normal().string()};
  } else if (!ctx.global.lab.empty()) {
    spec.cluster = launch::ClusterRef{launch::ClusterRef::Kind::kLab, ctx.global.lab};
  } else if (!ctx.global.inventory.empty()) {
    spec.cluster = launch::ClusterRef{launch::ClusterRef::Kind::kInventory,
                                      fs::absolute(ctx.global.inventory).lexically_normal().string()};
  } else {
    return util::error(ExitCode::kUsage,
                       "no hosts: give --cluster cluster.json (after `network apply`: the "
                       "transfer then uses the cables), --lab NAME or --inventory FILE");
  }
  g = ctx.global;
  if (!o.cluster.empty()) {  // its hosts through the lab the state records (options_for_state)
    auto state = discovery::load_cluster_state(o.cluster, global_words(ctx.global));
    if (!state) return state.error();
    auto resolved = options_for_state(ctx.global, *state, o.cluster);
    if (!resolved) return resolved.error();
    g = std::move(*resolved);
  }
  auto placed = launch::place(spec, [&] { return selected_inventory(g); }, global_words(ctx.global));
  if (!placed) return placed.error();
  launch::Placement all = std::move(*placed);
  auto index_of = [&](const std::string& name) -> long {
    for (size_t i = 0; i < all.hosts.size(); ++i) {
      if (util::same_host_name(all.hosts[i].name, name) ||
          util::same_host_name(all.names[i], name)) {
        return static_cast<long>(i);
      }
    }
    return -1;
  };
  std::vector<size_t> order;
  const long from = o.from.empty() ? 0 : index_of(o.from);
  // An unknown name is answered as `health --hosts` answers one: with the file that has the
  // hosts, the closest name and the names there are.
  auto unknown = [&](std::string_view option, const std::string& name) {
    std::vector<std::string> known;
    for (const auto& h : all.hosts) known.push_back(h.name);
    const std::string where =
        spec.cluster->kind == launch::ClusterRef::Kind::kLab
            ? (remote::lab_dir(spec.cluster->value) / "inventory.yaml").string()
            : spec.cluster->value;
    util::Error e = remote::unknown_host_error(name, known, where);
    e.message = fmt::format("{}: {}", option, e.message);
    return e;
  };
  if (from < 0) return unknown("--from", o.from);
  order.push_back(static_cast<size_t>(from));
  if (o.to == "all") {
    for (size_t i = 0; i < all.hosts.size(); ++i) {
      if (i != static_cast<size_t>(from)) order.push_back(i);
    }
  } else {
    for (const auto& name : remote::split_host_list(o.to)) {
      const long i = index_of(name);
      if (i < 0) return unknown("--to", name);
      if (static_cast<size_t>(i) == order.front()) {
        return util::error(ExitCode::kUsage,
                           fmt::format("--to: {} is the source (--from, or the cluster's first "
                                       "host); name only targets",
                                       name));
      }
      if (std::find(order.begin(), order.end(), static_cast<size_t>(i)) != order.end()) {
        return util::error(ExitCode::kUsage,
                           fmt::format("--to: {} is named twice", name));
      }
      order.push_back(static_cast<size_t>(i));
    }
  }
  if (order.size() < 2) {
    return util::error(ExitCode::kUsage, "no target host: the cluster has only the source");
  }
  launch::Placement out;
  for (size_t i : order) {
    out.hosts.push_back(all.hosts[i]);
    out.names.push_back(all.names[i]);
  }
  if (all.state) {
    // The state's hosts and cables among the job's hosts, in the job's order.
    discovery::ClusterState sub;
    for (size_t i : order) {
      const auto* h = all.state->find_host(all.hosts[i].name);
      if (h != nullptr) sub.hosts.push_back(*h);
    }
    auto pos = [&](const std::string& name) {
      for (size_t i = 0; i < sub.hosts.size(); ++i) {
        if (sub.hosts[i].host == name) return static_cast<long>(i);
      }
      return -1L;
    };
    for (auto c : all.state->cables) {
      const long a = pos(c.a.host), b = pos(c.b.host);
      if (a < 0 || b < 0) continue;
      if (a > b) {
        std::swap(c.a, c.b);
        std::swap(c.seen_from_a, c.seen_from_b);
      }
      sub.cables.push_back(std::move(c));
    }
    sub.network = all.state->network;
    if (sub.hosts.size() == out.hosts.size()) out.state = std::move(sub);
  }
  return out;
}

// --manifest FILE: a YAML mapping of target host -> list of paths or globs (push/manifest.h,
// Share); `hosts` the job's hosts in rank order (rank 0 the source).
util::Result<std::vector<push::Share>> read_shares(const std::string& file,
                                                   const std::vector<launch::LaunchHost>& hosts) {
  auto text = util::read_file(file);
  if (!text) return text.error();
  util::YamlReader r(file, "the manifest");
  auto doc = r.load(*text);
  if (!doc) return doc.error();
  const util::Field root = util::YamlReader::root(*doc);
  auto entries = r.any_mapping(root);
  if (!entries) return entries.error();
  std::vector<util::Error> errors;
  std::vector<push::Share> shares;
  std::string targets;
  for (size_t i = 1; i < hosts.size(); ++i) targets += (i > 1 ? ", " : "") + hosts[i].name;
  for (const auto& f : *entries) {
    int rank = -1;
    for (size_t i = 0; i < hosts.size(); ++i) {
      if (hosts[i].name == f.key) rank = static_cast<int>(i);
    }
    if (rank <= 0) {
      errors.push_back(r.error(f.key_mark, fmt::format("{}: {} (the targets: {})", f.key,
                                                       rank == 0 ? "is the source of this push"
                                                                 : "is not a target of this push",
                                                       targets)));
      continue;
    }
    auto items = r.list(f, "a list of paths or globs");
    if (!items) {
      errors.push_back(items.error());
      continue;
    }
    for (const auto& item : *items) {
      auto glob = r.nonempty_string(item);
      if (!glob) {
        errors.push_back(glob.error());
        continue;
      }
      std::string g = *glob;
      while (g.size() > 1 && g.back() == '/') g.pop_back();
      if (g.front() == '/' || g.find('\0') != std::string::npos) {
        errors.push_back(r.error(item.mark(), fmt::format("{}: '{}': give a path relative to the "
                                                          "pushed tree, not an absolute one",
                                                          item.path, g)));
        continue;
      }
      shares.push_back({rank, g, fmt::format("{}:{}: {}", file, item.mark().line + 1, f.key)});
    }
  }
  if (!errors.empty()) return util::YamlReader::all(r.in_file_order(std::move(errors)));
  return shares;
}

// What the ranks report, collected from their "@push" lines.
struct Events {
  std::mutex mu;
  std::map<int, nlohmann::json> progress;  // rank -> latest progress event
  nlohmann::json result, error;
  std::vector<std::string> malformed;
};

std::string human_bytes(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} {}", b, units[u]) : fmt::format("{:.1f} {}", b, units[u]);
}

// One line per target ("h2  1.2 GB/4.0 GB  410 MB/s  ETA 7 s"), then the aggregate rate.
std::string status_text(Events& ev, const std::vector<launch::LaunchHost>& hosts) {
  std::lock_guard lock(ev.mu);
  std::string text;
  double total_rate = 0;
  for (const auto& [rank, p] : ev.progress) {
    if (rank == 0) continue;
    const double bytes = p.value("bytes", 0.0), all = p.value("total", 0.0),
                 secs = p.value("seconds", 0.0);
    const double rate = secs > 0 ? bytes / secs : 0;
    total_rate += rate;
    const std::string eta = bytes >= all ? "done"
                            : rate > 0   ? fmt::format("ETA {:.0f} s", (all - bytes) / rate)
                                         : "ETA ?";
    text += fmt::format("{:<12} {:>9}/{:<9} {:>9}/s  {}\n",
                        hosts.at(static_cast<size_t>(rank)).name, human_bytes(bytes),
                        human_bytes(all), human_bytes(rate), eta);
  }
  if (text.empty()) return "push: starting";
  return fmt::format("{}push: {}/s in all", text, human_bytes(total_rate));
}

std::string render_report(const nlohmann::json& r, const std::vector<launch::LaunchHost>& hosts) {
  std::string out = fmt::format("{:<12} {:>10} {:>8} {:>10} {:>6} {:>7}  {}\n", "host", "bytes",
                                "seconds", "rate", "sent", "skipped", "problems");
  for (const auto& t : r.at("targets")) {
    const int rank = t.value("rank", 0);
    const double bytes = t.value("bytes", 0.0), secs = t.value("seconds", 0.0);
    out += fmt::format("{:<12} {:>10} {:>8.2f} {:>8}/s {:>6} {:>7}  {}\n",
                       hosts.at(static_cast<size_t>(rank)).name, human_bytes(bytes), secs,
                       human_bytes(secs > 0 ? bytes / secs : 0), t.value("files_sent", 0),
                       t.value("files_skipped", 0), t.at("errors").size());
    for (const auto& e : t.at("errors")) {
      out += fmt::format("  {}: {}\n", hosts.at(static_cast<size_t>(rank)).name, e.get<std::string>());
    }
  }
  for (const auto& e : r.at("source_errors")) {
    out += fmt::format("  {} (source): {}\n", hosts.at(0).name, e.get<std::string>());
  }
  out += fmt::format("{} ({}), {} sent from {} to {} over {} on the {}, in {:.2f} s\n",
                     util::plural(r.value("files", size_t{0}), "file", "files"),
                     human_bytes(r.value("bytes", 0.0)),
                     human_bytes(r.value("sent_bytes", 0.0)), hosts.at(0).name,
                     r.value("dest", std::string("?")), r.value("transport", std::string("?")),
                     r.value("network", std::string()) == "mgmt" ? "management network" : "cables",
                     r.value("seconds", 0.0));
  return out;
}

// The rank job: the rank program uploaded to each host's job directory, run there.
launch::JobSpec rank_job(const PushCli& o, const fs::path& program, const std::string& dest,
                         const std::vector<std::string>& sources,
                         const std::vector<push::Share>& shares,
                         const std::vector<launch::LaunchHost>& hosts) {
  launch::JobSpec spec;
  spec.name = "push";
  spec.source = "clusterctl push";
  spec.command.argv = {"./clusterctl-push-rank", "--dest", dest, "--chunk", std::to_string(o.chunk)};
  if (o.checksum) spec.command.argv.push_back("--checksum");
  if (!shares.empty()) {
    spec.command.argv.push_back("--shares");
    spec.command.argv.push_back(push::shares_to_json(shares));
  }
  std::string names;
  for (const auto& h : hosts) names += (names.empty() ? "" : ",") + h.name;
  spec.command.argv.push_back("--names");
  spec.command.argv.push_back(names);
  spec.command.argv.push_back("--");
  for (const auto& s : sources) spec.command.argv.push_back(s);
  spec.coordinator_port = o.port;
  spec.timeouts.grace = std::chrono::seconds(10);
  spec.timeouts.stall = std::chrono::seconds(0);
  launch::Upload up;
  up.src = program;
  up.dest = "clusterctl-push-rank";
  up.mode = 0755;
  spec.upload.push_back(up);
  return spec;
}

ExitCode run_push(const Context& ctx, const PushCli& o) {
  auto fail = [&](const util::Error& e) { return report_error(ctx, "push", e); };
  std::vector<std::string> sources;
  // Made absolute against this machine's working directory (README), without a trailing '/'
  // or "/.": "/models/tiny/" is the directory tiny, pushed to /models, not into itself.
  for (const auto& s : o.sources) {
    fs::path p = fs::absolute(s).lexically_normal();
    if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();
    sources.push_back(p.string());
  }
  std::string dest = o.dest;
  if (dest.empty()) dest = fs::path(sources.front()).parent_path().string();
  if (dest.empty() || dest.front() != '/') {
    return fail(util::error(ExitCode::kUsage,
                            fmt::format("--dest {}: give an absolute directory (it is the same "
                                        "path on every target)",
                                        dest)));
  }
  auto program = rank_program();
  if (!program) return fail(program.error());
  GlobalOptions g;
  auto hosts = push_hosts(ctx, o, g);
  if (!hosts) return fail(hosts.error());
  // Every target's destination before a byte moves to any (check_hosts), and the source's
  // address, every target's coordinator (launch::check_coordinator).
  if (auto st = check_hosts(g, hosts->names, ctx.style); !st) return fail(st.error());
  if (auto st = launch::check_coordinator(hosts->hosts); !st) return fail(st.error());

  launch::WorldPlan plan;
  plan.runtime = launch::Runtime::kClusterComm;
  plan.coordinator_port = o.port;
  plan.hosts = hosts->hosts;
  plan.token = util::random_hex(32);
  plan.env["CLUSTERCOMM_TIMEOUT_MS"] = std::to_string(static_cast<long>(o.timeout_s * 1000));
  if (o.network == "cables" && hosts->state) launch::add_cable_links(plan, *hosts->state);
  // Said once the ranks went past the preflight (its failure wrote nothing, over any network).
  std::string mgmt_note;
  if (plan.routes.empty()) {
    std::string apply;  // runnable as printed: the state file quoted, with the --lab it needs
    if (hosts->state) {
      ClusterSource src;
      src.state_file = o.cluster;
      apply = fix_command(g, src, *hosts->state).command("network apply");
    }
    mgmt_note = fmt::format("clusterctl push: note: {}: pushing over the management network\n",
               o.network == "mgmt" ? "--network mgmt"
               : o.cluster.empty() ? "no cluster state given (--cluster cluster.json after "
                                     "`network apply` uses the cables)"
                                   : "the cluster state has no cable addresses (run `" + apply +
                                         "`)");
  }
  if (auto st = launch::check_world(plan); !st) return fail(st.error());
  std::vector<push::Share> shares;
  if (!o.manifest.empty()) {
    auto read = read_shares(o.manifest, plan.hosts);
    if (!read) return fail(read.error());
    shares = std::move(*read);
  }
  const launch::JobSpec spec = rank_job(o, *program, dest, sources, shares, plan.hosts);

  Events ev;
  launch::OutputOptions out_opts;
  out_opts.status_line = ctx.style.progress && !ctx.global.json;
  out_opts.out = nullptr;  // the ranks' stdout is their events
  // launch's notes about its job ("rank 0 on h1 failed (exit 2): ending the job ...") are not
  // push's words: its own report or error says what happened; they are shown only when push
  // has none (the push did not finish).
  out_opts.job_notes = false;
  out_opts.filter = [&ev](int rank, int fd, std::string_view line) {
    // After Ctrl-C the ranks' errors are its consequences (a collective cut short by a peer
    // that was ended): kept in their logs, kept off the terminal, where push says it was
    // interrupted.
    if (fd != 1) return !util::interrupted();
    if (line.substr(0, 6) != "@push ") return false;
    std::lock_guard lock(ev.mu);
    nlohmann::json j = nlohmann::json::parse(line.substr(6), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      ev.malformed.emplace_back(line);
      return false;
    }
    const std::string kind = j.value("event", "");
    if (kind == "progress") ev.progress[rank] = std::move(j);
    if (kind == "result" && rank == 0) ev.result = std::move(j);
    if (kind == "error" && rank == 0) ev.error = std::move(j);
    return false;
  };
  std::vector<std::string> labels;
  for (const auto& h : plan.hosts) labels.push_back(h.name);
  const std::string id = fmt::format("push-{}-{}", util::utc_compact(std::chrono::system_clock::now()),
                                     util::random_hex(3));
  auto logs_root = util::private_state_dir("push-logs");
  if (!logs_root) return fail(logs_root.error());
  const fs::path logs = *logs_root / id;
  auto mux = launch::OutputMux::open(logs, labels, out_opts);
  if (!mux) return fail(mux.error());
  launch::OutputMux& out = **mux;

  launch::RunnerOptions ro;
  ro.job_id = id;
  ro.output = out_opts;
  if (out_opts.status_line) {
    ro.status = [&](const std::string&) { out.status(status_text(ev, plan.hosts)); };
  }
  const launch::ExecutorFactory connect = one_host_connector(g, hosts->names);
  // The cables the push goes over, watched (cli/cable_watch.h): one cut mid-push is named and
  // ends the push after timeouts.cable, not after --timeout's minutes of silence.
  std::unique_ptr<CableWatch> cable_watch;
  if (hosts->state && !plan.routes.empty()) {
    std::vector<std::string> job_hosts;
    for (const auto& h : plan.hosts) job_hosts.push_back(h.name);
    cable_watch = watch_cables(
        g, job_cables(launch::routed_cables(*hosts->state), job_hosts, hosts->names));
  }
  if (cable_watch) ro.cables_down = [w = cable_watch.get()] { return w->down(); };
  auto outcome = launch::run_job(spec, plan, out, connect, ro);
  out.status("");
  if (!outcome) {
    std::error_code ec;
    fs::remove_all(logs, ec);  // no rank ran: the logs are empty, the error says why
    return fail(outcome.error());
  }
  std::lock_guard lock(ev.mu);
  if (!ev.error.is_null()) {
    for (const auto& e : ev.error.at("errors")) {
      const int rank = e.value("rank", 0);
      for (const auto& m : e.at("messages")) {
        fmt::print(stderr, "clusterctl push: {}{}: {}\n", plan.hosts.at(static_cast<size_t>(rank)).name,
                   rank == 0 ? " (source)" : "", m.get<std::string>());
      }
    }
    if (ctx.global.json) {
      nlohmann::json shown = ev.error;
      shown.erase("event");
      for (auto& e : shown["errors"]) e["host"] = plan.hosts.at(static_cast<size_t>(e.value("rank", 0))).name;
      fmt::print("{}\n", util::json_text(shown, 2));
    }
    std::error_code ec;
    fs::remove_all(logs, ec);  // everything the ranks had to say is above
    return fail(util::error(ExitCode::kUsage,
                            "the preflight failed (above): nothing was written on any host"));
  }
  if (outcome->code == ExitCode::kInterrupted) {
    std::string left;
    for (const auto& p : outcome->cleanup_problems) left += "\n  the job directory may remain: " + p;
    return fail(util::interrupted_error(
        fmt::format(": every rank was ended; files being written stay under their .ccpush-*.part "
                    "names and the next push resumes them (the ranks' logs: {}){}",
                    logs.string(), left)));
  }
  fmt::print(stderr, "{}", mgmt_note);
  if (ev.result.is_null()) {
    for (const auto& n : out.held_job_notes()) fmt::print(stderr, "clusterctl push: {}\n", n);
    fmt::print(stderr, "{}", launch::render_summary(*outcome));
    return fail(util::error(ExitCode::kJobFailed,
                            fmt::format("the push did not finish ({}); the ranks' logs are in {}",
                                        outcome->reason, logs.string())));
  }
  // The report names hosts by the job's order.
  nlohmann::json report = ev.result;
  for (auto& t : report["targets"]) {
    t["host"] = plan.hosts.at(static_cast<size_t>(t.value("rank", 0))).name;
    const double secs = t.value("seconds", 0.0);
    t["rate"] = secs > 0 ? t.value("bytes", 0.0) / secs : 0.0;  // bytes per second
    t["transport"] = report.value("transport", std::string());
  }
  report.erase("event");
  report["source"] = plan.hosts.at(0).name;
  // Which addresses the ranks used: "cables" (network apply's per-cable addresses) or "mgmt".
  report["network"] = plan.routes.empty() ? "mgmt" : "cables";
  report["dest"] = dest;
  if (ctx.global.json) {
    fmt::print("{}\n", util::json_text(report, 2));
  } else {
    fmt::print(stderr, "{}", render_report(report, plan.hosts));
  }
  const int code = report.value("code", 4);
  if (code != 0) {
    return fail(util::error(ExitCode::kJobFailed,
                            fmt::format("some files did not arrive whole (above); the ranks' logs "
                                        "are in {}",
                                        logs.string())));
  }
  std::error_code ec;
  fs::remove_all(logs, ec);
  return ExitCode::kOk;
}

}  // namespace

void add_push_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<PushCli>();
  CLI::App* cmd = app.add_subcommand(
      "push",
      "Copy files and directory trees to every host over the cables (model weights): "
      "checksummed chunks, files renamed into place only when whole, unchanged files skipped, "
      "interrupted pushes resumed");
  cmd->add_option("src", o->sources, "Files or directories on the source host")->required();
  cmd->add_option("--to", o->to, "Target hosts (comma-separated), or all (default: every host "
                                 "but the source)");
  cmd->add_option("--dest", o->dest, "Destination directory on every target (absolute; "
                                     "default: the first SRC's parent directory)");
  cmd->add_option("--from", o->from, "The source host (default: the cluster's first host)");
  cmd->add_option("--cluster", o->cluster,
                  "Cluster state (`discover -o`, after `network apply`): hosts and cables");
  cmd->add_option("--network", o->network,
                  "cables (default: the per-cable addresses when the state has them) or mgmt")
      ->check(one_of({"cables", "mgmt"}));
  cmd->add_option("--manifest", o->manifest,
                  "Per-host shares (YAML: target host -> list of paths or globs): each file a "
                  "share names goes to those hosts only; the others go to every target")
      ->check(existing_path());
  cmd->add_flag("--checksum", o->checksum,
                "Skip a file only when its digest matches (reads every file on every host)");
  cmd->add_option("--chunk", o->chunk, "Bytes per chunk (default 8 MiB)")
      ->check(whole_number(std::uint64_t{4096}, std::uint64_t{1} << 30));
  cmd->add_option("--port", o->port, "The source rank's coordinator TCP port (default 32324)")
      ->check(whole_number(1, 65535));
  cmd->add_option("--timeout", o->timeout_s,
                  "Seconds any rank may wait for another (default 300)")
      ->check(decimal_number(1.0, 86400.0));
  cmd->callback([&ctx, o] { ctx.action = [&ctx, o] { return run_push(ctx, *o); }; });
}

}  // namespace cc::cli
