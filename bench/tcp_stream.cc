// The limit: one raw TCP stream between two local processes (127.0.0.1), the path every
// byte of the loopback benchmarks takes. Prints "stream_GBps X". -s seconds (default 1).
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/transport/tcp/socket.h"

using namespace cc::comm;

int main(int argc, char** argv) {
  const double seconds = argc > 2 && std::string(argv[1]) == "-s" ? std::atof(argv[2]) : 1.0;
  tcp::Fd listener = tcp::listen_on(tcp::resolve("127.0.0.1:0"));
  const tcp::Address addr = tcp::local_address(listener.get());
  const pid_t child = fork();
  const Deadline deadline = Clock::now() + std::chrono::seconds(30);
  std::vector<char> buf(size_t{4} << 20, 'x');
  if (child == 0) {  // sender
    tcp::Fd fd = tcp::connect_to(addr, nullptr, deadline, "receiver");
    const auto end = Clock::now() + std::chrono::duration<double>(seconds + 0.2);
    try {
      while (Clock::now() < end) tcp::write_all(fd.get(), buf.data(), buf.size(), deadline, "r");
    } catch (...) {
    }
    _exit(0);
  }
  tcp::Fd conn;
  while (!conn.valid()) {
    const int fd = ::accept(listener.get(), nullptr, nullptr);
    if (fd >= 0) conn = tcp::Fd(fd);
  }
  size_t total = 0;
  const auto t0 = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - t0).count() < seconds) {
    const ssize_t r = ::recv(conn.get(), buf.data(), buf.size(), 0);
    if (r > 0) total += static_cast<size_t>(r);
    if (r == 0) break;
  }
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  conn.reset();
  waitpid(child, nullptr, 0);
  std::printf("stream_GBps %.3f\n", static_cast<double>(total) / dt / 1e9);
  return 0;
}
