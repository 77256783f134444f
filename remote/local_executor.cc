#include "remote/local_executor.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "remote/quote.h"
#include "remote/upload_temp.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"
#include "util/process.h"

extern char** environ;  // POSIX: declared by no header (glibc: unistd.h with _GNU_SOURCE)

namespace cc::remote {
namespace {

using Clock = std::chrono::steady_clock;
using util::ExitCode;

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
  int fds[2] = {-1, -1};
  if (!util::cloexec_pipe(fds)) return false;
  p.read = Fd(fds[0]);
  p.write = Fd(fds[1]);
  return true;
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Starts argv[0] (through PATH when `use_path`) as the leader of a new process group, with
// `in`, `out`, `err` as its stdin, stdout and stderr, the signals clusterctl ignores or handles
// set back to their defaults (an ignored one would survive exec) and none blocked. posix_spawn,
// as ninja does: no code of ours runs in the child.
struct Spawned {
  pid_t pid = -1;
  int error = 0;  // the error number when no process started
};
Spawned spawn(char* const* argv, char* const* envp, bool use_path, int in, int out, int err) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  if (int e = ::posix_spawn_file_actions_init(&actions); e != 0) return {-1, e};
  if (int e = ::posix_spawnattr_init(&attr); e != 0) {
    ::posix_spawn_file_actions_destroy(&actions);
    return {-1, e};
  }
  sigset_t defaults, none;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGQUIT, SIGHUP}) sigaddset(&defaults, sig);
  sigemptyset(&none);
  int flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
#ifdef POSIX_SPAWN_CLOEXEC_DEFAULT
  flags |= POSIX_SPAWN_CLOEXEC_DEFAULT;  // macOS: the child gets only the three below
#endif
  int e = ::posix_spawnattr_setflags(&attr, static_cast<short>(flags));
  if (e == 0) e = ::posix_spawnattr_setpgroup(&attr, 0);
  if (e == 0) e = ::posix_spawnattr_setsigdefault(&attr, &defaults);
  if (e == 0) e = ::posix_spawnattr_setsigmask(&attr, &none);
  // The pipes are close-on-exec; dup2 onto 0, 1 and 2 gives the child copies that are not.
  if (e == 0) e = ::posix_spawn_file_actions_adddup2(&actions, in, STDIN_FILENO);
  if (e == 0) e = ::posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
  if (e == 0) e = ::posix_spawn_file_actions_adddup2(&actions, err, STDERR_FILENO);
  pid_t pid = -1;
  if (e == 0) {
    e = use_path ? ::posix_spawnp(&pid, argv[0], &actions, &attr, argv, envp)
                 : ::posix_spawn(&pid, argv[0], &actions, &attr, argv, envp);
  }
  ::posix_spawnattr_destroy(&attr);
  ::posix_spawn_file_actions_destroy(&actions);
  if (e != 0) return {-1, e};
  return {pid, 0};
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

// Where posix_spawnp found `name`: the first executable file in PATH (or `name` itself when it
// holds a '/'), as execvp(3) searches; empty when there is none.
std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  for (std::string_view dirs = path ? path : "/bin:/usr/bin"; !dirs.empty();) {
    const size_t colon = dirs.find(':');
    std::string_view dir = dirs.substr(0, colon);
    dirs = colon == std::string_view::npos ? std::string_view{} : dirs.substr(colon + 1);
    std::string file = fmt::format("{}/{}", dir.empty() ? "." : dir, name);
    struct stat st {};
    // As execvp: a directory, or a file it may not execute, is passed over.
    if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(file.c_str(), X_OK) == 0) {
      return file;
    }
  }
  return {};
}

// Ends process group `pid` (its leader the child, `exited` once reaped into `status`): SIGTERM
// first, so that the command's traps run (the discovery probe removes its temporary directory),
// then SIGKILL for whatever is still there after a second; the child is reaped.
void end_group(pid_t pid, bool& exited, int& status) {
  ::kill(-pid, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) exited = true;
    if (exited && ::kill(-pid, 0) != 0) return;  // the whole group is gone
    ::usleep(10'000);
  }
  ::kill(-pid, SIGKILL);
  if (!exited) ::waitpid(pid, &status, 0);
  exited = true;
}

}  // namespace

