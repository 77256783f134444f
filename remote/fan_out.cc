#include "remote/fan_out.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>

#include <fmt/format.h>

namespace cc::remote {

std::string fan_out_progress(std::string_view label, size_t done, size_t total,
                             const std::vector<std::string>& waiting) {
  constexpr size_t kNamesShown = 4;
  std::string text = fmt::format("{}: {}/{} done", label, done, total);
  if (waiting.empty()) return text;
  text += ", waiting for ";
  for (size_t i = 0; i < waiting.size() && i < kNamesShown; ++i) {
    if (i > 0) text += ", ";
    text += waiting[i];
  }
  if (waiting.size() > kNamesShown) text += fmt::format(" +{} more", waiting.size() - kNamesShown);
  return text;
}

void for_each_host(std::span<Executor* const> executors, std::string_view label,
                   const std::function<void(size_t)>& work, const util::OutputStyle& style) {
  const size_t n = executors.size();
  std::vector<bool> finished(n, false);
  std::vector<std::exception_ptr> failures(n);
  std::mutex mu;
  std::condition_variable cv;
  size_t done = 0;

  auto run_one = [&](size_t i) {
    std::exception_ptr failure;
    try {
      work(i);
    } catch (...) {
      failure = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu);
    finished[i] = true;
    failures[i] = failure;
    ++done;
    cv.notify_all();
  };

  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    try {
      threads.emplace_back(run_one, i);
    } catch (const std::system_error&) {  // out of threads: this host's work runs here
      run_one(i);
    }
  }

  {
    util::ProgressLine progress(style);
    std::unique_lock<std::mutex> lock(mu);
    std::string shown;
    while (done < n) {
      std::vector<std::string> waiting;
      for (size_t i = 0; i < n; ++i) {
        if (!finished[i]) waiting.push_back(executors[i] != nullptr ? executors[i]->host() : "?");
      }
      std::string text = fan_out_progress(label, done, n, waiting);
      if (text != shown) progress.update(text);  // redraw only what changed
      shown = std::move(text);
      cv.wait_for(lock, std::chrono::milliseconds(200));
    }
  }
  for (auto& t : threads) t.join();
  for (auto& f : failures) {
    if (f) std::rethrow_exception(f);
  }
}

std::vector<HostOutcome> fan_out(std::span<Executor* const> executors, const Command& cmd,
                                 const RunOptions& opts, const util::OutputStyle& style,
                                 std::size_t keep) {
  std::vector<std::optional<util::Result<CommandResult>>> results(executors.size());
  for_each_host(
      executors, "exec",
      [&](size_t i) {
        if (keep == 0 || opts.on_output) {
          results[i].emplace(executors[i]->run(cmd, opts));
          return;
        }
        // The host's streams as they arrive: the first `keep` bytes of each kept, the rest
        // counted (this thread's own; run() calls on_output on it).
        std::string kept[2];
        std::size_t hidden[2] = {0, 0};
        auto take = [&](int fd, std::string_view bytes) {
          const size_t k = fd == 2 ? 1 : 0;
          const size_t room = keep - std::min(keep, kept[k].size());
          kept[k].append(bytes.substr(0, room));
          hidden[k] += bytes.size() - std::min(room, bytes.size());
        };
        RunOptions mine = opts;
        mine.on_output = take;
        auto r = executors[i]->run(cmd, mine);
        if (r.ok()) {
          take(1, r->out);  // what the executor kept back from on_output, if anything
          take(2, r->err);
          r->out = std::move(kept[0]);
          r->err = std::move(kept[1]);
          r->out_hidden = hidden[0];
          r->err_hidden = hidden[1];
        }
        results[i].emplace(std::move(r));
      },
      style);
  std::vector<HostOutcome> outcomes;
  outcomes.reserve(executors.size());
  for (size_t i = 0; i < executors.size(); ++i) {
    outcomes.push_back(HostOutcome{executors[i]->host(), std::move(*results[i])});
  }
  return outcomes;
}

std::vector<std::optional<util::Error>> check_each(std::span<Executor* const> executors,
                                                   const util::OutputStyle& style) {
  std::vector<std::optional<util::Error>> problems(executors.size());
  for_each_host(
      executors, "check",
      [&](size_t i) {
        if (executors[i] == nullptr) return;
        if (auto st = executors[i]->check(); !st) problems[i] = st.error();
      },
      style);
  return problems;
}

util::Error hosts_refused(const std::vector<std::string>& problems, size_t total) {
  std::string text = fmt::format(
      "{} of {} host{} cannot be reached as given (found before connecting to any); nothing "
      "was run on any host:",
      problems.size(), total, total == 1 ? "" : "s");
  for (const auto& p : problems) text += "\n  " + p;
  return util::Error{util::ExitCode::kUsage, std::move(text)};
}

}  // namespace cc::remote
