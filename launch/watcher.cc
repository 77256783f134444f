#include "launch/watcher.h"

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <future>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include "launch/runner.h"
#include "util/interrupt.h"
#include "util/text.h"

namespace cc::launch {
namespace {

using util::ExitCode;
using Time = std::chrono::steady_clock::time_point;
using namespace std::chrono_literals;

// How long a rank seen stopped must stay stopped to be named as stopped (confirmed_stops).
constexpr std::chrono::milliseconds kStopConfirm{300};

std::chrono::milliseconds ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d);
}

class Watcher {
 public:
  Watcher(RankBoard& board, LaunchBackend& backend, OutputMux& output, util::Clock& clock,
          const WatchOptions& opts)
      : board_(board),
        backend_(backend),
        output_(output),
        clock_(clock),
        opts_(opts),
        world_(board.world_size()),
        stall_(static_cast<size_t>(world_), StallWatch(opts.timeouts.stall)),
        stall_sampling_(backend.samples_ranks() && opts.timeouts.stall.count() > 0),
        next_sample_(opts.t0 + stall_[0].interval()) {}

  WatchResult run() {
    backend_.start(board_);
    for (;;) {
      const RankBoard::Counts c = board_.counts();
      if (ending_at_) recheck_cause(c);  // the last report too, before the loop ends on it
      if (c.started == world_ && result_.startup.count() == 0) {
        result_.startup = ms(clock_.now() - opts_.t0);
      }
      if (c.finished == world_ && c.launcher_done) {
        // Every rank was over before the watcher looked: a Ctrl-C that came meanwhile (it
        // kept their sessions from connecting) is still why the job ended.
        if (!ending_at_ && util::interrupted()) {
          result_.code = ExitCode::kInterrupted;
          result_.reason = interrupt_reason();
        }
        break;
      }
      if (!ending_at_) {
        look_at_cables();
        if (auto why = end_reason(c)) begin_end(std::move(*why));
        if (!ending_at_) collect_stall_sample();
      } else {
        teardown_step();
      }
      status_line(c);
      clock_.sleep_for(opts_.tick);
    }
    if (pending_.valid()) pending_.wait();
    backend_.join();
    return result_;
  }

 private:
  struct Reason {
    std::string why;
    ExitCode code = ExitCode::kJobFailed;
    bool rank_failed = false;
    std::string note;  // `why` as the "ending the job" line says it, when shorter ("": why)
  };

  // The signal that came, named: `clusterctl stop` sends SIGTERM.
  static std::string interrupt_reason() {
    return util::interrupt_signal() == SIGTERM ? "terminated (SIGTERM, as `clusterctl stop` sends)"
                                               : util::interruption();
  }

  // Whether the job ends now, and why.
  std::optional<Reason> end_reason(const RankBoard::Counts& c) {
    const auto now = clock_.now();
    if (util::interrupted()) return Reason{interrupt_reason(), ExitCode::kInterrupted, false, ""};
    if (!cables_down_.empty()) {
      // A cable down since before a rank failed is the cause: the rank's collective gave up
      // on the dead cable (libclustercomm's timeout; MLX's "connection to a peer was lost"),
      // and blaming the rank named a host the operator would look at in vain.
      const auto& [line, since] =
          std::min_element(cables_down_.begin(), cables_down_.end(),
                           [](const auto& a, const auto& b) { return a.second.since < b.second.since; })
              ->second;
      const auto down_for = std::chrono::duration_cast<std::chrono::seconds>(now - since);
      if (c.first_failed >= 0) {
        const RankOutcome r = board_.rank(c.first_failed);
        return Reason{fmt::format("{} (down for {} s; rank {} on {} failed after it went "
                                  "down: a consequence)",
                                  line, down_for.count(), r.rank, r.host),
                      ExitCode::kJobFailed, false, ""};
      }
      if (now - since >= opts_.timeouts.cable) {
        return Reason{fmt::format("{} (down for {} s, longer than timeouts.cable)", line,
                                  down_for.count()),
                      ExitCode::kJobFailed, false, ""};
      }
    }
    if (c.first_failed >= 0) {
      // A rank that failed because another was stopped (its collective timed out) is not the
      // cause: look once more at the others (only when the failed rank reported an exit
      // status; after a lost connection the hosts may not answer).
      if (backend_.samples_ranks() && board_.rank(c.first_failed).exit_status >= 0) {
        auto answers = confirmed_stops(backend_.sample(running_pids()));
        judge(answers, false, clock_.now());
      }
      // Named as the summary will name it: the first failure's cause when its error names a
      // rank that failed on its own already (another job's coordinator refused it, after this
      // job's rank 0 could not listen), with a long "why" left to the summary.
      FailureCause f = failure_cause(board_.ranks(), c.first_failed, output_.last_error_lines());
      named_cause_ = f.cause;
      return Reason{std::move(f.reason), ExitCode::kJobFailed, true, std::move(f.brief)};
    }
    if (c.started < world_ && now - opts_.t0 > opts_.timeouts.startup) {
      auto ranks = board_.ranks();
      auto it = std::find_if(ranks.begin(), ranks.end(),
                             [](const RankOutcome& o) { return !o.started && !o.finished; });
      return Reason{fmt::format("rank {} on {} was not running after timeouts.startup ({} s)",
                                it != ranks.end() ? it->rank : -1,
                                it != ranks.end() ? it->host : "?", opts_.timeouts.startup.count()),
                    ExitCode::kJobFailed, false, ""};
    }
    if (opts_.timeouts.total.count() > 0 && now - opts_.t0 > opts_.timeouts.total) {
      last_cpu_look();
      return Reason{fmt::format("the job ran longer than timeouts.total ({} s){}",
                                opts_.timeouts.total.count(), still_running()),
                    ExitCode::kJobFailed, false, ""};
    }
    return std::nullopt;
  }

