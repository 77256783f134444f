// The SSH backend (backend.h): one connection per rank, each running the rank wrapper
// (wrapper.h) with the rank's environment on stdin; its start line, output and exit status come
// back on that connection. Signals, samples and cleanup go over the hosts' control connections.
#include <atomic>
#include <thread>

#include <fmt/format.h>

#include "launch/backend.h"
#include "launch/wrapper.h"
#include "util/interrupt.h"

namespace cc::launch {
namespace {

using namespace std::chrono_literals;

// What the wrapper said last before it gave up on starting rank `rank` ("clusterctl: rank R:
// cannot enter the working directory D on H" -> "cannot enter the working directory D on H");
// "" when it said nothing of its own, or only that the job was ending.
std::string wrapper_problem(std::string_view err, int rank) {
  const std::string prefix = fmt::format("clusterctl: rank {}: ", rank);
  std::string found;
  while (!err.empty()) {
    const size_t nl = err.find('\n');
    const std::string_view line = err.substr(0, nl);
    err = nl == std::string_view::npos ? std::string_view() : err.substr(nl + 1);
    if (line.starts_with(prefix)) found = line.substr(prefix.size());
  }
  return found.starts_with("not started, the job is ending") ? std::string() : found;
}

// One rank: connect, start, stream, exit status, reported on the board.
class RankSession {
 public:
  RankSession(const BackendContext& ctx, RankBoard& board, const std::atomic<bool>& abandon,
              int rank)
      : ctx_(ctx),
        board_(board),
        abandon_(abandon),
        rank_(rank),
        host_(ctx.plan.host_of(rank)),
        dir_(job_dir(ctx.run_id, host_)),
        start_(ctx.clock.now()),
        marker_(ctx.nonce) {}

  void run() {
    auto ex = ctx_.connect(host_);
    if (!ex) {
      if (ex.error().code == util::ExitCode::kInterrupted) return not_started();
      finish(-1, ex.error().message);
      return;
    }
    std::vector<std::string> argv = wrapper_argv(wrapper_args());
    remote::RunOptions ro = run_options();
    ro.what = describe_step(argv);
    auto res = (*ex)->run(remote::Command{std::move(argv)}, ro);
    if (!res && res.error().code == util::ExitCode::kInterrupted) {
      // Ctrl-C or SIGTERM cut the connect short (the session's own run ignores the signal
      // once connected: the watcher ends the ranks): the host was not lost, and no wrapper
      // (nor its watchdog) runs there, so the teardown must still clean it up.
      not_started();
    } else if (!res) {
      ctx_.control.mark_lost(host_);  // teardown does not wait for it
      finish(-1, fmt::format("{}host {} lost: {}", kConnectionLost, ctx_.plan.hosts[host_].name,
                             res.error().message));
    } else if (res->timed_out) {
      finish(-1, "abandoned: no exit status after SIGKILL (host unreachable?)");
    } else {
      // A failure's end record: whether 128+N was a signal, and when it ended on its host.
      const auto rec = res->exit_status != 0 ? end_record(**ex) : std::nullopt;
      const bool by_signal =
          res->signaled ||
          (res->exit_status > 128 && (rec ? rec->signaled : true));  // no record: as sh says
      finish(res->exit_status, "", by_signal, rec ? rec->exited_at : std::nullopt);
    }
  }

 private:
  WrapperArgs wrapper_args() const {
    return WrapperArgs{dir_,
                       rank_,
                       ctx_.spec.cwd,
                       static_cast<int>(ctx_.spec.timeouts.grace.count()),
                       ctx_.nonce,
                       ctx_.command,
                       static_cast<int>(kHeartbeatTimeout.count())};
  }

  remote::RunOptions run_options() {
    remote::RunOptions ro;
    ro.timeout = kNoSessionTimeout;
    ro.stdin_data = env_payload(rank_env(ctx_.plan, rank_, dir_), ctx_.nonce);
    ro.keep_stdin_open = true;
    ro.heartbeat = kHeartbeatInterval;
    ro.heartbeat_timeout = kHeartbeatTimeout;
    ro.cancelled = [this] { return abandon_.load(); };
    ro.on_output = [this](int fd, std::string_view bytes) {
      if (fd == 2 && !marker_.started()) {
        std::string pass = marker_.feed(bytes);
        if (marker_.started()) board_.started(rank_, marker_.pid());
        if (!pass.empty()) feed(2, pass);
        return;
      }
      feed(fd, bytes);
    };
    return ro;
  }

  void feed(int fd, std::string_view bytes) {
    board_.output_seen(rank_);
    ctx_.output.feed(rank_, fd, bytes);
    if (fd == 2) watch_exec_failure(bytes);
  }

  // The waiter's line when it cannot run the command (wrapper.h exec_failure): the summary's
  // reason for an exit 127 or 126, so the operator need not open the rank's log.
  void watch_exec_failure(std::string_view bytes) {
    err_line_.append(bytes);
    size_t from = 0;
    for (size_t nl; (nl = err_line_.find('\n', from)) != std::string::npos; from = nl + 1) {
      std::string why = exec_failure(std::string_view(err_line_).substr(from, nl - from));
      if (!why.empty()) exec_failure_ = std::move(why);
    }
    err_line_.erase(0, from);
    if (err_line_.size() > 4096) err_line_.clear();  // a long line is no waiter's
  }

