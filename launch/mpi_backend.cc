// The mpirun backend (backend.h, runtime mpi): mpirun runs on this machine under the rank
// wrapper (through RunnerOptions::connect_local), in a job directory of its own here; each
// rank's start, output and exit status come back through mpirun's tagged output (MpiDemux),
// and the job ends with mpirun. The hosts' job directories hold uploads and the ranks' pid
// files as usual, so signals and cleanup reach the ranks there too.
#include <atomic>
#include <thread>

#include <fmt/format.h>

#include "launch/backend.h"
#include "launch/mpi.h"
#include "launch/wrapper.h"

namespace cc::launch {
namespace {

using Time = std::chrono::steady_clock::time_point;

// mpirun's one session: connect, start, demultiplex its output into the ranks', exit status.
class MpirunSession {
 public:
  MpirunSession(const BackendContext& ctx, RankBoard& board, const std::atomic<bool>& abandon)
      : ctx_(ctx),
        board_(board),
        abandon_(abandon),
        world_(ctx.plan.world_size()),
        began_(static_cast<size_t>(world_), ctx.clock.now()),
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
      problem = fmt::format("mpirun ended ({})", status == 127 ? "exit 127: is Open MPI "
                                                                 "installed on this machine?"
                                                               : fmt::format("exit {}", status));
      if (auto last = board_.launcher_last(); !last.empty()) problem += ": " + last;
    }
    board_.launcher_ended(status, problem,
                          [this](int r) { return since(began_[static_cast<size_t>(r)]); });
  }

 private:
  std::chrono::milliseconds since(Time t) const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(ctx_.clock.now() - t);
  }

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
    ro.cancelled = [this] { return abandon_.load(); };
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
        if (e.text.find_first_not_of(" -") == std::string::npos) continue;  // its rulers
        ctx_.output.note("mpirun: " + e.text);
        board_.set_launcher_last(e.text);
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
          began_[ri] = ctx_.clock.now();
          board_.started(e.rank, e.value);
          break;
        case MpiEvent::Kind::kEnded:
          ctx_.output.finish(e.rank);
          // After the first failure, mpirun ends the others itself (ended_by_us).
          board_.finished(e.rank, static_cast<int>(e.value), e.signaled,
                          !e.signaled && (e.value == 126 || e.value == 127) ? exec_failed_[ri] : "",
                          since(began_[ri]), /*after_first_is_ours=*/true);
          break;
        default:
          break;
      }
    }
  }

  const BackendContext& ctx_;
  RankBoard& board_;
  const std::atomic<bool>& abandon_;
  const int world_;
  std::vector<Time> began_;  // only this session's thread touches it
  std::vector<std::string> exec_failed_ = std::vector<std::string>(static_cast<size_t>(world_));
  MpiDemux demux_;
  StartMarker marker_;
};

class MpiBackend final : public LaunchBackend {
 public:
  explicit MpiBackend(const BackendContext& ctx) : ctx_(ctx) {}
  // Normally joined already (run_job). When an exception unwinds past the watcher, the
  // sessions are given up rather than waited for (they have no time limit): their connections
  // close and each rank's watchdog ends it and removes its job directory (wrapper.h).
  ~MpiBackend() override {
    abandon_ = true;
    join();
  }

  void start(RankBoard& board) override {
    board_ = &board;
    board.launcher_running();
    thread_ = std::thread([this, &board] { MpirunSession(ctx_, board, abandon_).run(); });
  }
  // Once a rank ends, mpirun ends the job itself (Open MPI aborts on the first non-zero exit),
  // and a SIGTERM in the middle of that makes Open MPI 4.1's mpirun crash (exit 139, a
  // backtrace through PMIx_Finalize; open-mpi/ompi#13650) and leave its daemons behind: the
  // ranks it had not yet ended had no exit status. So the ranks get the SIGTERM, and mpirun only
  // while no rank has started (it may be stuck starting its daemons, nothing of its own to end);
  // it gets SIGKILL if still there after the grace period.
  void terminate(bool rank_failed) override {
    for (size_t h = 0; h < nhosts(); ++h) ctx_.control.post(h, signal_argv(dir_of(h), "TERM"));
    if (!rank_failed && !any_started()) {
      ctx_.control.post(nhosts(), signal_argv(dir_of(nhosts()), "TERM"));
    }
  }
  void terminate_again() override {}  // mpirun starts no rank once it is ending
  void kill() override {
    for (size_t h = 0; h <= nhosts(); ++h) ctx_.control.post(h, signal_argv(dir_of(h), "KILL"));
  }
  // A rank's pid is its wrapper's (mpi.h), whose CPU time says nothing.
  bool samples_ranks() const override { return false; }
  std::vector<std::vector<ProcessSample>> sample(
      const std::vector<std::vector<long>>& pids) override {
    return std::vector<std::vector<ProcessSample>>(pids.size());
  }
  void abandon() override { abandon_ = true; }
  void join() override {
    if (thread_.joinable()) thread_.join();
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
  RankBoard* board_ = nullptr;  // the job's, from start() on
  std::atomic<bool> abandon_{false};
  std::thread thread_;
};

}  // namespace

std::unique_ptr<LaunchBackend> make_mpi_backend(const BackendContext& ctx) {
  return std::make_unique<MpiBackend>(ctx);
}

}  // namespace cc::launch