  // The ranks that have not ended, "rank 0 on h1, rank 2 on h3" (at most 4 named, then "and N
  // more"); "" when every rank has.
  std::string ranks_not_ended() const {
    std::vector<std::string> names;
    size_t more = 0;
    for (const auto& o : board_.ranks()) {
      if (o.finished) continue;
      if (names.size() < 4) {
        names.push_back(fmt::format("rank {} on {}", o.rank, o.host));
      } else {
        ++more;
      }
    }
    std::string out = fmt::format("{}", fmt::join(names, ", "));
    if (more > 0) out += fmt::format(" and {} more", more);
    return out;
  }

  // When some ranks exited 0 and others did not end (horovod#2107: one rank stuck in a
  // collective the others had left): which ones, for the reason a timeout gives. "" otherwise.
  std::string still_running() const {
    const auto ranks = board_.ranks();
    std::vector<std::string> running;
    int first = -1;
    size_t exited_ok = 0;
    for (const auto& o : ranks) {
      if (o.finished && o.exit_status == 0) ++exited_ok;
      if (o.finished) continue;
      running.push_back(fmt::format("rank {} on {}", o.rank, o.host));
      if (first < 0) first = o.rank;
    }
    if (running.empty()) return "";
    if (exited_ok == 0) return silent_ranks();
    constexpr size_t kShown = 4;
    std::string list = fmt::format(
        "{}",
        fmt::join(running.begin(),
                  running.begin() + static_cast<std::ptrdiff_t>(std::min(running.size(), kShown)),
                  ", "));
    if (running.size() > kShown) list += fmt::format(" and {} more", running.size() - kShown);
    return fmt::format(
        ": {} still running after {} of {} exited 0 (stuck, e.g. in a collective the "
        "others had left: its last lines are in `clusterctl logs {} --rank {}`)",
        list, exited_ok, util::plural(ranks.size(), "rank", "ranks"),
        opts_.name.empty() ? "JOB" : opts_.name, first);
  }

  // At the deadline, the stall watch's sample in flight is judged and one more is taken, so
  // that the reason gives each rank's CPU use up to now (silent and idle: blocked; silent and
  // busy: spinning). A sample takes at most ~2 s (sample_hosts). Without stall sampling
  // (timeouts.stall 0) there is nothing to compare a sample with: no CPU use is given.
  void last_cpu_look() {
    if (!stall_sampling_) return;
    if (pending_.valid()) {
      const TimedSample done = pending_.get();
      judge(done.answers, true, done.at);
    }
    judge(backend_.sample(running_pids()), true, clock_.now());
  }

