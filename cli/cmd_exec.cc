// `clusterctl exec`: run one command on many hosts at once, output grouped by host.
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (moved there in fmt 11)
#include <CLI/CLI.hpp>

#include "cli/context.h"
#include "cli/hosts.h"
#include "cli/options.h"
#include "remote/fan_out.h"
#include "remote/outcomes.h"

namespace cc::cli {
namespace {

// How much of each host's stdout, and of its stderr, exec keeps to group and print: the first
// 1 MiB (64 hosts: at most 128 MiB held). The rest is counted and said to be left out, never held
// (a `cat` of a big file, or a command that loops, on every host at once).
constexpr std::size_t kExecKeep = 1 << 20;

// The line after a host's cut output.
std::string hidden_line(std::size_t hidden, const char* stream) {
  return fmt::format(
      "[clusterctl: {} more bytes of {} not shown: exec keeps the first {} bytes of each host's; "
      "for all of it, redirect it to a file on the host]",
      hidden, stream, kExecKeep);
}

struct ExecOptions {
  std::string hosts;
  double timeout_s = 30;
  bool shell = false;
  std::vector<std::string> command;
};

// Prints `text` as a block: a rule, the label, a rule, the text (with a final newline).
void print_block(std::FILE* f, const util::OutputStyle& style, const std::string& label,
                 const std::string& text) {
  std::string rule(std::max<size_t>(15, label.size()), '-');
  fmt::print(f, "{}\n{}\n{}\n{}", rule, util::bold(style, label), rule, text);
  if (!text.empty() && text.back() != '\n') fmt::print(f, "\n");
}

util::ExitCode run_exec(const Context& ctx, const ExecOptions& opts) {
  const util::OutputStyle& style = ctx.style;
  remote::Command cmd;
  if (opts.shell) {
    // One script, as ssh joins its arguments: `--shell -- 'ls | wc -l'` or `-- ls '|' wc -l`.
    cmd.argv = {fmt::format("{}", fmt::join(opts.command, " "))};
    cmd.shell = true;
  } else {
    cmd.argv = opts.command;
  }
  remote::RunOptions run;
  run.timeout =
      std::chrono::milliseconds(static_cast<long long>(std::llround(opts.timeout_s * 1000.0)));

  // Every host's destination is checked before the command runs on any (README, "Exit codes":
  // 2 means nothing was changed).
  auto executors = make_checked_executors(ctx.global, opts.hosts, style);
  if (!executors) {
    fmt::print(stderr, "clusterctl exec: {}\n", util::red(style, executors.error().message));
    return executors.error().code;
  }
  std::vector<remote::Executor*> ptrs;
  for (auto& e : *executors) ptrs.push_back(e.get());
  std::vector<remote::HostOutcome> outcomes = remote::fan_out(ptrs, cmd, run, style, kExecKeep);

  if (style.json) {
    fmt::print("{}\n", remote::outcomes_json(outcomes));
  } else {
    util::flush_output(stdout);
    for (const auto& g : remote::group_outputs(outcomes, false)) {
      print_block(stdout, style, remote::hosts_label(g.hosts), g.text);
      if (g.hidden > 0) fmt::print(stdout, "{}\n", hidden_line(g.hidden, "stdout"));
    }
    util::flush_output(stdout);
    // Remote stderr, grouped the same way, on our stderr: "h1,h3: line".
    for (const auto& g : remote::group_outputs(outcomes, true)) {
      std::string prefix = fmt::format("{}: ", fmt::join(g.hosts, ","));
      size_t start = 0;
      while (start < g.text.size()) {
        size_t end = g.text.find('\n', start);
        if (end == std::string::npos) end = g.text.size();
        fmt::print(stderr, "{}{}\n", util::yellow(style, prefix),
                   std::string_view(g.text).substr(start, end - start));
        start = end + 1;
      }
      if (g.hidden > 0) {
        fmt::print(stderr, "{}{}\n", util::yellow(style, prefix), hidden_line(g.hidden, "stderr"));
      }
    }
    std::vector<std::string> problems = remote::problem_lines(outcomes, opts.timeout_s);
    for (const auto& line : problems) fmt::print(stderr, "{}\n", util::red(style, line));
    if (!problems.empty()) fmt::print(stderr, "{}\n", remote::summary_line(outcomes));
  }
  // Pass-through exit status (README, "Exit codes"): the enum holds any int.
  return static_cast<util::ExitCode>(remote::exec_exit_status(outcomes));
}

}  // namespace

void add_exec_command(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<ExecOptions>();
  CLI::App* sub = app.add_subcommand(
      "exec", "Run a command on hosts over SSH, all at once; identical outputs are grouped");
  sub->add_option("--hosts", opts->hosts,
                  "Hosts to run on: h1,h2 (inventory names or SSH destinations; 'local' is this "
                  "machine) or 'all' (needs --lab or --inventory)")
      ->required();
  sub->add_option("--timeout", opts->timeout_s,
                  "Seconds the command may run on each host; then it is killed (exit 124)")
      ->capture_default_str()
      ->check(seconds_validator());
  sub->add_flag("--shell", opts->shell,
                "Run the command as a POSIX sh script on each host (pipes, $VARS, globs "
                "are interpreted there); without it, arguments are passed exactly as given");
  sub->add_option("command", opts->command, "The command and its arguments, after --")->required();
  sub->footer(
      "Examples:\n"
      "  clusterctl --lab default exec --hosts all -- uname -n\n"
      "  clusterctl --inventory cluster.yaml exec --hosts h1,h3 --timeout 5 -- ibv_devices\n"
      "  clusterctl exec --hosts studio1,studio2 --shell -- 'ls /dev | wc -l'\n"
      "Exit status: the highest exit status of the command across hosts (124: timed out), or\n"
      "3 when a host could not be reached. --json prints a JSON array, one object per host.");
  sub->callback([&ctx, opts] { ctx.action = [&ctx, opts] { return run_exec(ctx, *opts); }; });
}

}  // namespace cc::cli
