#include "launch/backend.h"

#include <algorithm>
#include <csignal>

#include <fmt/format.h>

#include "launch/wrapper.h"
#include "remote/fan_out.h"

namespace cc::launch {

std::string gc_advice(const std::string& host) {
  return fmt::format(
      "`clusterctl jobs --gc --hosts {}` (with the job's --lab or --inventory) removes it once {} "
      "answers",
      host, host);
}

RankBoard::RankBoard(const WorldPlan& plan, util::Clock& clock)
    : clock_(clock),
      hosts_(plan.hosts.size()),
      host_of_([&] {
        std::vector<size_t> h;
        for (int r = 0; r < plan.world_size(); ++r) h.push_back(plan.host_of(r));
        return h;
      }()),
      ranks_(static_cast<size_t>(plan.world_size())),
      last_output_(ranks_.size(), clock.now()) {
  for (int r = 0; r < plan.world_size(); ++r) {
    ranks_[static_cast<size_t>(r)].rank = r;
    ranks_[static_cast<size_t>(r)].host = plan.hosts[plan.host_of(r)].name;
  }
}

RankBoard::Counts RankBoard::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c;
  for (const auto& o : ranks_) {
    c.started += o.started ? 1 : 0;
    c.finished += o.finished ? 1 : 0;
    c.running += o.started && !o.finished ? 1 : 0;
  }
  c.first_failed = first_failed_;
  c.launcher_done = launcher_done_;
  return c;
}

void RankBoard::started(int rank, long pid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& o = ranks_.at(static_cast<size_t>(rank));
  o.started = true;
  o.pid = pid;
}

void RankBoard::output_seen(int rank) {
  const auto now = clock_.now();
  std::lock_guard<std::mutex> lock(mu_);
  last_output_.at(static_cast<size_t>(rank)) = now;
}

std::chrono::steady_clock::time_point RankBoard::last_output(int rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_output_.at(static_cast<size_t>(rank));
}

void RankBoard::finished(int rank, int status, bool signaled, std::string problem,
                         std::chrono::milliseconds duration, bool after_first_is_ours,
                         std::optional<double> exited_at) {
  std::lock_guard<std::mutex> lock(mu_);
  RankOutcome& o = ranks_.at(static_cast<size_t>(rank));
  if (o.finished) return;
  o.finished = true;
  o.exit_status = status;
  o.signaled = signaled;
  o.problem = std::move(problem);
  o.duration = duration;
  o.exited_at = o.failed() ? exited_at : std::nullopt;
  const std::optional<double> first_at =
      first_failed_ >= 0 ? ranks_[static_cast<size_t>(first_failed_)].exited_at : std::nullopt;
  // The teardown's SIGTERM or SIGKILL (a death by it, or the 128+N of a rank that handled
  // it) is ours whatever a host's clock says: hosts' clocks may be apart.
  const bool ours = ending_ && (signaled || status == 128 + SIGTERM || status == 128 + SIGKILL);
  // A host's loss is reported only once its heartbeats went unanswered for kHeartbeatTimeout
  // (runner.h): one reported within that span of the first failure was lost before or as it,
  // and the first failure ("[ring] connection to a peer was lost") is likely its consequence:
  // the lost host is the cause (a host lost when its management link went down was blamed on
  // a rank that lost it as a peer).
  const bool lost = status == -1 && o.problem.starts_with(kConnectionLost);
  const bool first_lost =
      first_failed_ >= 0 &&
      ranks_[static_cast<size_t>(first_failed_)].problem.starts_with(kConnectionLost);
  if (lost && first_failed_ >= 0 && !first_lost &&
      clock_.now() - first_failed_at_ <= kHeartbeatTimeout + kLossReportSlack) {
    first_failed_ = rank;
  } else if (o.failed() && !ours && o.exited_at && first_at && *o.exited_at < *first_at) {
    // It ended before the failure that reached us first: that is the order they happened in
    // (its exit status came later: a slower connection, its relays' wait), and it ended
    // before any teardown, which only that first report began.
    first_failed_ = rank;
  } else if (ending_ || (after_first_is_ours && first_failed_ >= 0)) {
    o.ended_by_us = o.failed();
  } else if (o.failed() && first_failed_ < 0) {
    first_failed_ = rank;
    first_failed_at_ = clock_.now();
  }
}

