// The signal handler records which signal came first, so messages name it: a SIGTERM was
// reported as "interrupted (Ctrl-C)".
#include "util/interrupt.h"

#include <csignal>

#include <doctest/doctest.h>

namespace {

// Restores the actions the handler replaces when it goes.
struct SavedActions {
  struct sigaction on_int = {};
  struct sigaction on_term = {};
  struct sigaction on_pipe = {};
  SavedActions() {
    sigaction(SIGINT, nullptr, &on_int);
    sigaction(SIGTERM, nullptr, &on_term);
    sigaction(SIGPIPE, nullptr, &on_pipe);
  }
  ~SavedActions() {
    cc::util::set_interrupted(false);
    sigaction(SIGINT, &on_int, nullptr);
    sigaction(SIGTERM, &on_term, nullptr);
    sigaction(SIGPIPE, &on_pipe, nullptr);
  }
};

}  // namespace

TEST_CASE("interrupt: the first signal that came is the one messages name") {
  SavedActions saved;
  cc::util::set_interrupted(false);
  CHECK(cc::util::interrupt_signal() == 0);
  cc::util::install_interrupt_handler();
  REQUIRE(std::raise(SIGTERM) == 0);
  CHECK(cc::util::interrupted());
  CHECK(cc::util::interrupt_signal() == SIGTERM);
  CHECK(cc::util::interruption() == "terminated (SIGTERM)");
  // A Ctrl-C after it counts, but the run was ended by the SIGTERM.
  REQUIRE(std::raise(SIGINT) == 0);
  CHECK(cc::util::interrupt_count() == 2);
  CHECK(cc::util::interrupt_signal() == SIGTERM);

  cc::util::set_interrupted(false);
  cc::util::install_interrupt_handler();  // the second signal restored SIGINT's default action
  REQUIRE(std::raise(SIGINT) == 0);
  CHECK(cc::util::interrupt_signal() == SIGINT);
  CHECK(cc::util::interruption() == "interrupted (Ctrl-C)");
  cc::util::set_interrupted(false);
  CHECK(cc::util::interrupt_signal() == 0);
}

TEST_CASE("interrupt: a SIGINT ignored when clusterctl started is caught all the same") {
  // A background job of a non-interactive shell starts with SIGINT ignored; clusterctl's
  // cleanup on Ctrl-C (a job's ranks ended, a lab rolled back) must still run.
  SavedActions saved;
  cc::util::set_interrupted(false);
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  cc::util::install_interrupt_handler();
  struct sigaction now = {};
  sigaction(SIGINT, nullptr, &now);
  const bool replaced = now.sa_handler != SIG_IGN;
  CHECK(replaced);
  REQUIRE(std::raise(SIGINT) == 0);
  CHECK(cc::util::interrupted());
  CHECK(cc::util::interrupt_signal() == SIGINT);
  cc::util::set_interrupted(false);
  REQUIRE(std::raise(SIGTERM) == 0);
  CHECK(cc::util::interrupt_signal() == SIGTERM);
  cc::util::set_interrupted(false);
}

TEST_CASE("interrupt: interrupted_error is exit 130 naming the signal that came") {
  cc::util::set_interrupted(true, SIGTERM);
  auto e = cc::util::interrupted_error(" while discovering the hosts; nothing was started");
  CHECK(e.code == cc::util::ExitCode::kInterrupted);
  CHECK(e.message == "terminated (SIGTERM) while discovering the hosts; nothing was started");
  cc::util::set_interrupted(true, SIGINT);
  CHECK(cc::util::interrupted_error().message == "interrupted (Ctrl-C)");
  cc::util::set_interrupted(false);
}

TEST_CASE("interrupt: a cleanup sets the signal aside and it is set back, with any that came") {
  // lab up's rollback and a job's removal of its job directories run after the signal,
  // through executors that refuse to connect while it is set.
  SavedActions saved;
  cc::util::install_interrupt_handler();
  cc::util::set_interrupted(true, SIGTERM);
  {
    const cc::util::InterruptSetAside aside;
    CHECK(aside.was_interrupted());
    CHECK_FALSE(cc::util::interrupted());
  }
  CHECK(cc::util::interrupt_count() == 1);
  CHECK(cc::util::interrupt_signal() == SIGTERM);  // main() exits 130, naming it
  {
    const cc::util::InterruptSetAside aside;
    REQUIRE(std::raise(SIGINT) == 0);  // one more during the cleanup: counted, not lost
    CHECK(cc::util::interrupted());
  }
  CHECK(cc::util::interrupt_count() == 2);
  CHECK(cc::util::interrupt_signal() == SIGTERM);
  // Nothing set aside: what comes meanwhile stands.
  cc::util::set_interrupted(false);
  {
    const cc::util::InterruptSetAside aside;
    CHECK_FALSE(aside.was_interrupted());
    cc::util::set_interrupted(true, SIGINT);
  }
  CHECK(cc::util::interrupt_signal() == SIGINT);
  cc::util::set_interrupted(false);
}