util::Result<CommandResult> LocalExecutor::run(const Command& cmd, const RunOptions& opts) {
  if (auto st = validate_command(cmd); !st) return st.error();
  const auto start = Clock::now();
  const auto deadline = start + opts.timeout;

  std::vector<std::string> args =
      cmd.shell ? std::vector<std::string>{"/bin/sh", "-c", cmd.argv[0]} : cmd.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_text = environment_.value_or(std::vector<std::string>());
  std::vector<char*> env_ptrs;
  for (auto& e : env_text) env_ptrs.push_back(e.data());
  env_ptrs.push_back(nullptr);
  char* const* envp = environment_ ? env_ptrs.data() : environ;

  Pipe in, out, err;
  if (!make_pipe(in) || !make_pipe(out) || !make_pipe(err)) {
    return util::error(ExitCode::kUnreachable,
                       fmt::format("{}: cannot create pipes to run `{}`: {}", host_, args[0],
                                   std::strerror(errno)));
  }
  auto spawned =
      spawn(argv.data(), envp, !cmd.shell, in.read.get(), out.write.get(), err.write.get());
  if (spawned.error == ENOEXEC && !cmd.shell) {
    // An executable file with no "#!" line: execvp(3) and every shell run it with /bin/sh;
    // posix_spawnp does not (glibc since 2.15, macOS), so it is done here.
    if (std::string file = find_in_path(args[0]); !file.empty()) {
      std::vector<std::string> sh_args{"/bin/sh", file};
      sh_args.insert(sh_args.end(), args.begin() + 1, args.end());
      std::vector<char*> sh_argv;
      for (auto& a : sh_args) sh_argv.push_back(a.data());
      sh_argv.push_back(nullptr);
      spawned =
          spawn(sh_argv.data(), envp, false, in.read.get(), out.write.get(), err.write.get());
    }
  }
  in.read.reset();
  out.write.reset();
  err.write.reset();
  CommandResult result;
  if (spawned.error != 0) {
    const int e = spawned.error;
    // A system out of processes or memory runs nothing: that is no answer from the command.
    if (e == EAGAIN || e == ENOMEM) {
      return util::error(ExitCode::kUnreachable, fmt::format("{}: cannot start `{}`: {}", host_,
                                                             args[0], std::strerror(e)));
    }
    // As a shell says it: not found 127, found but not runnable 126.
    bool missing = e == ENOENT || e == ENOTDIR;
    result.exit_status = missing ? 127 : 126;
    result.err = missing ? fmt::format("clusterctl: {}: command not found\n", args[0])
                         : fmt::format("clusterctl: {}: {}\n", args[0], std::strerror(e));
    if (opts.on_output) {
      opts.on_output(2, result.err);
      result.err.clear();
    }
    result.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
    return result;
  }
  const pid_t pid = spawned.pid;

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
      end_group(pid, exited, status);
      result.timed_out = true;
      break;
    }
    if (!opts.cancelled && util::interrupted()) {
      end_group(pid, exited, status);
      return util::error(ExitCode::kInterrupted,
                         fmt::format("{}: {}; {} was killed", host_, util::interruption(),
                                     opts.what.empty() ? "`" + args[0] + "`" : opts.what));
    }
    auto now = Clock::now();
    if (now >= deadline) {
      end_group(pid, exited, status);
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
                                   std::chrono::milliseconds timeout) {
  auto content = util::read_file(local, kMaxUploadBytes);
  if (!content) return content.error();
  // Its temporary named and removed as an SSH upload's (upload_temp.h): one left by a killed
  // clusterctl goes with the next upload there, whichever way it reaches the host.
  LocalUpload upload(std::chrono::steady_clock::now() + timeout);
  return util::write_file_atomic(remote_path, *content, mode, upload.naming());
}

std::vector<std::string> session_environment(const std::vector<std::string>& env,
                                             std::vector<std::string>* dropped) {
  static constexpr std::string_view kKept[] = {"PATH",  "HOME", "USER", "LOGNAME", "SHELL",
                                               "MAIL",  "TZ",   "TMPDIR", "LANG"};
  std::vector<std::string> out;
  for (const std::string& entry : env) {
    const std::string_view name = std::string_view(entry).substr(0, entry.find('='));
    const bool keep = name.starts_with("LC_") ||
                      std::find(std::begin(kKept), std::end(kKept), name) != std::end(kKept);
    if (keep) {
      out.push_back(entry);
    } else if (dropped != nullptr && !name.empty()) {
      dropped->emplace_back(name);
    }
  }
  return out;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

}  // namespace cc::remote
