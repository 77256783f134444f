// The parts of run_job (runner.h). A LaunchBackend starts the ranks, one session per rank
// (ssh_backend.cc: runtimes clustercomm, mlx and none) or one local mpirun for them all
// (mpi_backend.cc: runtime mpi, mpi.h), and reports each rank's start, output and end on the
// RankBoard; the watcher (watcher.h) reads the board and decides when the job ends, and asks the
// backend to signal, sample and give up. ControlHosts is the one control connection per host
// (plus this machine for mpirun) that set-up, signals, samples and cleanup share.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "launch/job_spec.h"
#include "launch/output.h"
#include "launch/rank_env.h"
#include "launch/runner.h"
#include "launch/stall.h"
#include "remote/executor.h"
#include "util/clock.h"

namespace cc::launch {

/// A rank session has no time limit of its own: the watcher ends it (timeouts.total, Ctrl-C,
/// the first failure) by signals, and gives up on it through RunOptions::cancelled. RunOptions
/// takes a finite duration, so this is the bound that stands for "none": a year.
inline constexpr std::chrono::milliseconds kNoSessionTimeout = std::chrono::hours(24 * 365);

/// What removes host `host`'s job directory that clusterctl could not: said after each one it
/// names. --hosts, since `jobs --gc` alone passes by the records of jobs whose ranks never ran.
std::string gc_advice(const std::string& host);

/// How a rank whose host's connection was lost is described (RankOutcome::problem begins so).
inline constexpr std::string_view kConnectionLost = "connection lost: ";
/// How late past kHeartbeatTimeout a host's loss may be reported and still count as having
/// come before (or as) the job's first failure: the heartbeat's own interval and the SSH
/// library's slack.
inline constexpr std::chrono::seconds kLossReportSlack{3};

/// Every rank's outcome as the sessions report it and the watcher reads it. Thread-safe.
class RankBoard {
 public:
  RankBoard(const WorldPlan& plan, util::Clock& clock);

  struct Counts {
    int started = 0;
    int finished = 0;
    int running = 0;
    int first_failed = -1;
    bool launcher_done = true;
  };
  Counts counts() const;
  int world_size() const { return static_cast<int>(host_of_.size()); }
  size_t hosts() const { return hosts_; }
  /// The index (WorldPlan::hosts) of rank `rank`'s host.
  size_t host_of(int rank) const { return host_of_.at(static_cast<size_t>(rank)); }

  /// The rank's process ran (its start line arrived), with pid `pid` on its host.
  void started(int rank, long pid);
  /// Output from the rank arrived now (the stall warning's "silent for").
  void output_seen(int rank);
  /// When the rank last printed (or started, or the job began).
  std::chrono::steady_clock::time_point last_output(int rank) const;
  /// The rank ended: `status` 0..255 or -1 (unknown; `problem` says why). Before teardown its
  /// failure is the job's first if none came before; after, a failure is marked ended_by_us.
  /// With `after_first_is_ours` (mpirun ends the others itself after the first failure), a
  /// failure after the first one is marked ended_by_us too. `exited_at`: when it ended by its
  /// host's clock (wrapper.h EndRecord): a failure that reports after the first one but ended
  /// before it, by the hosts' clocks, is the job's first failure instead (the other's may be
  /// its consequence: a peer gone), even when the teardown began in between. A host's loss
  /// (`problem` begins kConnectionLost) reported at most kHeartbeatTimeout + kLossReportSlack
  /// after the first failure is the first failure instead: the host was lost before or as it.
  void finished(int rank, int status, bool signaled, std::string problem,
                std::chrono::milliseconds duration, bool after_first_is_ours = false,
                std::optional<double> exited_at = std::nullopt);
  /// runtime mpi: the rank, ended by us (finished), was ended by mpirun alone, as Open MPI ends
  /// a job after a rank's failure, clusterctl having sent it no signal.
  void ended_by_launcher(int rank);
  /// The rank was never started, by clusterctl's doing (Ctrl-C cut its connect short): it is
  /// over without a status (`problem` says why), ended by us, never the job's first failure.
  void not_started(int rank, std::string problem);
  /// runtime mpi: mpirun runs (the job is not over before it ends).
  void launcher_running();
  /// runtime mpi: mpirun ended with `status` (-1: unknown); every rank without an end gets -1
  /// with `problem` ("no exit status: ..." once started, else "never started: ...").
  void launcher_ended(int status, const std::string& problem,
                      const std::function<std::chrono::milliseconds(int rank)>& duration);
  void set_launcher_last(std::string line);

  /// Teardown began: failures from now on are its doing. Returns the stopped rank, if any,
  /// that the others waited for.
  std::optional<RankOutcome> begin_ending();
  /// Marks the rank seen stopped; true the first time.
  bool mark_stopped(int rank);

  std::vector<RankOutcome> ranks() const;
  RankOutcome rank(int r) const;
  int first_failed() const;
  int launcher_status() const;
  std::string launcher_last() const;
  bool all_over() const;

