// clusterctl's entry point: parses the command line, runs the chosen subcommand, and is the
// one place that turns errors into exit codes (README.md, "Exit codes").
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (moved there in fmt 11)
#include <CLI/CLI.hpp>

#include "cli/context.h"
#include "cli/options.h"
#include "remote/quote.h"
#include "util/exit_code.h"
#include "util/interrupt.h"
#include "util/suggest.h"
#include "util/term.h"

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

// The subcommand's positional that takes a command to run on the hosts (exec's `command`, given
// after `--`), or nullptr.
const CLI::Option* remote_command(const CLI::App* sub) {
  const CLI::Option* o = sub->get_option_no_throw("command");
  return o != nullptr && o->get_positional() ? o : nullptr;
}

// The words CLI11 took for no option or operand, in command-line order (`args`: argv after the
// program's name), without those after the first `--`: that is where a remote command's own
// flags are (`exec --hosts all --timout 5 -- uname -n`: once "5" filled exec's command, CLI11
// listed "uname -n" as unexpected too), and they are never clusterctl's.
std::vector<std::string> unexpected_words(const CLI::App* root,
                                          const std::vector<std::string>& args) {
  std::vector<std::string> left = root->remaining(true);
  left.erase(std::remove(left.begin(), left.end(), "--"), left.end());
  const auto mark = std::find(args.begin(), args.end(), "--");
  if (mark != args.end()) {
    // The words after `--` are among the unexpected ones all together, or not at all (they
    // filled the command).
    std::multiset<std::string> pool(left.begin(), left.end());
    bool all_there = true;
    for (auto it = mark + 1; it != args.end() && all_there; ++it) {
      const auto found = pool.find(*it);
      if (found == pool.end()) {
        all_there = false;
      } else {
        pool.erase(found);
      }
    }
    if (all_there) left.assign(pool.begin(), pool.end());
  }
  // In command-line order (CLI11 collects them parent first).
  std::vector<std::string> ordered;
  for (auto it = args.begin(); it != mark; ++it) {
    const auto found = std::find(left.begin(), left.end(), *it);
    if (found == left.end()) continue;
    ordered.push_back(*it);
    left.erase(found);
  }
  ordered.insert(ordered.end(), left.begin(), left.end());
  return ordered;
}

// The command line again, with the remote command (`words` among what follows the subcommand's
// name) moved after `--`: "clusterctl exec --hosts h1 -- uname -n".
std::string with_marker(const CLI::App* sub, const std::vector<std::string>& args,
                        std::vector<std::string> words) {
  std::vector<std::string> before = {"clusterctl"}, after;
  auto it = std::find(args.begin(), args.end(), sub->get_name());
  before.insert(before.end(), args.begin(), it == args.end() ? it : it + 1);
  for (it = it == args.end() ? it : it + 1; it != args.end(); ++it) {
    const auto w = std::find(words.begin(), words.end(), *it);
    if (w == words.end()) {
      before.push_back(*it);
    } else {
      after.push_back(*it);
      words.erase(w);
    }
  }
  before.push_back("--");
  before.insert(before.end(), after.begin(), after.end());
  return cc::remote::shell_quote(before);
}

// "did you mean ...?" lines for the unexpected words of a command line: options are matched
// against the options of the subcommand and its parents, other words against its subcommands.
// For a subcommand that runs a command on hosts (exec) given without `--`, a word that is not
// close to one of its options is the remote command's: the line says to put the command after
// `--` (`-n` would otherwise get "did you mean '-h'?").
std::string did_you_mean(const CLI::App* sub, const std::vector<std::string>& args,
                         const std::vector<std::string>& unexpected) {
  std::vector<std::string> options, commands;
  for (const CLI::App* a = sub; a != nullptr; a = a->get_parent()) {
    for (const CLI::Option* o : a->get_options()) {
      for (const std::string& l : o->get_lnames()) options.push_back("--" + l);
      for (const std::string& s : o->get_snames()) options.push_back("-" + s);
    }
  }
  for (const CLI::App* c : sub->get_subcommands({})) commands.push_back(c->get_name());
  const CLI::Option* command = remote_command(sub);
  const bool no_marker = std::find(args.begin(), args.end(), "--") == args.end();
  std::string out;
  std::vector<std::string> theirs;  // words of a remote command given without `--`
  for (const std::string& word : unexpected) {
    std::string typed = word.substr(0, word.find('='));
    const bool is_option = typed.size() > 1 && typed[0] == '-';
    const std::string best = cc::util::closest_match(typed, is_option ? options : commands);
    const bool long_option = typed.starts_with("--");
    if (command != nullptr && no_marker && (!long_option || best.empty())) {
      theirs.push_back(word);
    } else if (!best.empty()) {
      out += fmt::format("{}: did you mean '{}'?\n", typed, best);
    }
  }
  if (!theirs.empty()) {
    std::vector<std::string> words = command->results();
    words.insert(words.end(), theirs.begin(), theirs.end());
    out += fmt::format(
        "{}: not {} of clusterctl {}; to pass {} to the command, put the command after "
        "`--`: {}\n",
        fmt::join(theirs, " "), theirs.size() == 1 ? "an option" : "options", sub->get_name(),
        theirs.size() == 1 ? "it" : "them", with_marker(sub, args, words));
  }
  return out;
}