  // When no rank had ended: every rank still running at the deadline, the longest silent
  // first, with how long it had printed nothing and its CPU use at the last stall sample (the
  // hung rank is the silent one; one spinning in a collective keeps a core busy, one blocked
  // uses none): ": still running at the deadline: rank 1 on h2 (silent for 19 s, 0% CPU), rank
  // 0 on h1 (silent for 1 s, 98% CPU) ...; the longest silent first: its last lines are in
  // `clusterctl logs JOB --rank 1`".
  std::string silent_ranks() const {
    struct Running {
      int rank;
      std::string host;
      std::chrono::milliseconds silent;
    };
    std::vector<Running> running;
    const auto now = clock_.now();
    for (const auto& o : board_.ranks()) {
      if (!o.finished) running.push_back({o.rank, o.host, ms(now - board_.last_output(o.rank))});
    }
    if (running.empty()) return "";
    std::stable_sort(running.begin(), running.end(),
                     [](const Running& a, const Running& b) { return a.silent > b.silent; });
    constexpr size_t kShown = 4;
    std::vector<std::string> named;
    for (size_t i = 0; i < running.size() && i < kShown; ++i) {
      const Running& r = running[i];
      const size_t k = static_cast<size_t>(r.rank);
      named.push_back(fmt::format(
          "rank {} on {} (silent for {} s{})", r.rank, r.host, r.silent.count() / 1000,
          samples_[k] >= 2 ? fmt::format(", {:.0f}% CPU", stall_[k].last_load() * 100) : ""));
    }
    std::string list = fmt::format("{}", fmt::join(named, ", "));
    if (running.size() > kShown) list += fmt::format(" and {} more", running.size() - kShown);
    return fmt::format(
        ": still running at the deadline: {}; the longest silent first: its last lines are in "
        "`clusterctl logs {} --rank {}`",
        list, opts_.name.empty() ? "JOB" : opts_.name, running.front().rank);
  }

  // The cables down now, from the cable watch's last look: each one newly down is named at
  // once (the job goes on: a cable that comes back within timeouts.cable costs nothing), and
  // one back up is said so.
  void look_at_cables() {
    if (!opts_.cables_down) return;
    // Keyed by the cable ("cable h2 tb2 - h3 tb1"): its line's judgement of the far end may
    // change from one look to the next (that host's probe late) while the cable stays down.
    auto cable_of = [](const std::string& line) { return line.substr(0, line.find(" is down:")); };
    std::map<std::string, std::string> now_down;
    for (const std::string& line : opts_.cables_down()) now_down.emplace(cable_of(line), line);
    const auto now = clock_.now();
    for (auto it = cables_down_.begin(); it != cables_down_.end();) {
      if (now_down.count(it->first) > 0) {
        ++it;
        continue;
      }
      output_.job_note(fmt::format("{} is up again after {} s", it->first,
                                   std::chrono::duration_cast<std::chrono::seconds>(
                                       now - it->second.since).count()));
      it = cables_down_.erase(it);
    }
    for (const auto& [cable, line] : now_down) {
      auto [it, added] = cables_down_.emplace(cable, DownCable{line, now});
      it->second.line = line;
      if (!added) continue;
      // Shown even where job notes are not (`clusterctl push`): it names no rank and no job,
      // and the operator can mend the cable before the ranks are ended.
      output_.note(fmt::format(
          "{} (a cable the ranks use: they are ended if it is still down in {} s, "
          "timeouts.cable)",
          line, opts_.timeouts.cable.count()));
    }
  }

  void begin_end(Reason r) {
    bool stopped_first = false;
    if (r.note.empty()) r.note = r.why;
    if (auto stopped = board_.begin_ending(); stopped && r.code != ExitCode::kInterrupted) {
      stopped_first = true;
      for (std::string* text : {&r.why, &r.note}) {
        *text = fmt::format(
            "rank {} on {} was stopped (SIGSTOP, Ctrl-Z or a debugger) and the "
            "others waited for it; then {}",
            stopped->rank, stopped->host, *text);
      }
    }
    stall_sampling_ = false;  // no stall warnings during teardown
    result_.reason = std::move(r.why);
    result_.code = r.code;
    result_.rank_failed = r.rank_failed && !stopped_first;
    ending_at_ = clock_.now();
    interrupts_at_end_ = util::interrupt_count();
    next_term_ = *ending_at_ + 1s;
    output_.job_note(fmt::format("{}: ending the job (SIGTERM, SIGKILL after {} s)", r.note,
                                 opts_.timeouts.grace.count()));
    backend_.terminate(r.rank_failed);
  }

