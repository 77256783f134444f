// The mpirun backend (backend.h, runtime mpi): mpirun runs on this machine under the rank
// wrapper (through RunnerOptions::connect_local), in a job directory of its own here; each
// rank's start, output and exit status come back through mpirun's tagged output (MpiDemux),
// and the job ends with mpirun. The hosts' job directories hold uploads and the ranks' pid
// files as usual, so signals and cleanup reach the ranks there too. Each host also runs a watch
// (mpi.h, host_watch_argv) on a connection with the rank connections' heartbeat: mpirun does
// not notice a host cut off, the watch's connection does (its ranks are lost, as under the
// other runtimes), and the watch's watchdog ends the ranks there.
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "launch/backend.h"
#include "launch/mpi.h"
#include "launch/wrapper.h"
#include "util/interrupt.h"
#include "util/text.h"

namespace cc::launch {
namespace {

using Time = std::chrono::steady_clock::time_point;

// What mpirun's session and the hosts' watches share.
struct MpiShared {
  MpiShared(const BackendContext& ctx, int world)
      : clock(ctx.clock),
        began(static_cast<size_t>(world), ctx.clock.now()),
        began_at(static_cast<size_t>(world)) {}

  void started(int rank, std::optional<double> at) {
    std::lock_guard<std::mutex> lock(mu);
    began[static_cast<size_t>(rank)] = clock.now();
    began_at[static_cast<size_t>(rank)] = at;
  }
  // How long the rank ran: by its host's clock from its start marker to its end (`ended_at`,
  // the waiter's end record), as the host saw it; else since its start marker reached us (the
  // time mpirun's output took to come is then in it).
  std::chrono::milliseconds duration(int rank, std::optional<double> ended_at) {
    std::lock_guard<std::mutex> lock(mu);
    const auto& from = began_at[static_cast<size_t>(rank)];
    if (ended_at && from && *ended_at >= *from) {
      return std::chrono::milliseconds(static_cast<long long>((*ended_at - *from) * 1000));
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock.now() -
                                                                 began[static_cast<size_t>(rank)]);
  }

  util::Clock& clock;
  std::mutex mu;
  std::vector<Time> began;                      // when its start marker came (our clock)
  std::vector<std::optional<double>> began_at;  // its start by its host's clock
  std::atomic<bool> abandon{false};
  std::atomic<bool> host_lost{false};        // a host's watch lost its connection
  std::atomic<bool> ranks_signalled{false};  // clusterctl sent the ranks SIGTERM or SIGKILL
  std::atomic<bool> mpirun_killed{false};    // clusterctl sent mpirun SIGKILL
};

// mpirun's one session: connect, start, demultiplex its output into the ranks', exit status.
class MpirunSession {
 public:
  MpirunSession(const BackendContext& ctx, RankBoard& board, MpiShared& shared)
      : ctx_(ctx),
        board_(board),
        shared_(shared),
        world_(ctx.plan.world_size()),
        demux_(ctx.nonce),
        marker_(ctx.nonce) {}

  void run() {
    int status = -1;
    std::string problem;
    auto ex = ctx_.opts.connect_local();
    if (!ex) {
      problem = ex.error().message;
    } else {
      std::vector<std::string> argv = wrapper_argv(wrapper_args());
      remote::RunOptions ro = run_options();
      ro.what = describe_step(argv);
      auto res = (*ex)->run(remote::Command{std::move(argv)}, ro);
      if (!res) {
        problem = res.error().message;
      } else if (res->timed_out) {
        problem = "abandoned: mpirun did not end after SIGKILL";
      } else {
        status = res->exit_status;
      }
      if (auto rest = marker_.flush(); !rest.empty()) handle(demux_.feed(2, rest));
      handle(demux_.flush());
    }
    for (int r = 0; r < world_; ++r) ctx_.output.finish(r);
    if (problem.empty()) {
      if (status == 128 + 9 && shared_.mpirun_killed) {
        problem = "mpirun ended (SIGKILL from clusterctl)";  // no line of its own is why
      } else {
        problem = fmt::format("mpirun ended ({})", status == 127 ? "exit 127: is Open MPI "
                                                                   "installed on this machine?"
                                                                 : fmt::format("exit {}", status));
        if (auto last = board_.launcher_last(); !last.empty()) problem += ": " + last;
      }
    }
    board_.launcher_ended(status, problem, [this](int r) { return shared_.duration(r, {}); });
  }

