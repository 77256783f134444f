// clusterctl's entry point: parses the command line, runs the chosen subcommand, and is the
// one place that turns errors into exit codes (README.md, "Exit codes").
#include <cerrno>
#include <cstdio>
#include <exception>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/context.h"
#include "cli/options.h"
#include "util/exit_code.h"
#include "util/interrupt.h"
#include "util/suggest.h"

namespace {

constexpr const char* kVersion = CLUSTERCTL_VERSION;

// The most specific subcommand on the command line (the app itself when there is none).
const CLI::App* deepest_subcommand(const CLI::App* app) {
  for (;;) {
    auto parsed = app->get_subcommands();
    if (parsed.empty()) return app;
    app = parsed.front();
  }
}

// "clusterctl lab up"
std::string full_name(const CLI::App* app) {
  std::string name = app->get_name();
  for (const CLI::App* p = app->get_parent(); p != nullptr; p = p->get_parent()) {
    name = p->get_name() + " " + name;
  }
  return name;
}

// The subcommand's "Usage: ..." line and where to read more.
std::string usage_hint(const CLI::App* app) {
  std::string help = app->help();
  std::string usage;
  if (auto at = help.find("Usage:"); at != std::string::npos) {
    usage = help.substr(at, help.find('\n', at) - at) + "\n";
    const std::string own = "Usage: " + app->get_name();  // CLI11 prints the last word only
    if (usage.rfind(own, 0) == 0) usage.replace(0, own.size(), "Usage: " + full_name(app));
  }
  return fmt::format("{}Run '{} --help' for the options.\n", usage, full_name(app));
}

// "did you mean ...?" lines for the unexpected words of a command line: options are matched
// against the options of the subcommand and its parents, other words against its subcommands.
std::string did_you_mean(const CLI::App* root, const CLI::App* sub) {
  std::vector<std::string> options, commands;
  for (const CLI::App* a = sub; a != nullptr; a = a->get_parent()) {
    for (const CLI::Option* o : a->get_options()) {
      for (const std::string& l : o->get_lnames()) options.push_back("--" + l);
      for (const std::string& s : o->get_snames()) options.push_back("-" + s);
    }
  }
  for (const CLI::App* c : sub->get_subcommands({})) commands.push_back(c->get_name());
  std::string out;
  for (const std::string& word : root->remaining(true)) {
    std::string typed = word.substr(0, word.find('='));
    const bool is_option = typed.size() > 1 && typed[0] == '-';
    const std::string best = cc::util::closest_match(typed, is_option ? options : commands);
    if (!best.empty()) out += fmt::format("{}: did you mean '{}'?\n", typed, best);
  }
  return out;
}

// A bad command line: one line naming the problem, the usage line, where to read more.
std::string usage_error(const CLI::App* app, const CLI::Error& e) {
  const CLI::App* sub = deepest_subcommand(app);
  const std::string hint =
      dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr ? did_you_mean(app, sub) : "";
  return fmt::format("{}: {}\n{}{}", full_name(sub), e.what(), hint, usage_hint(sub));
}

int run(int argc, char** argv) {
  using cc::util::ExitCode;
  cc::cli::Context ctx;
  CLI::App app{"clusterctl: turn a few machines into one working RDMA cluster", "clusterctl"};
  app.set_version_flag("--version", std::string("clusterctl ") + kVersion);
  app.failure_message(usage_error);
  app.fallthrough();
  auto& g = ctx.global;
  app.add_option("--lab", g.lab, "Use the emulated lab NAME (its hosts, ssh_config, known_hosts)")
      ->envname("CLUSTERCTL_LAB");
  app.add_option("-F,--ssh-config", g.ssh_config, "OpenSSH client config file")
      ->check(cc::cli::existing_path());
  app.add_option("--inventory", g.inventory, "Inventory file (YAML) naming the cluster's hosts")
      ->check(cc::cli::existing_path());
  app.add_option("--replay", g.replay,
                 "Answer every command from a recorded bundle directory instead of the hosts "
                 "(BUNDLE/HOST/COMMAND.out; see remote/replay_executor.h)")
      ->check(cc::cli::existing_path(cc::util::PathKind::kDirectory));
  app.add_flag("--accept-new-host-keys", g.accept_new_host_keys,
               "Trust and record SSH host keys not yet in known_hosts (changed keys are always "
               "refused)");
  app.add_flag("--json", g.json, "Machine-readable output on stdout; no colour, no progress");
  app.add_option("--connect-timeout", g.connect_timeout_s, "SSH connect timeout in seconds")
      ->capture_default_str()
      ->check(cc::cli::seconds_validator());

  cc::cli::add_exec_command(app, ctx);
  cc::cli::add_verify_mesh_command(app, ctx);
  cc::cli::add_discover_command(app, ctx);
  cc::cli::add_network_command(app, ctx);
  cc::cli::add_rdma_command(app, ctx);
  cc::cli::add_hostfile_command(app, ctx);
  cc::cli::add_health_command(app, ctx);
  cc::cli::add_launch_command(app, ctx);
  cc::cli::add_push_command(app, ctx);
  cc::cli::add_jobs_commands(app, ctx);
  cc::cli::add_lab_command(app, ctx);  // cmd_lab.cc on Linux, cmd_lab_other.cc elsewhere

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    app.exit(e);
    return cc::util::to_int(ExitCode::kUsage);
  }
  g.lab_given = g.lab;
  ctx.style = cc::util::detect_output_style(g.json);
  cc::util::install_interrupt_handler();
  if (!ctx.action) {  // `clusterctl` or `clusterctl lab` alone: say what is missing
    const CLI::App* sub = deepest_subcommand(&app);
    std::string names;
    for (const CLI::App* s : sub->get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + s->get_name();
    }
    fmt::print(stderr, "{}: a subcommand is required (one of: {})\n{}", full_name(sub), names,
               usage_hint(sub));
    return cc::util::to_int(ExitCode::kUsage);
  }
  ExitCode rc = ctx.action();
  if (cc::util::interrupted()) rc = ExitCode::kInterrupted;
  return cc::util::to_int(rc);
}

}  // namespace

int main(int argc, char** argv) {
  int rc = 0;
  try {
    rc = run(argc, argv);
  } catch (const std::exception& e) {
    // The reader of stdout went away (`clusterctl ... | head -1`): end quietly, as a program
    // that SIGPIPE ended would (README, "Exit codes").
    if (cc::util::is_broken_pipe(e)) return cc::util::kBrokenPipeStatus;
    fmt::print(stderr, "clusterctl: internal error: {}\n(this is a bug; please report it)\n",
               e.what());
    return 1;
  }
  // Output still buffered is written now; a reader gone by then ends it the same way.
  if (std::fflush(stdout) != 0 && errno == EPIPE) return cc::util::kBrokenPipeStatus;
  return rc;
}