  // The "ending the job" line named the cause from the reports that had come; a report that
  // came since may change it (a rank that ended first by its host's clock, its report slower;
  // a rank that failed on its own, where the first only lost a peer: failure_cause). The
  // summary's verdict is judged by the same function once every rank has ended: a changed
  // cause is said as soon as it is known, so the lines during the run agree with it.
  void recheck_cause(const RankBoard::Counts& c) {
    if (!result_.rank_failed || c.finished == finished_judged_) return;
    finished_judged_ = c.finished;
    const int first = board_.first_failed();
    const auto ranks = board_.ranks();
    if (first < 0 || named_cause_ < 0) return;
    const FailureCause f = failure_cause(ranks, first, output_.last_error_lines());
    if (f.cause < 0 || f.cause == named_cause_) return;
    const RankOutcome& named = ranks[static_cast<size_t>(named_cause_)];
    output_.job_note(fmt::format("the cause, now that more ranks have reported: {} (not rank {} "
                                 "on {}, named above)",
                                 f.brief, named.rank, named.host));
    named_cause_ = f.cause;
  }

  // SIGTERM again every second for ranks that started since, SIGKILL after the grace period
  // (or at once on a Ctrl-C or SIGTERM that arrives while the job is ending: the operator does
  // not want to wait for it), and, once even that had time to reach every host, give up on the
  // hosts that do not answer.
  void teardown_step() {
    const auto now = clock_.now();
    if (!killed_ && util::interrupt_count() > interrupts_at_end_) {
      // The handler (util/interrupt.h) lets the signal after the second end clusterctl.
      const int more = util::interrupt_count() >= 2 ? 1 : 2;
      output_.job_note(fmt::format(
          "{}: sending SIGKILL to every rank now, without waiting for the rest of the grace "
          "period; {} Ctrl-C more end{} clusterctl at once (the ranks' watchdogs then end what "
          "is left, and `clusterctl jobs --gc` removes their job directories)",
          interrupts_at_end_ == 0 ? "Ctrl-C or SIGTERM while the job was ending"
                                  : "second Ctrl-C or SIGTERM",
          more == 1 ? "one" : "two", more == 1 ? "s" : ""));
      backend_.kill();
      killed_ = true;
    } else if (!killed_ && now >= *ending_at_ + opts_.timeouts.grace) {
      // Said by clusterctl, in its own line: a rank's shell reporting the SIGKILL ("Killed")
      // under the rank's prefix looked like the rank's own output (the wrapper keeps it quiet).
      if (const std::string still = ranks_not_ended(); !still.empty()) {
        output_.job_note(fmt::format("{} still running after the {} s grace period: SIGKILL",
                                     still, opts_.timeouts.grace.count()));
      }
      backend_.kill();
      killed_ = true;
    } else if (!killed_ && now >= next_term_) {
      backend_.terminate_again();
      next_term_ = now + 1s;
    }
    if (!abandoned_ && now - *ending_at_ > opts_.timeouts.grace + opts_.control_timeout + 5s) {
      backend_.abandon();  // the ranks still connected belong to unreachable hosts
      abandoned_ = true;
    }
  }

  // A rank seen stopped once may be stopped only for a moment: LeakSanitizer stops a process's
  // threads with ptrace as it exits (ps STAT t), and so do profilers that sample stacks
  // (py-spy). Only a rank still stopped a moment later (SIGSTOP, Ctrl-Z, a debugger at a
  // breakpoint) is what the others waited for; the others are not named so.
  std::vector<std::vector<ProcessSample>> confirmed_stops(
      std::vector<std::vector<ProcessSample>> answers) {
    const auto any_stopped = [&] {
      for (const auto& host : answers) {
        for (const auto& p : host) {
          if (p.stopped) return true;
        }
      }
      return false;
    };
    if (!any_stopped()) return answers;
    clock_.sleep_for(kStopConfirm);
    const auto again = backend_.sample(running_pids());
    for (size_t h = 0; h < answers.size(); ++h) {
      for (auto& p : answers[h]) {
        if (!p.stopped) continue;
        const bool still =
            h < again.size() && std::any_of(again[h].begin(), again[h].end(), [&](const auto& q) {
              return q.pid == p.pid && q.stopped;
            });
        p.stopped = still;
      }
    }
    return answers;
  }

  std::vector<std::vector<long>> running_pids() const {
    std::vector<std::vector<long>> pids(board_.hosts());
    for (const auto& o : board_.ranks()) {
      if (!o.started || o.finished || o.pid <= 0) continue;
      pids[board_.host_of(o.rank)].push_back(o.pid);
    }
    return pids;
  }

