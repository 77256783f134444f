#include "remote/local_executor.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>

#include <sys/wait.h>

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "remote/quote.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"

namespace cc::remote {
namespace {

using Clock = std::chrono::steady_clock;
using util::ExitCode;

// Every fork of this process happens under this lock, between the creation of its pipes and
// the point where they are marked close-on-exec, so no child inherits another run's pipes
// (that would hold the other run's stdout open until this child exits). POSIX has no pipe2().
std::mutex g_spawn_mutex;

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read;
  Fd write;
};

bool make_pipe(Pipe& p) {
  std::array<int, 2> fds{};
  if (::pipe(fds.data()) != 0) return false;
  p.read = Fd(fds[0]);
  p.write = Fd(fds[1]);
  for (int fd : fds) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  return true;
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(char* const* argv, bool use_path, int in, int out, int err,
                             int report) {
  ::setpgid(0, 0);
  const int targets[3] = {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO};
  const int sources[3] = {in, out, err};
  for (int i = 0; i < 3; ++i) {
    if (sources[i] == targets[i]) {
      ::fcntl(targets[i], F_SETFD, 0);  // dup2 onto itself would keep close-on-exec
    } else {
      ::dup2(sources[i], targets[i]);
    }
  }
  // clusterctl ignores SIGPIPE and handles SIGINT/SIGTERM; ignored signals survive exec.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGQUIT, SIGHUP}) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (use_path) {
    ::execvp(argv[0], argv);
  } else {
    ::execv(argv[0], argv);
  }
  int e = errno;
  ssize_t ignored = ::write(report, &e, sizeof e);
  (void)ignored;
  ::_exit(127);
}

// write() to a pipe whose reader is gone must give EPIPE, not kill clusterctl: a library cannot
// assume that its caller ignores SIGPIPE. The signal is blocked for this thread during the
// write and a SIGPIPE it raised is consumed (sigwait), all POSIX.
ssize_t write_without_sigpipe(int fd, const void* data, size_t n) {
  sigset_t pipe_only, old, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigpending(&pending);
  const bool already_pending = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  ssize_t w = ::write(fd, data, n);
  int saved = errno;
  if (w < 0 && saved == EPIPE && !already_pending) {
    sigpending(&pending);
    int sig = 0;
    if (sigismember(&pending, SIGPIPE) == 1) sigwait(&pipe_only, &sig);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return w;
}

int decode_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Reads what is available; false once the pipe is at EOF (or broken).
bool drain(Fd& fd, std::string& into) {
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    fd.reset();
    return false;
  }
}

util::Status validate(const Command& cmd) {
  if (cmd.argv.empty()) return util::error(ExitCode::kUsage, "empty command: nothing to run");
  if (cmd.shell && cmd.argv.size() != 1) {
    return util::error(
        ExitCode::kUsage,
        fmt::format("a shell command takes exactly one script, got {} arguments", cmd.argv.size()));
  }
  for (size_t i = 0; i < cmd.argv.size(); ++i) {
    if (cmd.argv[i].find('\0') != std::string::npos) {
      return util::error(ExitCode::kUsage,
                         fmt::format("argument {} of `{}` contains a NUL byte, which no program "
                                     "can receive",
                                     i, shell_quote({cmd.argv[0]})));
    }
  }
  return {};
}

}  // namespace

