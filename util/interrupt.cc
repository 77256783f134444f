#include "util/interrupt.h"

#include <algorithm>
#include <csignal>
#include <string>

namespace cc::util {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;  // the number of signals (saturating)
volatile std::sig_atomic_t g_signal = 0;       // the first of them

extern "C" void on_signal(int sig) {
  if (g_interrupted != 0) {
    std::signal(sig, SIG_DFL);  // the next one ends the process
  } else {
    g_signal = sig;
  }
  if (g_interrupted < 1000) g_interrupted = g_interrupted + 1;
}

}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking calls return EINTR and see the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

bool interrupted() {
  return g_interrupted != 0;
}

int interrupt_count() {
  return static_cast<int>(g_interrupted);
}

int interrupt_signal() {
  return g_interrupted != 0 ? static_cast<int>(g_signal) : 0;
}

std::string interruption() {
  return interrupt_signal() == SIGTERM ? "terminated (SIGTERM)" : "interrupted (Ctrl-C)";
}

Error interrupted_error(std::string_view rest) {
  return Error{ExitCode::kInterrupted, interruption() + std::string(rest)};
}

InterruptSetAside::InterruptSetAside() : count_(interrupt_count()), signal_(interrupt_signal()) {
  g_interrupted = 0;
  g_signal = 0;
}

InterruptSetAside::~InterruptSetAside() {
  // A signal that came during the cleanup counts beside those before it (the watcher's "second
  // Ctrl-C" and main()'s exit 130 read the count and the first signal).
  const int during = static_cast<int>(g_interrupted);
  if (count_ == 0) return;  // nothing was set aside: what came meanwhile stands as it is
  g_interrupted = std::min(count_ + during, 1000);
  g_signal = signal_;
}

void set_interrupted(bool value, int signal) {
  g_interrupted = value ? 1 : 0;
  g_signal = value ? signal : 0;
}

void set_interrupt_count(int count) {
  g_interrupted = count;
  if (count == 0) {
    g_signal = 0;
  } else if (g_signal == 0) {
    g_signal = SIGINT;
  }
}

}  // namespace cc::util
