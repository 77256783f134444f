#include "cli/cable_watch.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include "cli/hosts.h"
#include "discovery/linux_ip.h"
#include "discovery/macos_ifconfig.h"
#include "discovery/probe.h"
#include "launch/rank_env.h"
#include "remote/fan_out.h"
#include "topology/checks.h"

namespace cc::cli {

namespace {

using Facts = std::vector<std::optional<discovery::HostFacts>>;

// A later look at a host whose facts the first one gave: only its links, `ifconfig -a` on macOS
// or `ip -j link` on Linux, their up and carrier copied onto the ports' interfaces by name. The
// full probe runs system_profiler on a Mac, a second or more of CPU there: every look of a
// running job, work taken from its ranks. False when the look failed (the caller probes in full).
bool refresh_links(remote::Executor& ex, discovery::HostFacts& f,
                   std::chrono::milliseconds timeout) {
  const bool mac = f.os.name == "macOS";
  const discovery::ProbeCommand cmd =
      mac ? discovery::ProbeCommand{std::string(discovery::kIfconfigCommand), {"ifconfig", "-a"}}
          : discovery::ProbeCommand{std::string(discovery::kIpLinkCommand), {"ip", "-j", "link"}};
  auto out = discovery::run_commands(ex, {cmd}, discovery::ProbeMode::kScript, timeout);
  if (!out) return false;
  const discovery::RawOutput* r = out->find(cmd);
  if (r == nullptr || r->exit_status != 0) return false;
  auto links = mac ? discovery::parse_ifconfig(r->out) : discovery::parse_ip_link(r->out);
  if (!links) return false;
  for (auto& port : f.ports) {
    if (!port.interface) continue;
    auto it = std::find_if(links->begin(), links->end(), [&](const discovery::NetInterface& n) {
      return n.name == port.interface->name;
    });
    if (it == links->end()) {
      port.interface.reset();  // gone since the first look: "port missing"
    } else {
      port.interface->up = it->up;
      port.interface->running = it->running;
    }
  }
  return true;
}

// One look at every host: its links alone where `facts` holds its facts from an earlier look on
// a live host, else the full host probe (a replayed bundle: always).
void look(const std::vector<remote::Executor*>& execs, const std::vector<std::string>& hosts,
          Facts& facts, const GlobalOptions& g, std::chrono::milliseconds timeout,
          const util::OutputStyle& style) {
  const bool live = g.replay.empty();
  const discovery::ProbeMode mode =
      live ? discovery::ProbeMode::kScript : discovery::ProbeMode::kEach;
  facts.resize(execs.size());
  remote::for_each_host(
      execs, "checking the job's cables",
      [&](size_t i) {
        if (execs[i] == nullptr || i >= hosts.size()) return;
        if (live && facts[i] && refresh_links(*execs[i], *facts[i], timeout)) return;
        facts[i].reset();
        auto out = discovery::run_host_probe(*execs[i], mode, timeout);
        if (!out) return;
        auto f = discovery::facts_from_probe(hosts[i], *out, "");
        if (f) facts[i] = std::move(*f);
      },
      style);
}

std::vector<std::string> down_lines(const Facts& facts, const std::vector<std::string>& hosts,
                                    const std::vector<discovery::Cable>& cables) {
  auto facts_of = [&](const std::string& host) -> const discovery::HostFacts* {
    for (size_t i = 0; i < hosts.size() && i < facts.size(); ++i) {
      if (hosts[i] == host && facts[i]) return &*facts[i];
    }
    return nullptr;
  };
  std::vector<std::string> down;
  for (const auto& c : cables) {
    const topology::CableLink link =
        topology::cable_link(c.a, c.b, facts_of(c.a.host), facts_of(c.b.host));
    if (!link.up) down.push_back(topology::cable_down_line(c.a, c.b, link));
  }
  return down;
}

}  // namespace

std::vector<std::string> down_cable_lines(const std::vector<remote::Executor*>& execs,
                                          const std::vector<std::string>& hosts,
                                          const std::vector<discovery::Cable>& cables,
                                          const GlobalOptions& g,
                                          std::chrono::milliseconds timeout,
                                          const util::OutputStyle& style) {
  Facts facts;
  look(execs, hosts, facts, g, timeout, style);
  return down_lines(facts, hosts, cables);
}

CableWatch::CableWatch(GlobalOptions g, std::vector<std::string> hosts,
                       std::vector<std::string> names, std::vector<discovery::Cable> cables)
    : g_(std::move(g)),
      hosts_(std::move(hosts)),
      names_(std::move(names)),
      cables_(std::move(cables)),
      thread_([this] { loop(); }) {}

CableWatch::~CableWatch() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::vector<std::string> CableWatch::down() const {
  std::lock_guard lock(mu_);
  return down_;
}

void CableWatch::loop() {
  // Connections of its own: the job's control connections serialise their commands, and a
  // probe must never delay a signal to the ranks.
  auto execs = make_executors(g_, fmt::format("{}", fmt::join(names_, ",")));
  if (!execs) return;  // the job's own set-up says what is wrong with reaching them
  std::vector<remote::Executor*> ptrs;
  for (auto& e : *execs) ptrs.push_back(e.get());
  Facts facts;  // the first look's, kept: later looks read the links alone (refresh_links)
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    look(ptrs, hosts_, facts, g_, kCableProbeTimeout, util::OutputStyle{});
    std::vector<std::string> down = down_lines(facts, hosts_, cables_);
    lock.lock();
    down_ = std::move(down);
    cv_.wait_for(lock, kCableLookInterval, [this] { return stop_; });
  }
}

JobCables job_cables(std::vector<discovery::Cable> cables,
                     const std::vector<std::string>& job_hosts,
                     const std::vector<std::string>& names) {
  JobCables j;
  j.cables = std::move(cables);
  auto in_job = [&](const std::string& h) {
    return std::find(job_hosts.begin(), job_hosts.end(), h) != job_hosts.end();
  };
  std::erase_if(j.cables,
                [&](const discovery::Cable& c) { return !in_job(c.a.host) || !in_job(c.b.host); });
  for (size_t i = 0; i < job_hosts.size() && i < names.size(); ++i) {
    const bool used = std::any_of(j.cables.begin(), j.cables.end(), [&](const discovery::Cable& c) {
      return c.a.host == job_hosts[i] || c.b.host == job_hosts[i];
    });
    if (!used) continue;
    j.hosts.push_back(job_hosts[i]);
    j.names.push_back(names[i]);
  }
  return j;
}

std::unique_ptr<CableWatch> watch_cables(const GlobalOptions& g, JobCables j) {
  if (j.cables.empty() || j.hosts.empty()) return nullptr;
  return std::make_unique<CableWatch>(g, std::move(j.hosts), std::move(j.names),
                                      std::move(j.cables));
}

}  // namespace cc::cli
