// How libclustercomm's failures and Python's signals cross the binding.
//
// Errors: a cc::comm::Error becomes the clustercomm.Error subclass of its kind (_errors.py),
// carrying the C++ message (without the "clustercomm: " prefix: the class says it) and
// .ranks. Interrupts: every blocking call runs with the GIL released inside a CallScope; comm
// asks Config::interrupted about every 20 ms while it waits (interrupt_check), which takes
// the GIL for a moment and runs Python's signal handlers (PyErr_CheckSignals). When one
// raises (Ctrl-C: KeyboardInterrupt), the call gives up (kInterrupted: the communicator is
// broken, its peers told) and that very exception is raised in the caller.
#pragma once

#include <nanobind/nanobind.h>

#include "comm/error.h"

namespace ccpy {

namespace nb = nanobind;

/// Raises the clustercomm.Error subclass for `e` (always throws nb::python_error).
[[noreturn]] void raise_comm_error(const cc::comm::Error& e);

/// The Config::interrupted of every communicator made here. Called by comm with the GIL
/// released; true when a signal handler raised during the current CallScope.
bool interrupt_check();

/// One blocking call: set up while holding the GIL, before it is released. Signals are only
/// checked on Python's main thread (the only one that runs signal handlers).
class CallScope {
 public:
  CallScope();
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

  /// After the call threw (GIL held again): re-raises the exception a signal handler raised,
  /// if one did, else raises `e` as a clustercomm.Error.
  [[noreturn]] void rethrow(const cc::comm::Error& e);

  bool check_signals = false;
  PyObject* pending = nullptr;  // the exception a signal handler raised (owned)

 private:
  CallScope* outer_;
};

/// Remembers which thread is Python's main thread (call once, at import, with the GIL).
void init_main_thread();

}  // namespace ccpy
