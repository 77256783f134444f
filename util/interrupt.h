// Ctrl-C handling. cli/main.cc installs the handler; long waits anywhere in the project poll
// interrupted() (at least every 100 ms) and give up with ExitCode::kInterrupted, so clusterctl
// always exits 130 promptly and runs its cleanup on SIGINT/SIGTERM.
#pragma once

namespace cc::util {

/// Installs SIGINT and SIGTERM handlers that set the flag (async-signal-safe). A second
/// SIGINT restores the default action, so a third Ctrl-C kills at once.
void install_interrupt_handler();

/// True once SIGINT or SIGTERM arrived.
bool interrupted();

/// For tests: sets or clears the flag.
void set_interrupted(bool value);

}  // namespace cc::util