 private:
  WrapperArgs wrapper_args() const {
    MpiLaunch m = ctx_.opts.mpi;
    m.job_id = ctx_.run_id;
    m.local_dir = local_job_dir(ctx_.run_id);
    m.nonce = ctx_.nonce;
    m.cwd = ctx_.spec.cwd;
    m.grace_s = static_cast<int>(ctx_.spec.timeouts.grace.count());
    m.command = ctx_.command;
    return WrapperArgs{m.local_dir,
                       0,
                       "",
                       m.grace_s,
                       ctx_.nonce,
                       mpirun_argv(ctx_.plan, m),
                       static_cast<int>(kHeartbeatTimeout.count())};
  }

  remote::RunOptions run_options() {
    remote::RunOptions ro;
    ro.timeout = kNoSessionTimeout;
    ro.stdin_data = env_payload(mpirun_env(ctx_.plan), ctx_.nonce);
    ro.keep_stdin_open = true;
    ro.heartbeat = kHeartbeatInterval;
    ro.cancelled = [this] { return shared_.abandon.load(); };
    ro.on_output = [this](int fd, std::string_view bytes) {
      if (fd == 2 && !marker_.started()) {
        std::string pass = marker_.feed(bytes);
        if (!pass.empty()) handle(demux_.feed(2, pass));
        return;
      }
      handle(demux_.feed(fd, bytes));
    };
    return ro;
  }

  void handle(const std::vector<MpiEvent>& events) {
    for (const auto& e : events) {
      if (e.kind == MpiEvent::Kind::kMpirun) {
        if (e.text.find_first_not_of(" -") == std::string::npos) {  // its boxes' rulers
          in_warning_ = false;
          after_ruler_ = true;
          continue;
        }
        ctx_.output.note("mpirun: " + e.text);
        // A warning (and the rest of a box that opens with one) is no reason for an end.
        const bool warning = mpirun_warning(e.text);
        if (warning && after_ruler_) in_warning_ = true;
        after_ruler_ = false;
        if (!warning && !in_warning_) board_.set_launcher_last(e.text);
        continue;
      }
      if (e.rank < 0 || e.rank >= world_) continue;
      const auto ri = static_cast<size_t>(e.rank);
      switch (e.kind) {
        case MpiEvent::Kind::kLine:
          board_.output_seen(e.rank);
          ctx_.output.feed(e.rank, e.fd, e.text + "\n");
          if (e.fd == 2) {
            // The waiter's line when it cannot run the command: the summary's reason.
            if (std::string why = exec_failure(e.text); !why.empty()) exec_failed_[ri] = why;
          }
          break;
        case MpiEvent::Kind::kStarted:
          shared_.started(e.rank, e.at);
          board_.started(e.rank, e.value);
          break;
        case MpiEvent::Kind::kEnded: {
          ctx_.output.finish(e.rank);
          // After the first failure, mpirun ends the others itself (ended_by_us); while
          // clusterctl has sent them nothing, theirs is mpirun's doing alone.
          const int first = board_.first_failed();
          board_.finished(e.rank, static_cast<int>(e.value), e.signaled,
                          !e.signaled && (e.value == 126 || e.value == 127) ? exec_failed_[ri] : "",
                          shared_.duration(e.rank, e.at), /*after_first_is_ours=*/true, e.at);
          if (first >= 0 && first != e.rank && !shared_.ranks_signalled) {
            board_.ended_by_launcher(e.rank);
          }
          break;
        }
        default:
          break;
      }
    }
  }