void RankBoard::ended_by_launcher(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  RankOutcome& o = ranks_.at(static_cast<size_t>(rank));
  o.ended_by_launcher = o.ended_by_us;
}

void RankBoard::not_started(int rank, std::string problem) {
  std::lock_guard<std::mutex> lock(mu_);
  RankOutcome& o = ranks_.at(static_cast<size_t>(rank));
  if (o.finished) return;
  o.finished = true;
  o.exit_status = -1;
  o.problem = std::move(problem);
  o.ended_by_us = true;
}

void RankBoard::launcher_running() {
  std::lock_guard<std::mutex> lock(mu_);
  launcher_done_ = false;
}

void RankBoard::launcher_ended(int status, const std::string& problem,
                               const std::function<std::chrono::milliseconds(int rank)>& duration) {
  std::lock_guard<std::mutex> lock(mu_);
  launcher_done_ = true;
  launcher_status_ = status;
  for (auto& o : ranks_) {
    if (o.finished) continue;
    o.finished = true;
    o.exit_status = -1;
    o.problem = o.started ? "no exit status: " + problem : "never started: " + problem;
    o.duration = o.started ? duration(o.rank) : o.duration;
    if (ending_ || first_failed_ >= 0) {
      o.ended_by_us = true;
    } else {
      first_failed_ = o.rank;
      first_failed_at_ = clock_.now();
    }
  }
}

void RankBoard::set_launcher_last(std::string line) {
  std::lock_guard<std::mutex> lock(mu_);
  launcher_last_ = std::move(line);
}

std::optional<RankOutcome> RankBoard::begin_ending() {
  std::lock_guard<std::mutex> lock(mu_);
  ending_ = true;
  auto stopped = std::find_if(ranks_.begin(), ranks_.end(),
                              [](const RankOutcome& o) { return o.stopped && !o.finished; });
  if (stopped == ranks_.end()) return std::nullopt;
  return *stopped;
}

bool RankBoard::mark_stopped(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& o = ranks_.at(static_cast<size_t>(rank));
  if (o.stopped || o.finished) return false;
  o.stopped = true;
  return true;
}

std::vector<RankOutcome> RankBoard::ranks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ranks_;
}

RankOutcome RankBoard::rank(int r) const {
  std::lock_guard<std::mutex> lock(mu_);
  return ranks_.at(static_cast<size_t>(r));
}

int RankBoard::first_failed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_failed_;
}

int RankBoard::launcher_status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return launcher_status_;
}

std::string RankBoard::launcher_last() const {
  std::lock_guard<std::mutex> lock(mu_);
  return launcher_last_;
}

bool RankBoard::all_over() const {
  std::lock_guard<std::mutex> lock(mu_);
  return launcher_done_ &&
         std::all_of(ranks_.begin(), ranks_.end(), [](const RankOutcome& o) { return o.finished; });
}

ControlHosts::ControlHosts(std::vector<std::unique_ptr<remote::Executor>> execs,
                           std::chrono::milliseconds timeout)
    : execs_(std::move(execs)),
      timeout_(timeout),
      lost_(execs_.size()),
      run_mu_(execs_.size()),
      queues_(execs_.size()),
      busy_(execs_.size(), false) {}

ControlHosts::~ControlHosts() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

std::optional<remote::CommandResult> ControlHosts::run(size_t h, std::vector<std::string> argv) {
  return run_on(h, std::move(argv), timeout_, true);
}

std::optional<remote::CommandResult> ControlHosts::ask(size_t h, std::vector<std::string> argv,
                                                       std::chrono::milliseconds timeout) {
  return run_on(h, std::move(argv), timeout, false);
}

