// Ctrl-C handling. cli/main.cc installs the handler; long waits anywhere in the project poll
// interrupted() (at least every 100 ms) and give up with ExitCode::kInterrupted, so clusterctl
// always exits 130 promptly and runs its cleanup on SIGINT/SIGTERM (README, "Exit codes": 130
// for either; SIGHUP is not handled, so a closed terminal ends clusterctl as it ends any program).
#pragma once

#include <csignal>
#include <string>
#include <string_view>

#include "util/result.h"

namespace cc::util {

/// Installs SIGINT and SIGTERM handlers that set the flag and count the signals
/// (async-signal-safe), also over an inherited SIG_IGN (a background job of a script starts
/// with SIGINT ignored): what clusterctl does on either is cleanup that must not be skipped
/// (README, "Exit codes"), as mpirun does. main() calls it first, so a signal that comes while
/// clusterctl starts up is neither lost nor ends it before its cleanup can run. A second SIGINT or SIGTERM restores that signal's default action, so a
/// third Ctrl-C (or `kill`) ends clusterctl at once; what the second asks for (a job ending:
/// SIGKILL to its ranks now) the caller reads from interrupt_count().
void install_interrupt_handler();

/// True once SIGINT or SIGTERM arrived.
bool interrupted();

/// The first of those signals that arrived, SIGINT or SIGTERM (0: none).
int interrupt_signal();

/// How a message names what ended the run, from interrupt_signal(): "terminated (SIGTERM)" for
/// SIGTERM (`kill`, `clusterctl stop`, a service manager), else "interrupted (Ctrl-C)" (SIGINT).
/// Every "interrupted (Ctrl-C)" clusterctl prints comes from here, so a SIGTERM is never
/// reported as a Ctrl-C.
std::string interruption();

/// The error that ends a step Ctrl-C or SIGTERM cut short: ExitCode::kInterrupted (exit 130
/// for either), its message interruption() followed by `rest` as written (" while discovering
/// the hosts; nothing was started"), so every command says it in one way; `clusterctl CMD: `
/// goes before it where it is printed.
Error interrupted_error(std::string_view rest = "");

/// How many SIGINTs and SIGTERMs arrived (0: none).
int interrupt_count();

/// Sets a Ctrl-C or SIGTERM aside while a cleanup that it asked for runs to its end: the
/// executors refuse to connect or start a command while the flag is set, so the cleanup after
/// an interrupt (lab up's rollback, a job's removal of its job directories) would otherwise fail
/// on the very signal it answers. The flag is cleared for the object's life and set back when it
/// ends, with any signal that arrived meanwhile counted, so the caller still exits 130. Only for
/// a cleanup with its own time limits, run when no other thread waits on the flag.
class InterruptSetAside {
 public:
  InterruptSetAside();
  ~InterruptSetAside();
  InterruptSetAside(const InterruptSetAside&) = delete;
  InterruptSetAside& operator=(const InterruptSetAside&) = delete;
  /// Whether a signal had arrived before (what the cleanup answers).
  bool was_interrupted() const { return count_ > 0; }

 private:
  int count_;
  int signal_;
};

/// For tests: sets or clears the flag (a count of 1 or 0), as if `signal` had arrived.
void set_interrupted(bool value, int signal = SIGINT);

/// For tests: as if `count` SIGINTs or SIGTERMs had arrived.
void set_interrupt_count(int count);

}  // namespace cc::util