  const BackendContext& ctx_;
  RankBoard& board_;
  MpiShared& shared_;
  const int world_;
  std::vector<std::string> exec_failed_ = std::vector<std::string>(static_cast<size_t>(world_));
  MpiDemux demux_;
  StartMarker marker_;
  bool after_ruler_ = false;  // mpirun's last line was a box's ruler
  bool in_warning_ = false;   // inside a box that opened with a warning
};

// Host h's watch (mpi.h, host_watch_argv): its connection carries the heartbeat, so a host cut
// off is noticed as under the other runtimes: its ranks' connections lost, the job failed.
class HostWatch {
 public:
  HostWatch(const BackendContext& ctx, RankBoard& board, MpiShared& shared,
            const std::atomic<bool>& stop, size_t host)
      : ctx_(ctx),
        board_(board),
        shared_(shared),
        stop_(stop),
        host_(host),
        name_(ctx.plan.hosts[host].name) {}

  void run() {
    auto ex = ctx_.connect(host_);
    if (!ex) {
      if (!over() && ex.error().code != util::ExitCode::kInterrupted) lost(ex.error().message);
      return;
    }
    const std::string dir = job_dir(ctx_.run_id, host_);
    const int grace = static_cast<int>(ctx_.spec.timeouts.grace.count());
    const int rank = ctx_.plan.world_size();  // no rank's number: its own pid file
    // The wrapper's grace is longer than the watch's own, which then ends the ranks first.
    std::vector<std::string> argv = wrapper_argv(
        WrapperArgs{dir, rank, "", grace + 2, ctx_.nonce, host_watch_argv(dir, grace, rank),
                    static_cast<int>(kHeartbeatTimeout.count())});
    remote::RunOptions ro;
    ro.timeout = kNoSessionTimeout;
    ro.stdin_data = env_payload({}, ctx_.nonce);
    ro.keep_stdin_open = true;
    ro.heartbeat = kHeartbeatInterval;
    ro.heartbeat_timeout = kHeartbeatTimeout;
    ro.cancelled = [this] { return over(); };
    ro.what = "the watch of " + name_;
    auto res = (*ex)->run(remote::Command{std::move(argv)}, ro);
    if (over()) return;
    if (!res) {
      if (res.error().code != util::ExitCode::kInterrupted) lost(res.error().message);
      return;
    }
    // Ended on the host while the job runs: the teardown's SIGTERM reached it (its pid file is
    // in the job directory), or the wrapper could not start it.
    if (res->exit_status == 125 || res->exit_status == 126) {
      ctx_.output.note(fmt::format(
          "warning: the watch of {} did not start (exit {}{}{}): if {} is cut off, the job "
          "will not notice",
          name_, res->exit_status, res->err.empty() ? "" : ": ", util::trim(res->err), name_));
    }
  }

 private:
  bool over() const { return stop_.load() || shared_.abandon.load(); }

  // As the other runtimes' rank sessions say it (ssh_backend.cc): every rank of the host
  // without an end is lost, and the job fails with the first.
  void lost(const std::string& why) {
    ctx_.control.mark_lost(host_);  // teardown does not wait for it
    shared_.host_lost = true;
    for (int r = 0; r < board_.world_size(); ++r) {
      if (board_.host_of(r) != host_) continue;
      board_.finished(r, -1, false, fmt::format("connection lost: host {} lost: {}", name_, why),
                      shared_.duration(r, {}));
    }
  }

  const BackendContext& ctx_;
  RankBoard& board_;
  MpiShared& shared_;
  const std::atomic<bool>& stop_;
  const size_t host_;
  const std::string name_;
};

class MpiBackend final : public LaunchBackend {
 public:
  explicit MpiBackend(const BackendContext& ctx) : ctx_(ctx), shared_(ctx, ctx.plan.world_size()) {}
  // Normally joined already (run_job). When an exception unwinds past the watcher, the
  // sessions are given up rather than waited for (they have no time limit): their connections
  // close and each rank's watchdog ends it and removes its job directory (wrapper.h).
  ~MpiBackend() override {
    shared_.abandon = true;
    join();
  }