util::Result<CommandResult> LocalExecutor::run(const Command& cmd, const RunOptions& opts) {
  if (auto st = validate(cmd); !st) return st.error();
  const auto start = Clock::now();
  const auto deadline = start + opts.timeout;

  std::vector<std::string> args =
      cmd.shell ? std::vector<std::string>{"/bin/sh", "-c", cmd.argv[0]} : cmd.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  Pipe in, out, err, report;
  pid_t pid = -1;
  {
    std::lock_guard<std::mutex> lock(g_spawn_mutex);
    if (!make_pipe(in) || !make_pipe(out) || !make_pipe(err) || !make_pipe(report)) {
      return util::error(ExitCode::kUnreachable,
                         fmt::format("{}: cannot create pipes to run `{}`: {}", host_, args[0],
                                     std::strerror(errno)));
    }
    pid = ::fork();
    if (pid == 0) {
      exec_child(argv.data(), !cmd.shell, in.read.get(), out.write.get(), err.write.get(),
                 report.write.get());
    }
  }
  if (pid < 0) {
    return util::error(ExitCode::kUnreachable, fmt::format("{}: cannot start `{}`: {}", host_,
                                                           args[0], std::strerror(errno)));
  }
  ::setpgid(pid, pid);  // also here, so kill(-pid) works even before the child ran
  in.read.reset();
  out.write.reset();
  err.write.reset();
  report.write.reset();

  CommandResult result;
  // exec succeeded when the report pipe closes empty (close-on-exec); else it holds errno.
  int exec_errno = 0;
  ssize_t got = 0;
  do {
    got = ::read(report.read.get(), &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    bool missing = exec_errno == ENOENT || exec_errno == ENOTDIR;
    result.exit_status = missing ? 127 : 126;
    result.err = missing ? fmt::format("clusterctl: {}: command not found\n", args[0])
                         : fmt::format("clusterctl: {}: {}\n", args[0], std::strerror(exec_errno));
    if (opts.on_output) {
      opts.on_output(2, result.err);
      result.err.clear();
    }
    result.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
    return result;
  }

  set_nonblocking(out.read.get());
  set_nonblocking(err.read.get());
  set_nonblocking(in.write.get());
  std::string_view to_write;
  if (opts.stdin_data && !opts.stdin_data->empty()) {
    to_write = *opts.stdin_data;
  } else if (!opts.keep_stdin_open) {
    in.write.reset();
  }
  auto stream = [&](int fd) {
    std::string& pending = fd == 1 ? result.out : result.err;
    if (opts.on_output && !pending.empty()) {
      opts.on_output(fd, pending);
      pending.clear();
    }
  };

  const bool beating = opts.keep_stdin_open && opts.heartbeat.count() > 0;
  auto next_beat = Clock::now() + opts.heartbeat;
  bool exited = false;
  int status = 0;
  int idle_wait_ms = 1;  // when only the exit status is missing: 1, 2, 4 ... 32 ms
  for (;;) {
    if (!exited) {
      pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) exited = true;
    }
    if (exited && !out.read.open() && !err.read.open()) break;
    if (opts.cancelled && opts.cancelled()) {
      ::kill(-pid, SIGKILL);
      if (!exited) ::waitpid(pid, &status, 0);
      result.timed_out = true;
      break;
    }
    if (!opts.cancelled && util::interrupted()) {
      ::kill(-pid, SIGKILL);
      if (!exited) ::waitpid(pid, &status, 0);
      return util::error(ExitCode::kInterrupted,
                         fmt::format("{}: interrupted; `{}` was killed", host_, args[0]));
    }
    auto now = Clock::now();
    if (now >= deadline) {
      ::kill(-pid, SIGKILL);
      if (!exited) ::waitpid(pid, &status, 0);
      result.timed_out = true;
      break;
    }
    if (beating && to_write.empty() && in.write.open() && now >= next_beat) {
      to_write = opts.heartbeat_data;
      next_beat = now + opts.heartbeat;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    std::array<pollfd, 3> pfds{};
    nfds_t n = 0;
    // Which pollfd (if any) watches stdout, stderr, stdin.
    std::array<pollfd*, 3> slot{nullptr, nullptr, nullptr};
    auto watch = [&](size_t which, const Fd& fd, short events) {
      if (!fd.open()) return;
      pfds[n] = pollfd{fd.get(), events, 0};
      slot[which] = &pfds[n];
      ++n;
    };
    watch(0, out.read, POLLIN);
    watch(1, err.read, POLLIN);
    if (!to_write.empty()) watch(2, in.write, POLLOUT);
    int wait_ms = static_cast<int>(std::min<long long>(left, 100));
    if (!out.read.open() && !err.read.open()) {
      wait_ms = std::min(wait_ms, idle_wait_ms);
      idle_wait_ms = std::min(idle_wait_ms * 2, 32);
    }
    int rc = ::poll(pfds.data(), n, wait_ms);
    if (rc < 0 && errno != EINTR) {
      ::kill(-pid, SIGKILL);
      if (!exited) ::waitpid(pid, &status, 0);
      return util::error(ExitCode::kUnreachable, fmt::format("{}: waiting for `{}` failed: {}",
                                                             host_, args[0], std::strerror(errno)));
    }
    if (rc <= 0) continue;
    if (slot[0] != nullptr && slot[0]->revents != 0) drain(out.read, result.out);
    if (slot[1] != nullptr && slot[1]->revents != 0) drain(err.read, result.err);
    stream(1);
    stream(2);
    if (slot[2] != nullptr && slot[2]->revents != 0) {
      ssize_t w = write_without_sigpipe(in.write.get(), to_write.data(),
                                        std::min<size_t>(to_write.size(), 65536));
      if (w > 0) {
        to_write.remove_prefix(static_cast<size_t>(w));
        if (to_write.empty() && !opts.keep_stdin_open) in.write.reset();
      } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        in.write.reset();  // EPIPE: the command does not read its stdin; not an error
      }
    }
  }
  result.exit_status = result.timed_out ? -1 : decode_wait_status(status);
  result.signaled = !result.timed_out && WIFSIGNALED(status);
  result.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  return result;
}

util::Status LocalExecutor::upload(const std::filesystem::path& local,
                                   const std::string& remote_path, unsigned mode,
                                   std::chrono::milliseconds /*timeout*/) {
  auto content = util::read_file(local, kMaxUploadBytes);
  if (!content) return content.error();
  return util::write_file_atomic(remote_path, *content, mode);
}

}  // namespace cc::remote