std::optional<remote::CommandResult> ControlHosts::run_on(size_t h, std::vector<std::string> argv,
                                                          std::chrono::milliseconds timeout,
                                                          bool lose) {
  if (execs_[h] == nullptr || lost_[h]) return std::nullopt;
  remote::RunOptions ro;
  ro.timeout = timeout;
  ro.cancelled = [] { return false; };
  std::lock_guard<std::mutex> lock(run_mu_[h]);
  ro.what = describe_step(argv);
  auto r = execs_[h]->run(remote::Command{std::move(argv)}, ro);
  // Cut short by Ctrl-C (a connect it interrupted): the host was not lost, and the cleanup
  // that the signal asks for must not pass it by.
  if (lose && ((!r && r.error().code != util::ExitCode::kInterrupted) || (r && r->timed_out))) {
    lost_[h] = true;
  }
  if (!r) return std::nullopt;
  return std::move(*r);
}

void ControlHosts::post(size_t h, std::vector<std::string> argv) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  if (workers_.empty()) {
    for (size_t i = 0; i < execs_.size(); ++i) workers_.emplace_back([this, i] { worker(i); });
  }
  // A signal already waiting its turn is not queued twice: a host slow to answer gets the
  // next one (SIGKILL after the repeated SIGTERMs) as soon as it answers the one in flight.
  auto& q = queues_[h];
  if (std::find(q.begin(), q.end(), argv) != q.end()) return;
  q.push_back(std::move(argv));
  queue_cv_.notify_all();
}

void ControlHosts::worker(size_t h) {
  std::unique_lock<std::mutex> lock(queue_mu_);
  for (;;) {
    queue_cv_.wait(lock, [&] { return stopping_ || !queues_[h].empty(); });
    if (queues_[h].empty()) return;
    auto argv = std::move(queues_[h].front());
    queues_[h].pop_front();
    busy_[h] = true;
    lock.unlock();
    run(h, std::move(argv));
    lock.lock();
    busy_[h] = false;
    queue_cv_.notify_all();
  }
}

void ControlHosts::drain() {
  std::unique_lock<std::mutex> lock(queue_mu_);
  queue_cv_.wait(lock, [&] {
    for (size_t h = 0; h < queues_.size(); ++h) {
      if (!queues_[h].empty() || busy_[h]) return false;
    }
    return true;
  });
}

std::vector<std::string> ControlHosts::on_every_host(
    const std::function<std::vector<std::string>(size_t)>& argv,
    const std::function<std::string(size_t h, const std::string& host)>& lost_problem) {
  std::vector<std::string> problems(execs_.size());
  std::vector<remote::Executor*> raw;
  for (auto& e : execs_) raw.push_back(e.get());
  remote::for_each_host(
      raw, "launch",
      [&](size_t i) {
        if (execs_[i] == nullptr) return;
        if (lost_[i]) {
          problems[i] = lost_problem ? lost_problem(i, execs_[i]->host())
                                     : fmt::format(
                                           "{}: lost, not waited for (its ranks' watchdog ends "
                                           "them and removes its job directory)",
                                           execs_[i]->host());
          return;
        }
        remote::RunOptions ro;
        ro.timeout = timeout_;
        ro.cancelled = [] { return false; };
        std::lock_guard<std::mutex> lock(run_mu_[i]);
        std::vector<std::string> cmd = argv(i);
        ro.what = describe_step(cmd);
        auto r = execs_[i]->run(remote::Command{std::move(cmd)}, ro);
        if (!r && r.error().code == util::ExitCode::kInterrupted) {
          // Only when the caller did not set the signal aside (util::InterruptSetAside).
          problems[i] = fmt::format("{}; {}", r.error().message, gc_advice(execs_[i]->host()));
        } else if (!r) {
          problems[i] = r.error().message;
          lost_[i] = true;
        } else if (r->timed_out) {
          problems[i] =
              fmt::format("{}: no answer within {} s", execs_[i]->host(), timeout_.count() / 1000);
          lost_[i] = true;
        } else if (r->exit_status != 0) {
          problems[i] = fmt::format("{}: exit {}: {}", execs_[i]->host(), r->exit_status, r->err);
        }
      },
      util::OutputStyle{});
  std::erase(problems, std::string());
  return problems;
}

}  // namespace cc::launch
