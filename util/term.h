// Terminal decisions in one place: colour and progress lines appear only on a TTY, never when
// NO_COLOR is set (https://no-color.org) and never under --json.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace cc::util {

struct OutputStyle {
  bool color = false;     // ANSI colour on stdout
  bool progress = false;  // transient progress lines on stderr
  bool json = false;      // machine output on stdout; nothing decorative anywhere
};

/// Decides the style from --json, the NO_COLOR variable and whether stdout/stderr are TTYs.
OutputStyle detect_output_style(bool json);

/// Colour helpers: return `text` unchanged when colour is off.
std::string green(const OutputStyle& s, std::string_view text);
std::string red(const OutputStyle& s, std::string_view text);
std::string yellow(const OutputStyle& s, std::string_view text);
std::string bold(const OutputStyle& s, std::string_view text);

/// fflush(file), remembering why a flush of stdout failed (its first errno) for the check at
/// exit (cli/main.cc: every command's stdout is checked there, once, and a failure said with
/// its reason). Every flush of stdout before the exit goes through here: once a flush fails,
/// the reason is gone from errno and the buffer is dropped, so the last flush finds nothing.
bool flush_output(std::FILE* file);

/// The errno of the first failed flush_output(stdout), or 0.
int stdout_flush_error();

/// Clears O_NONBLOCK on `fd` (clusterctl's stdout and stderr, at start); true when it was set.
/// A descriptor inherited non-blocking (mlx#2144: a launcher's monitor and its local ranks
/// sharing one stdout, one of them setting it non-blocking; a terminal left so by a program
/// that crashed) fails a write to a slow reader with EAGAIN, and stdio then drops what it held:
/// output lost, and "Resource temporarily unavailable" said where nothing was wrong. The flag
/// is the open file's, shared with whoever else holds it; a blocking write is what every
/// program that did not ask for O_NONBLOCK expects.
bool make_blocking(int fd);

/// A single transient status line on stderr ("\r...\x1b[K"), drawn only when style.progress.
class ProgressLine {
 public:
  explicit ProgressLine(const OutputStyle& style) : enabled_(style.progress) {}
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { clear(); }
  void update(std::string_view text);
  void clear();

 private:
  bool enabled_;
  bool drawn_ = false;
};

}  // namespace cc::util
