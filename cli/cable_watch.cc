#include "cli/cable_watch.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include "cli/hosts.h"
#include "discovery/probe.h"
#include "launch/rank_env.h"
#include "remote/fan_out.h"
#include "topology/checks.h"

namespace cc::cli {

std::vector<std::string> down_cable_lines(const std::vector<remote::Executor*>& execs,
                                          const std::vector<std::string>& hosts,
                                          const std::vector<discovery::Cable>& cables,
                                          const GlobalOptions& g,
                                          std::chrono::milliseconds timeout,
                                          const util::OutputStyle& style) {
  std::vector<std::optional<discovery::HostFacts>> facts(execs.size());
  const discovery::ProbeMode mode =
      g.replay.empty() ? discovery::ProbeMode::kScript : discovery::ProbeMode::kEach;
  remote::for_each_host(
      execs, "checking the job's cables",
      [&](size_t i) {
        if (execs[i] == nullptr || i >= hosts.size()) return;
        auto out = discovery::run_host_probe(*execs[i], mode, timeout);
        if (!out) return;
        auto f = discovery::facts_from_probe(hosts[i], *out, "");
        if (f) facts[i] = std::move(*f);
      },
      style);
  auto facts_of = [&](const std::string& host) -> const discovery::HostFacts* {
    for (size_t i = 0; i < hosts.size(); ++i) {
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
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    std::vector<std::string> down =
        down_cable_lines(ptrs, hosts_, cables_, g_, kCableProbeTimeout, util::OutputStyle{});
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