  void start(RankBoard& board) override {
    board_ = &board;
    board.launcher_running();
    thread_ = std::thread([this, &board] { MpirunSession(ctx_, board, shared_).run(); });
    for (size_t h = 0; h < nhosts(); ++h) {
      watches_.emplace_back(
          [this, &board, h] { HostWatch(ctx_, board, shared_, watches_over_, h).run(); });
    }
  }
  // Once a rank ends, mpirun ends the job itself (Open MPI aborts on the first non-zero exit),
  // and a SIGTERM in the middle of that makes Open MPI 4.1's mpirun crash (exit 139, a
  // backtrace through PMIx_Finalize; open-mpi/ompi#13650) and leave its daemons behind: the
  // ranks it had not yet ended had no exit status. So the ranks get the SIGTERM, and mpirun only
  // while no rank has started (it may be stuck starting its daemons, nothing of its own to end);
  // it gets SIGKILL if still there after the grace period. After a rank's failure that mpirun
  // saw (its exit), the ranks get none either: mpirun ends them itself (README, "runtime: mpi"),
  // clusterctl's SIGTERM would only race it, and the summary could not say whose ended them. A
  // host lost is no end that mpirun saw (it waits for that host's ranks): they get clusterctl's.
  void terminate(bool rank_failed) override {
    if (!rank_failed || shared_.host_lost) {
      shared_.ranks_signalled = true;
      for (size_t h = 0; h < nhosts(); ++h) ctx_.control.post(h, signal_argv(dir_of(h), "TERM"));
    }
    if (!rank_failed && !any_started()) {
      ctx_.control.post(nhosts(), signal_argv(dir_of(nhosts()), "TERM"));
    }
  }
  void terminate_again() override {}  // mpirun starts no rank once it is ending
  void kill() override {
    shared_.ranks_signalled = true;
    shared_.mpirun_killed = true;
    for (size_t h = 0; h <= nhosts(); ++h) ctx_.control.post(h, signal_argv(dir_of(h), "KILL"));
  }
  // A rank's pid is its wrapper's (mpi.h), whose CPU time says nothing.
  bool samples_ranks() const override { return false; }
  std::vector<std::vector<ProcessSample>> sample(
      const std::vector<std::vector<long>>& pids) override {
    return std::vector<std::vector<ProcessSample>>(pids.size());
  }
  void abandon() override { shared_.abandon = true; }
  // mpirun first: the job lasts as long as it runs; then the watches, which have no end of their
  // own (the cleanup's SIGKILL ends what a cancelled watch left on its host).
  void join() override {
    if (thread_.joinable()) thread_.join();
    watches_over_ = true;
    for (auto& t : watches_) t.join();
    watches_.clear();
    ctx_.control.drain();
  }

 private:
  size_t nhosts() const { return ctx_.plan.hosts.size(); }
  bool any_started() const {
    for (int r = 0; r < ctx_.plan.world_size(); ++r) {
      if (board_ != nullptr && board_->rank(r).started) return true;
    }
    return false;
  }
  std::string dir_of(size_t h) const {
    return h < nhosts() ? job_dir(ctx_.run_id, h) : local_job_dir(ctx_.run_id);
  }

  const BackendContext& ctx_;
  MpiShared shared_;
  RankBoard* board_ = nullptr;  // the job's, from start() on
  std::atomic<bool> watches_over_{false};
  std::thread thread_;
  std::vector<std::thread> watches_;
};

}  // namespace

std::unique_ptr<LaunchBackend> make_mpi_backend(const BackendContext& ctx) {
  return std::make_unique<MpiBackend>(ctx);
}

}  // namespace cc::launch
