// An in-memory Executor for unit tests of code that runs commands on hosts (fan_out, discovery,
// provisioning): answers are scripted per command line, every call is recorded.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "remote/executor.h"
#include "remote/quote.h"

namespace cc::remote {

class FakeExecutor final : public Executor {
 public:
  explicit FakeExecutor(std::string host) : host_(std::move(host)) {}

  /// The answer to the command whose shell_quote(argv) is `line` (for a shell Command: the
  /// script itself). Unscripted commands get exit status 127 and "command not found".
  void on(const std::string& line, CommandResult result) { answers_[line] = std::move(result); }
  /// Every run() fails with this error (e.g. an unreachable host).
  void fail_with(util::Error e) { failure_ = std::move(e); }
  /// check() fails with this error (a destination known to be wrong without connecting).
  void fail_check_with(util::Error e) { check_failure_ = std::move(e); }
  /// Every run() takes this long; a delay beyond RunOptions::timeout ends in a timed-out result
  /// after exactly the timeout.
  void set_delay(std::chrono::milliseconds d) { delay_ = d; }

  const std::string& host() const override { return host_; }
  util::Status check() const override {
    if (check_failure_) return *check_failure_;
    return {};
  }

  util::Result<CommandResult> run(const Command& cmd, const RunOptions& opts) override {
    std::string line = cmd.shell && !cmd.argv.empty() ? cmd.argv[0] : shell_quote(cmd.argv);
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(line);
    }
    if (delay_ > opts.timeout) {
      std::this_thread::sleep_for(opts.timeout);
      CommandResult r;
      r.timed_out = true;
      r.elapsed = opts.timeout;
      return r;
    }
    std::this_thread::sleep_for(delay_);
    if (failure_) return *failure_;
    auto it = answers_.find(line);
    if (it == answers_.end()) {
      CommandResult r;
      r.exit_status = 127;
      r.err = "fake: " + line + ": command not found\n";
      return r;
    }
    return it->second;
  }

  util::Status upload(const std::filesystem::path& local, const std::string& remote_path,
                      unsigned mode, std::chrono::milliseconds /*timeout*/) override {
    std::lock_guard<std::mutex> lock(mu_);
    uploads_.push_back({local, remote_path, mode});
    return {};
  }

  struct Upload {
    std::filesystem::path local;
    std::string remote_path;
    unsigned mode;
  };
  std::vector<std::string> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  std::vector<Upload> uploads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return uploads_;
  }

 private:
  std::string host_;
  std::map<std::string, CommandResult> answers_;
  std::optional<util::Error> failure_;
  std::optional<util::Error> check_failure_;
  std::chrono::milliseconds delay_{0};
  mutable std::mutex mu_;
  std::vector<std::string> calls_;
  std::vector<Upload> uploads_;
};

}  // namespace cc::remote