 private:
  util::Clock& clock_;
  const size_t hosts_;
  const std::vector<size_t> host_of_;
  mutable std::mutex mu_;
  std::vector<RankOutcome> ranks_;
  std::vector<std::chrono::steady_clock::time_point> last_output_;
  int first_failed_ = -1;
  std::chrono::steady_clock::time_point first_failed_at_;  // when the first failure came
  bool ending_ = false;
  bool launcher_done_ = true;
  int launcher_status_ = 0;
  std::string launcher_last_;
};

/// The control connections, one per host (index as WorldPlan::hosts) and, for runtime mpi, one
/// more to this machine (index hosts.size()). Commands on one host are serialised; a host whose
/// connection fails or does not answer is marked lost, and no later command waits for it.
class ControlHosts {
 public:
  ControlHosts(std::vector<std::unique_ptr<remote::Executor>> execs,
               std::chrono::milliseconds timeout);
  ~ControlHosts();
  ControlHosts(const ControlHosts&) = delete;
  ControlHosts& operator=(const ControlHosts&) = delete;

  size_t size() const { return execs_.size(); }
  void mark_lost(size_t h) { lost_[h] = true; }
  bool lost(size_t h) const { return lost_[h]; }

  /// Runs `argv` on host h within the control timeout; nullopt when the host is lost or has no
  /// connection. Marks it lost when the connection fails or it does not answer.
  std::optional<remote::CommandResult> run(size_t h, std::vector<std::string> argv);
  /// The same within `timeout`, for a question that need not be answered (a sample): a host
  /// that fails it is not marked lost.
  std::optional<remote::CommandResult> ask(size_t h, std::vector<std::string> argv,
                                           std::chrono::milliseconds timeout);
  /// Queues `argv` for host h and returns at once: each host runs its queue in order on a thread
  /// of its own, so a host that does not answer delays no other host's signals. An `argv`
  /// already queued (not yet running) is not queued again.
  void post(size_t h, std::vector<std::string> argv);
  /// Waits until every posted command ran (or its host was lost).
  void drain();
  /// One command on every host at once (not lost ones: said so in the problems, as
  /// `lost_problem(h)` words it when given); returns "host: problem" for each host where it
  /// failed. Never cut short by Ctrl-C once connected (this is the cleanup that Ctrl-C asks
  /// for; a connect it would cut short the caller prevents with util::InterruptSetAside).
  std::vector<std::string> on_every_host(
      const std::function<std::vector<std::string>(size_t)>& argv,
      const std::function<std::string(size_t h, const std::string& host)>& lost_problem =
          nullptr);

 private:
  void worker(size_t h);
  std::optional<remote::CommandResult> run_on(size_t h, std::vector<std::string> argv,
                                              std::chrono::milliseconds timeout, bool lose);
  std::vector<std::unique_ptr<remote::Executor>> execs_;
  std::chrono::milliseconds timeout_;
  std::vector<std::atomic<bool>> lost_;
  std::vector<std::mutex> run_mu_;
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::vector<std::deque<std::vector<std::string>>> queues_;
  std::vector<bool> busy_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

/// Starts and ends a job's ranks. The watcher calls start() once, then any of the others from
/// its one thread; join() last.
class LaunchBackend {
 public:
  virtual ~LaunchBackend() = default;
  /// Starts every rank's session on threads of its own and returns at once; they report on
  /// `board`.
  virtual void start(RankBoard& board) = 0;
  /// The teardown's first SIGTERM to the job's ranks on every host (returns at once).
  /// `rank_failed`: a rank's failure ends the job.
  virtual void terminate(bool rank_failed) = 0;
  /// SIGTERM again, about every second until the SIGKILL, for ranks whose group appeared
  /// since the last (returns at once).
  virtual void terminate_again() = 0;
  /// SIGKILL to every rank group still there (returns at once).
  virtual void kill() = 0;
  /// Whether sample() tells each rank's own process state and CPU time.
  virtual bool samples_ranks() const = 0;
  /// Samples the processes `pids[h]` on each host h (state and CPU time; one round trip per
  /// host, at most ~2 s).
  virtual std::vector<std::vector<ProcessSample>> sample(
      const std::vector<std::vector<long>>& pids) = 0;
  /// Gives up on the sessions still connected (their hosts do not answer).
  virtual void abandon() = 0;
  /// Waits for every session and every posted signal.
  virtual void join() = 0;
};

/// What a backend needs of run_job's set-up.
struct BackendContext {
  const JobSpec& spec;
  const WorldPlan& plan;
  OutputMux& output;
  const ExecutorFactory& connect;
  const RunnerOptions& opts;
  ControlHosts& control;
  util::Clock& clock;
  std::string run_id;                // JOBID-RANDOM: names the job directories
  std::string nonce;                 // the start markers' and environment's
  std::vector<std::string> command;  // the rank's argv
};

/// Samples `pids[h]` on each control host h at once (sample_argv; 2 s limit, a silent host is
/// left out and not marked lost).
std::vector<std::vector<ProcessSample>> sample_hosts(ControlHosts& control,
                                                     const std::vector<std::vector<long>>& pids);

/// One SSH session per rank (runtimes clustercomm, mlx and none).
std::unique_ptr<LaunchBackend> make_ssh_backend(const BackendContext& ctx);
/// mpirun on this machine through opts.connect_local (runtime mpi, mpi.h).
std::unique_ptr<LaunchBackend> make_mpi_backend(const BackendContext& ctx);

}  // namespace cc::launch
