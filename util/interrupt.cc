#include "util/interrupt.h"

#include <csignal>

namespace cc::util {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;  // the number of signals (saturating)

extern "C" void on_signal(int sig) {
  if (g_interrupted != 0) std::signal(sig, SIG_DFL);  // the next one ends the process
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

void set_interrupted(bool value) {
  g_interrupted = value ? 1 : 0;
}

void set_interrupt_count(int count) {
  g_interrupted = count;
}

}  // namespace cc::util
