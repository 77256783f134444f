#include "remote/fan_out.h"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include <fmt/format.h>

namespace cc::remote {

std::string fan_out_progress(size_t done, size_t total, const std::vector<std::string>& waiting) {
  constexpr size_t kNamesShown = 4;
  std::string text = fmt::format("exec: {}/{} done", done, total);
  if (waiting.empty()) return text;
  text += ", waiting for ";
  for (size_t i = 0; i < waiting.size() && i < kNamesShown; ++i) {
    if (i > 0) text += ", ";
    text += waiting[i];
  }
  if (waiting.size() > kNamesShown) text += fmt::format(" +{} more", waiting.size() - kNamesShown);
  return text;
}

std::vector<HostOutcome> fan_out(std::span<Executor* const> executors, const Command& cmd,
                                 const RunOptions& opts, const util::OutputStyle& style) {
  const size_t n = executors.size();
  std::vector<std::optional<util::Result<CommandResult>>> results(n);
  std::vector<std::exception_ptr> failures(n);
  std::mutex mu;
  std::condition_variable cv;
  size_t done = 0;

  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto work = [&, i] {
      std::optional<util::Result<CommandResult>> r;
      std::exception_ptr failure;
      try {
        r.emplace(executors[i]->run(cmd, opts));
      } catch (...) {
        failure = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu);
      results[i] = std::move(r);
      failures[i] = failure;
      ++done;
      cv.notify_all();
    };
    try {
      threads.emplace_back(work);
    } catch (const std::system_error& e) {  // out of threads: this host fails, others go on
      std::lock_guard<std::mutex> lock(mu);
      results[i].emplace(util::error(util::ExitCode::kUnreachable,
                                     fmt::format("{}: cannot start a thread to reach it: {}",
                                                 executors[i]->host(), e.what())));
      ++done;
    }
  }

  {
    util::ProgressLine progress(style);
    std::unique_lock<std::mutex> lock(mu);
    std::string shown;
    while (done < n) {
      std::vector<std::string> waiting;
      for (size_t i = 0; i < n; ++i) {
        if (!results[i] && !failures[i]) waiting.push_back(executors[i]->host());
      }
      std::string text = fan_out_progress(done, n, waiting);
      if (text != shown) progress.update(text);  // redraw only what changed
      shown = std::move(text);
      cv.wait_for(lock, std::chrono::milliseconds(200));
    }
  }
  for (auto& t : threads) t.join();
  for (auto& f : failures) {
    if (f) std::rethrow_exception(f);
  }

  std::vector<HostOutcome> outcomes;
  outcomes.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    outcomes.push_back(HostOutcome{executors[i]->host(), std::move(*results[i])});
  }
  return outcomes;
}

}  // namespace cc::remote
