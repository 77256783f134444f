#include "util/term.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>

#include <fmt/color.h>
#include <fmt/format.h>

namespace cc::util {

OutputStyle detect_output_style(bool json) {
  OutputStyle s;
  s.json = json;
  const char* no_color = std::getenv("NO_COLOR");
  bool colour_allowed = !json && !(no_color != nullptr && no_color[0] != '\0');
  s.color = colour_allowed && ::isatty(STDOUT_FILENO) == 1;
  s.progress = colour_allowed && ::isatty(STDERR_FILENO) == 1;
  return s;
}

namespace {
std::atomic<int> first_stdout_error{0};  // flush_output's record (launch flushes from threads)
}  // namespace

bool flush_output(std::FILE* file) {
  errno = 0;
  if (std::fflush(file) == 0) return true;
  if (file == stdout) {
    int none = 0;
    first_stdout_error.compare_exchange_strong(none, errno != 0 ? errno : EIO);
  }
  return false;
}

int stdout_flush_error() {
  return first_stdout_error.load();
}

bool make_blocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_NONBLOCK) == 0) return false;
  return ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0;
}

namespace {
std::string paint(const OutputStyle& s, fmt::text_style ts, std::string_view text) {
  if (!s.color) return std::string(text);
  return fmt::format(ts, "{}", text);
}
}  // namespace

std::string green(const OutputStyle& s, std::string_view t) {
  return paint(s, fmt::fg(fmt::terminal_color::green), t);
}
std::string red(const OutputStyle& s, std::string_view t) {
  return paint(s, fmt::fg(fmt::terminal_color::red) | fmt::emphasis::bold, t);
}
std::string yellow(const OutputStyle& s, std::string_view t) {
  return paint(s, fmt::fg(fmt::terminal_color::yellow), t);
}
std::string bold(const OutputStyle& s, std::string_view t) {
  return paint(s, fmt::emphasis::bold, t);
}

void ProgressLine::update(std::string_view text) {
  if (!enabled_) return;
  fmt::print(stderr, "\r{}\x1b[K", text);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::clear() {
  if (!enabled_ || !drawn_) return;
  fmt::print(stderr, "\r\x1b[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace cc::util