  // The wrapper's end record (wrapper.h) of a failed rank: 128+N an exit with that status or
  // death by signal N, and when it ended by its host's clock (the order of the failures).
  // None without perl on the host: 128+N is then taken as sh reports it, a signal.
  std::optional<EndRecord> end_record(remote::Executor& ex) const {
    remote::RunOptions q;
    q.timeout = 5s;
    q.cancelled = [] { return false; };
    q.what = describe_step(end_record_argv(dir_, rank_));
    auto rec = ex.run(remote::Command{end_record_argv(dir_, rank_)}, q);
    return rec && rec->exit_status == 0 ? read_end_record(rec->out) : std::nullopt;
  }

  // The rank was never started because the job was interrupted while its session connected.
  void not_started() {
    ctx_.output.finish(rank_);
    board_.not_started(rank_, fmt::format("never started: {} while connecting to {}",
                                          util::interruption(), ctx_.plan.hosts[host_].name));
  }

  void finish(int status, std::string problem, bool signaled = false,
              std::optional<double> exited_at = std::nullopt) {
    const std::string rest = marker_.flush();
    if (!rest.empty()) feed(2, rest);
    // The wrapper failed before the command ran (a cwd that is missing, a job directory that
    // is not ours): its own last line says why (wrapper.h), and the summary says it.
    if (problem.empty() && !marker_.started() && status > 0) problem = wrapper_problem(rest, rank_);
    if (problem.empty() && (status == 126 || status == 127)) {
      if (!err_line_.empty()) watch_exec_failure("\n");
      problem = exec_failure_;
    }
    ctx_.output.finish(rank_);
    board_.finished(
        rank_, status, signaled, std::move(problem),
        std::chrono::duration_cast<std::chrono::milliseconds>(ctx_.clock.now() - start_), false,
        exited_at);
  }

  const BackendContext& ctx_;
  RankBoard& board_;
  const std::atomic<bool>& abandon_;
  const int rank_;
  const size_t host_;
  const std::string dir_;
  const std::chrono::steady_clock::time_point start_;
  StartMarker marker_;
  std::string err_line_;      // stderr since its last newline
  std::string exec_failure_;  // exec_failure of the waiter's line, if it printed one
};

class SshBackend final : public LaunchBackend {
 public:
  explicit SshBackend(const BackendContext& ctx) : ctx_(ctx) {}
  // Normally joined already (run_job). When an exception unwinds past the watcher, the
  // sessions are given up rather than waited for (they have no time limit): their connections
  // close and each rank's watchdog ends it and removes its job directory (wrapper.h).
  ~SshBackend() override {
    abandon_ = true;
    join();
  }

  void start(RankBoard& board) override {
    for (int r = 0; r < ctx_.plan.world_size(); ++r) {
      threads_.emplace_back([this, &board, r] { RankSession(ctx_, board, abandon_, r).run(); });
    }
  }
  void terminate(bool /*rank_failed*/) override { signal("TERM"); }
  // A rank that was still starting at the first TERM: its group gets TERM now (the script
  // signals each group once), well before the SIGKILL.
  void terminate_again() override { signal("TERM"); }
  void kill() override { signal("KILL"); }
  bool samples_ranks() const override { return true; }
  std::vector<std::vector<ProcessSample>> sample(
      const std::vector<std::vector<long>>& pids) override {
    return sample_hosts(ctx_.control, pids);
  }
  void abandon() override { abandon_ = true; }
  void join() override {
    for (auto& t : threads_) t.join();
    threads_.clear();
    ctx_.control.drain();
  }

 private:
  void signal(std::string_view sig) {
    for (size_t h = 0; h < ctx_.plan.hosts.size(); ++h) {
      ctx_.control.post(h, signal_argv(job_dir(ctx_.run_id, h), sig));
    }
  }

  const BackendContext& ctx_;
  std::atomic<bool> abandon_{false};
  std::vector<std::thread> threads_;
};

}  // namespace

std::vector<std::vector<ProcessSample>> sample_hosts(ControlHosts& control,
                                                     const std::vector<std::vector<long>>& pids) {
  std::vector<std::vector<ProcessSample>> answers(pids.size());
  std::vector<std::thread> threads;
  for (size_t h = 0; h < pids.size(); ++h) {
    if (pids[h].empty() || control.lost(h)) continue;
    threads.emplace_back([&, h] {
      // ps answers in milliseconds; a host that does not is not waited on
      auto res = control.ask(h, sample_argv(pids[h]), 2s);
      if (res && res->exit_status == 0) answers[h] = parse_samples(res->out);
    });
  }
  for (auto& t : threads) t.join();
  return answers;
}

std::unique_ptr<LaunchBackend> make_ssh_backend(const BackendContext& ctx) {
  return std::make_unique<SshBackend>(ctx);
}

}  // namespace cc::launch