  // The stall sampler runs beside the watch loop, so a host slow to answer its sample never
  // delays noticing a failure: a sample is started when due and judged when it came back.
  void collect_stall_sample() {
    if (!stall_sampling_) return;
    if (pending_.valid()) {
      if (pending_.wait_for(0s) != std::future_status::ready) return;
      const TimedSample done = pending_.get();
      judge(done.answers, true, done.at);
      next_sample_ = clock_.now() + stall_[0].interval();
      return;
    }
    if (clock_.now() < next_sample_) return;
    // The time is taken when the answers came back, not when the loop next looks: the CPU
    // share is CPU time over wall time between two samples, and a loop slow to look (a loaded
    // machine) must not dilute it.
    pending_ = std::async(std::launch::async, [this, pids = running_pids()] {
      TimedSample t;
      t.answers = backend_.sample(pids);
      t.at = clock_.now();
      return t;
    });
  }

  // Warns about the silent ranks that keep a core busy (with `stall_warnings`), and about a
  // stopped rank (SIGSTOP, Ctrl-Z, a debugger), which every other rank then waits for.
  void judge(const std::vector<std::vector<ProcessSample>>& answers, bool stall_warnings,
             Time now) {
    for (const auto& o : board_.ranks()) {
      if (!o.started || o.finished || o.pid <= 0) continue;
      const size_t h = board_.host_of(o.rank);
      if (h >= answers.size()) continue;
      const auto& samples = answers[h];
      auto it = std::find_if(samples.begin(), samples.end(),
                             [&](const ProcessSample& p) { return p.pid == o.pid; });
      if (it == samples.end()) continue;
      if (it->stopped && board_.mark_stopped(o.rank)) {
        output_.job_note(
            fmt::format("warning: rank {} on {} is stopped (SIGSTOP, Ctrl-Z or a "
                        "debugger): every other rank waits for it; `kill -CONT {}` on {} "
                        "resumes it",
                        o.rank, o.host, o.pid, o.host));
      }
      if (!stall_warnings) continue;
      auto silent = ms(now - board_.last_output(o.rank));
      auto& w = stall_[static_cast<size_t>(o.rank)];
      const bool warn = w.sample(now, it->cpu, silent, it->runnable);
      ++samples_[static_cast<size_t>(o.rank)];  // last_load() is known from the second
      if (warn) {
        // Below 75% it wanted a core at every look and got only a share of one: say so, or
        // "using 35% CPU" reads like a rank that is mostly idle.
        const std::string shared =
            w.last_load() < 0.75 ? fmt::format(" (it wanted a core at every look; {} shares its "
                                               "cores with other work)",
                                               o.host)
                                 : "";
        output_.job_note(
            fmt::format("warning: rank {} on {} has printed nothing for {} s while "
                        "using {:.0f}% CPU{}: a hung collective? (timeouts.stall)",
                        o.rank, o.host, silent.count() / 1000, w.last_load() * 100, shared));
      }
    }
  }

  void status_line(const RankBoard::Counts& c) {
    if (!opts_.status || clock_.now() - last_status_ < 200ms) return;
    last_status_ = clock_.now();
    opts_.status(fmt::format("{}: {}/{} running, {} exited, {} s{}", opts_.name, c.running, world_,
                             c.finished, ms(clock_.now() - opts_.t0).count() / 1000,
                             ending_at_ ? " (ending)" : ""));
  }

  RankBoard& board_;
  LaunchBackend& backend_;
  OutputMux& output_;
  util::Clock& clock_;
  const WatchOptions& opts_;
  const int world_;
  std::vector<StallWatch> stall_;
  std::vector<int> samples_ = std::vector<int>(static_cast<size_t>(world_), 0);  // per rank
  bool stall_sampling_;
  Time next_sample_;
  struct TimedSample {
    std::vector<std::vector<ProcessSample>> answers;
    Time at{};  // when they came back
  };
  std::future<TimedSample> pending_;
  WatchResult result_;
  int named_cause_ = -1;      // the rank the "ending the job" line (or a later note) blamed
  int finished_judged_ = -1;  // RankBoard::Counts::finished when recheck_cause last judged
  std::optional<Time> ending_at_;
  struct DownCable {
    std::string line;  // the last look's (topology::cable_down_line)
    Time since;        // when it was first seen down
  };
  std::map<std::string, DownCable> cables_down_;  // by cable ("cable h2 tb2 - h3 tb1")
  Time next_term_{};
  int interrupts_at_end_ = 0;  // util::interrupt_count() when the ending began
  bool killed_ = false;
  bool abandoned_ = false;
  Time last_status_ = clock_.now() - 1s;
};

}  // namespace

WatchResult watch(RankBoard& board, LaunchBackend& backend, OutputMux& output, util::Clock& clock,
                  const WatchOptions& opts) {
  return Watcher(board, backend, output, clock, opts).run();
}

}  // namespace cc::launch
