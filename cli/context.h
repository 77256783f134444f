// What every subcommand shares: the global options and the action chosen on the command line.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "util/exit_code.h"
#include "util/result.h"
#include "util/term.h"

namespace CLI {
class App;
}

namespace cc::cli {

/// Options accepted before (or after) any subcommand.
struct GlobalOptions {
  std::string lab;                    // --lab NAME, or $CLUSTERCTL_LAB
  std::string lab_given;              // `lab` as parsed: a command that puts another lab in
                                      // `lab` (a job's, a state's) leaves this (lab_choice)
  std::string ssh_config;             // -F FILE: OpenSSH client config (default ~/.ssh/config)
  std::string inventory;              // --inventory FILE
  std::string replay;                 // --replay BUNDLE: answer commands from recordings
  bool accept_new_host_keys = false;  // --accept-new-host-keys
  bool json = false;                  // --json
  double connect_timeout_s = 10;      // --connect-timeout SECONDS
};

struct Context {
  GlobalOptions global;
  util::OutputStyle style;  // filled in after parsing, before the action runs
  /// Set by the chosen subcommand's parse callback; run by main() after parsing succeeded.
  std::function<util::ExitCode()> action;
  /// Set by a command whose output is kept in files as well as written to stdout (`launch`:
  /// each rank's log): a failed write to stdout is said, and its exit code is kept.
  bool output_kept_elsewhere = false;
};

/// Prints "clusterctl COMMAND: MESSAGE" to stderr (the message in red where the style allows)
/// and returns the error's exit code: how a subcommand reports the error that ends it.
util::ExitCode report_error(const Context& ctx, std::string_view command, const util::Error& e);

/// Prints "clusterctl COMMAND: interrupted (Ctrl-C)" ("terminated (SIGTERM)" for a SIGTERM:
/// util::interruption), then "; WHAT" when given, to stderr, and returns
/// ExitCode::kInterrupted: the one line of a command that a signal ended, in place of a line per
/// host for each host its discovery had not reached yet ("interrupted while connecting").
util::ExitCode report_interrupted(std::string_view command, std::string_view what = "");

// One function per subcommand file (cmd_*.cc) adds that subcommand to the app.
void add_exec_command(CLI::App& app, Context& ctx);
void add_discover_command(CLI::App& app, Context& ctx);  // discover, collect
void add_network_command(CLI::App& app, Context& ctx);   // network plan|apply|verify
void add_verify_mesh_command(CLI::App& app, Context& ctx);
void add_rdma_command(CLI::App& app, Context& ctx);  // rdma status|enable
void add_hostfile_command(CLI::App& app, Context& ctx);  // hostfile --format F
void add_health_command(CLI::App& app, Context& ctx);    // health [--quick|--full]
void add_lab_command(CLI::App& app, Context& ctx);
void add_launch_command(CLI::App& app, Context& ctx);  // launch
void add_push_command(CLI::App& app, Context& ctx);    // push
void add_push_command(CLI::App& app, Context& ctx);    // push
void add_jobs_commands(CLI::App& app, Context& ctx);   // jobs, logs, stop

}  // namespace cc::cli
