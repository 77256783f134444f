// clusterctl's entry point: parses the command line, runs the chosen subcommand, and is the
// one place that turns errors into exit codes (README.md, "Exit codes").
#include <cstdlib>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/context.h"
#include "util/interrupt.h"

namespace {

constexpr const char* kVersion = CLUSTERCTL_VERSION;

int run(int argc, char** argv) {
  using cc::util::ExitCode;
  cc::cli::Context ctx;
  CLI::App app{"clusterctl: turn a few machines into one working RDMA cluster", "clusterctl"};
  app.set_version_flag("--version", std::string("clusterctl ") + kVersion);
  app.require_subcommand(1);
  app.failure_message(CLI::FailureMessage::help);  // a bad flag prints the error and the usage
  app.fallthrough();
  auto& g = ctx.global;
  if (const char* lab = std::getenv("CLUSTERCTL_LAB")) g.lab = lab;
  app.add_option("--lab", g.lab, "Use the emulated lab NAME (its hosts, ssh_config, known_hosts)")
      ->envname("CLUSTERCTL_LAB");
  app.add_option("-F,--ssh-config", g.ssh_config, "OpenSSH client config file")
      ->check(CLI::ExistingFile);
  app.add_option("--inventory", g.inventory, "Inventory file (YAML) naming the cluster's hosts")
      ->check(CLI::ExistingFile);
  app.add_option("--replay", g.replay,
                 "Answer every command from a recorded bundle directory instead of the hosts "
                 "(BUNDLE/HOST/COMMAND.out; see remote/replay_executor.h)")
      ->check(CLI::ExistingDirectory);
  app.add_flag("--accept-new-host-keys", g.accept_new_host_keys,
               "Trust and record SSH host keys not yet in known_hosts (changed keys are always "
               "refused)");
  app.add_flag("--json", g.json, "Machine-readable output on stdout; no colour, no progress");
  app.add_option("--connect-timeout", g.connect_timeout_s, "SSH connect timeout in seconds")
      ->check(CLI::PositiveNumber);

  cc::cli::add_exec_command(app, ctx);
  cc::cli::add_lab_command(app, ctx);  // cmd_lab.cc on Linux, cmd_lab_other.cc elsewhere

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    app.exit(e);
    return cc::util::to_int(ExitCode::kUsage);
  }
  ctx.style = cc::util::detect_output_style(g.json);
  cc::util::install_interrupt_handler();
  if (!ctx.action) return cc::util::to_int(ExitCode::kUsage);
  ExitCode rc = ctx.action();
  if (cc::util::interrupted()) rc = ExitCode::kInterrupted;
  return cc::util::to_int(rc);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "clusterctl: internal error: {}\n(this is a bug; please report it)\n",
               e.what());
    return 1;
  }
}