// A bad command line: one line naming the problem, the usage line, where to read more. Every
// kind of error gets the "did you mean" of the unexpected words (`exec --host h1` is refused
// for the missing --hosts, and --host is named as its typo).
std::string usage_error(const CLI::App* app, const CLI::Error& e,
                        const std::vector<std::string>& args) {
  const CLI::App* sub = deepest_subcommand(app);
  const std::vector<std::string> unexpected = unexpected_words(app, args);
  std::string what = e.what();
  const CLI::Option* command = remote_command(sub);
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && !unexpected.empty()) {
    what = fmt::format("The following argument{} not expected: {}",
                       unexpected.size() == 1 ? " was" : "s were", fmt::join(unexpected, " "));
  } else if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && command != nullptr) {
    // Only words after `--` were left over: the command had begun before it.
    what = fmt::format("the command began before `--`, at '{}': give all of it after `--`",
                       command->results().empty() ? std::string() : command->results().front());
  }
  return fmt::format("{}: {}\n{}{}", full_name(sub), what, did_you_mean(sub, args, unexpected),
                     usage_hint(sub));
}

// Where standard output stands (its file offset), or -1 for a pipe or a terminal: two equal
// positions mean that nothing reached it in between.
off_t stdout_position() {
  return ::lseek(STDOUT_FILENO, 0, SEEK_CUR);
}

// What the command wrote to standard output is written and flushed, or the one line that says
// it was not and the exit code for that: 2, as for an output named with -o that cannot be
// written (README, "Exit codes"). `error` is the failed write's errno when it is known (0 when
// not); `start` is stdout_position() before the command ran. A reader gone away (EPIPE) is
// 141, quietly, as before. A command whose output is kept elsewhere (`launch`: each rank's log)
// keeps its own exit code, as does an interrupted one (130).
int finish_stdout(bool kept_elsewhere, const std::string& command, int rc, int error,
                  off_t start) {
  const bool flushed = cc::util::flush_output(stdout);
  if (error == 0) error = cc::util::stdout_flush_error();
  if (flushed && std::ferror(stdout) == 0) return rc;
  if (error == EPIPE) return cc::util::kBrokenPipeStatus;
  const off_t end = stdout_position();
  const char* what = start >= 0 && end == start ? "nothing was written"
                     : start >= 0               ? "the output is incomplete"
                                                : "the output may be incomplete";
  const std::string reason =
      error != 0 ? ": " + std::error_code(error, std::generic_category()).message() : "";
  fmt::print(stderr, "{}: cannot write to standard output{} ({}){}\n", command, reason, what,
             kept_elsewhere ? "; each rank's output is kept: `clusterctl logs JOB`" : "");
  using cc::util::ExitCode;
  if (kept_elsewhere || rc == cc::util::to_int(ExitCode::kInterrupted)) return rc;
  return cc::util::to_int(ExitCode::kUsage);
}

// Runs the command line; `command` is set to the subcommand's full name once it is known.
int run(int argc, char** argv, cc::cli::Context& ctx, std::string& command) {
  using cc::util::ExitCode;
  CLI::App app{"clusterctl: turn a few machines into one working RDMA cluster", "clusterctl"};
  app.set_version_flag("--version", std::string("clusterctl ") + kVersion);
  const std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  app.failure_message([&args](const CLI::App* a, const CLI::Error& e) {
    return usage_error(a, e, args);
  });
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
  command = full_name(deepest_subcommand(&app));
  ExitCode rc = ctx.action();
  if (cc::util::interrupted()) rc = ExitCode::kInterrupted;
  return cc::util::to_int(rc);
}

}  // namespace

int main(int argc, char** argv) {
  // First: a Ctrl-C or SIGTERM while the command line is read is seen by the command (which
  // exits 130 after its cleanup), not lost to an inherited SIG_IGN nor fatal before it.
  cc::util::install_interrupt_handler();
  // Output written whole to a slow reader, not dropped at its first EAGAIN (util/term.h).
  cc::util::make_blocking(STDOUT_FILENO);
  cc::util::make_blocking(STDERR_FILENO);
  cc::cli::Context ctx;
  std::string command = "clusterctl";
  const off_t start = stdout_position();
  int rc = 0;
  int write_error = 0;
  try {
    rc = run(argc, argv, ctx, command);
  } catch (const std::exception& e) {
    // The reader of stdout went away (`clusterctl ... | head -1`): end quietly, as a program
    // that SIGPIPE ended would (README, "Exit codes").
    if (cc::util::is_broken_pipe(e)) return cc::util::kBrokenPipeStatus;
    const auto* sys = dynamic_cast<const std::system_error*>(&e);
    if (sys == nullptr || std::ferror(stdout) == 0) {
      fmt::print(stderr, "clusterctl: internal error: {}\n(this is a bug; please report it)\n",
                 e.what());
      return 1;
    }
    // A write to stdout failed (fmt throws "cannot write to file: No space left on device"):
    // said below, as one that failed at the last flush is.
    write_error = sys->code().value();
  }
  // Output still buffered is written now; every command's output is checked here, once.
  return finish_stdout(ctx.output_kept_elsewhere, command, rc, write_error, start);
}
