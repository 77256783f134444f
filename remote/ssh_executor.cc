// SshExecutor::run: one exec channel per command on the reused session, read with a deadline.
#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include "remote/quote.h"
#include "remote/ssh_session.h"
#include "util/interrupt.h"

namespace cc::remote {
namespace {

using Clock = std::chrono::steady_clock;
using util::ExitCode;

constexpr int kPollSliceMs = 50;        // longest wait between looks at Ctrl-C and the deadline

// Data sent on the session's socket that stays unacknowledged for `limit` breaks the
// connection (a heartbeat into a cut network is noticed in `limit`, not after TCP's minutes).
void set_user_timeout(ssh_session s, std::chrono::milliseconds limit) {
  int fd = ssh_get_fd(s);
  if (fd < 0) return;
#if defined(TCP_USER_TIMEOUT)
  unsigned int ms = static_cast<unsigned int>(limit.count());
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms);
#elif defined(TCP_RXT_CONNDROPTIME)
  int sec = static_cast<int>((limit.count() + 999) / 1000);
  ::setsockopt(fd, IPPROTO_TCP, TCP_RXT_CONNDROPTIME, &sec, sizeof sec);
#else
  (void)limit;  // neither option: TCP's own retransmission timeout applies
#endif
}
constexpr uint32_t kChunk = 32 * 1024;  // bytes per read / stdin write

// Signal numbers that are the same on every POSIX system (Linux, macOS, BSD).
int signal_number(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, int>, 12> kSignals = {{
      {"HUP", 1},
      {"INT", 2},
      {"QUIT", 3},
      {"ILL", 4},
      {"TRAP", 5},
      {"ABRT", 6},
      {"FPE", 8},
      {"KILL", 9},
      {"SEGV", 11},
      {"PIPE", 13},
      {"ALRM", 14},
      {"TERM", 15},
  }};
  for (const auto& [n, v] : kSignals) {
    if (n == name) return v;
  }
  return 0;
}

// What the channel callbacks learn about the remote process.
struct ExitState {
  int status = -1;  // from "exit-status"
  int signal = -1;  // 128+N from "exit-signal"; 255 for a signal without a portable number
};

void on_exit_status(ssh_session, ssh_channel, int exit_status, void* userdata) {
  static_cast<ExitState*>(userdata)->status = exit_status;
}

void on_exit_signal(ssh_session, ssh_channel, const char* signal, int, const char*, const char*,
                    void* userdata) {
  int n = signal != nullptr ? signal_number(signal) : 0;
  static_cast<ExitState*>(userdata)->signal = n > 0 ? 128 + n : 255;
}

// Owns an open channel; closes it (bounded by the session's round-trip timeout) and frees it.
class Channel {
 public:
  explicit Channel(ssh_channel c) : c_(c) {}
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  ~Channel() {
    if (c_ == nullptr) return;
    ssh_session s = ssh_channel_get_session(c_);
    ssh_set_blocking(s, 1);
    if (ssh_channel_is_open(c_) != 0) ssh_channel_close(c_);
    ssh_channel_free(c_);
  }
  /// Frees the channel without waiting on the peer (for a broken connection).
  void drop() {
    if (c_ == nullptr) return;
    ssh_set_blocking(ssh_channel_get_session(c_), 0);
    ssh_channel_free(c_);
    c_ = nullptr;
  }

 private:
  ssh_channel c_;
};

// Ends remote process group `pid` (TERM, then KILL) from a second channel (bounded by the
// round-trip timeout).
void kill_remote_group(ssh_session s, long pid) {
  ssh_set_blocking(s, 1);
  ssh_channel c = ssh_channel_new(s);
  if (c == nullptr) return;
  if (ssh_channel_open_session(c) == SSH_OK) {
    // TERM first: the command's own traps run (the discovery probe removes its directory in
    // /tmp), then KILL for whatever is still there after a second.
    std::string kill = fmt::format(
        "kill -TERM -- -{0} 2>/dev/null || kill -TERM {0} 2>/dev/null; i=0; "
        "while [ $i -lt 10 ] && {{ kill -0 -- -{0} || kill -0 {0}; }} 2>/dev/null; "
        "do sleep 0.1; i=$((i+1)); done; "
        "kill -9 -- -{0} 2>/dev/null || kill -9 {0} 2>/dev/null",
        pid);
    if (ssh_channel_request_exec(c, kill.c_str()) == SSH_OK) {
      ssh_channel_send_eof(c);
      ssh_channel_get_exit_status(c);
    }
    ssh_channel_close(c);
  }
  ssh_channel_free(c);
}

// Processes the packets that have arrived (exit-status, exit-signal, close) without waiting:
// the session is non-blocking. Returns the exit status once libssh has it, else -1.
int pump_exit_status(ssh_channel c) {
#if LIBSSH_VERSION_INT >= SSH_VERSION_INT(0, 11, 0)
  uint32_t code = 0;
  char* signal = nullptr;
  int core = 0;
  int rc = ssh_channel_get_exit_state(c, &code, &signal, &core);
  if (signal != nullptr) ssh_string_free_char(signal);  // reported by on_exit_signal too
  return rc == SSH_OK && signal == nullptr ? static_cast<int>(code) : -1;
#else
  return ssh_channel_get_exit_status(c);  // deprecated from 0.11 on
#endif
}

}  // namespace

std::string with_pid_report(const std::string& line) {
  return fmt::format("echo {}$$ >&2; {}", kPidMarker, line);
}

long take_pid_report(std::string& err) {
  constexpr size_t kGiveUpAfter = 64 * 1024;
  size_t at = 0;
  while (err.compare(at, kPidMarker.size(), kPidMarker) != 0) {
    at = err.find('\n', at);
    if (at == std::string::npos) return err.size() > kGiveUpAfter ? -1 : 0;
    ++at;
  }
  size_t nl = err.find('\n', at);
  if (nl == std::string::npos) return 0;
  long pid = -1;
  const char* first = err.data() + at + kPidMarker.size();
  auto [end, ec] = std::from_chars(first, err.data() + nl, pid);
  if (ec != std::errc() || end != err.data() + nl || pid <= 1) return -1;
  err.erase(at, nl + 1 - at);
  return pid;
}

util::Result<CommandResult> SshExecutor::run(const Command& cmd, const RunOptions& opts) {
  if (auto st = validate_command(cmd); !st) {
    return util::error(st.error().code, fmt::format("{}: {}", host_, st.error().message));
  }
  const auto start = Clock::now();
  const std::string line =
      cmd.shell ? shell_quote({"sh", "-c", cmd.argv[0]}) : shell_quote(cmd.argv);
  // In messages: what the command is for when the caller said, else its line, shortened.
  const std::string shown =
      !opts.what.empty() ? opts.what
                        : "`" + (line.size() > 60 ? line.substr(0, 57) + "..." : line) + "`";

  // A channel on the existing session, or on a new one. A reused session may have died
  // silently (host rebooted); the command has not started then, so one fresh try is safe.
  ssh_channel raw = nullptr;
  for (int attempt = 0; attempt < 2 && raw == nullptr; ++attempt) {
    bool fresh = false;
    if (!session_ || ssh_is_connected(session_->ssh) == 0) {
      disconnect(/*broken=*/true);
      if (auto st = connect(); !st) return st.error();
      fresh = true;
    }
    ssh_session s = session_->ssh;
    ssh_set_blocking(s, 1);
    // Opening the channel is a round trip on a session that may be dead (a host cut off):
    // it may take no longer than the command's own timeout.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        start + opts.timeout - Clock::now());
    set_round_trip_timeout(s, std::clamp(left, std::chrono::milliseconds(1),
                                         options_.connect_timeout));
    raw = ssh_channel_new(s);
    if (raw != nullptr && ssh_channel_open_session(raw) != SSH_OK) {
      ssh_channel_free(raw);
      raw = nullptr;
    }
    if (raw == nullptr) {
      std::string why = ssh_get_error(s);
      std::string target = session_->target;
      disconnect(/*broken=*/true);
      if (fresh || attempt == 1 || Clock::now() >= start + opts.timeout) {
        return util::error(ExitCode::kUnreachable,
                           fmt::format("{}: cannot open a session channel on {}: {}. The "
                                       "connection was lost or sshd refused (MaxSessions?)",
                                       host_, target, why));
      }
    }
  }
  Channel channel(raw);
  ssh_session s = session_->ssh;

  ExitState exit_state;
  ssh_channel_callbacks_struct callbacks{};
  ssh_callbacks_init(&callbacks);
  callbacks.userdata = &exit_state;
  callbacks.channel_exit_status_function = on_exit_status;
  callbacks.channel_exit_signal_function = on_exit_signal;
  ssh_set_channel_callbacks(raw, &callbacks);

  auto lost = [&](std::string_view when) {
    return util::error(ExitCode::kUnreachable,
                       fmt::format("{}: connection to {} lost {} {}: {}", host_, session_->target,
                                   when, shown, ssh_get_error(s)));
  };

  if (ssh_channel_request_exec(raw, with_pid_report(line).c_str()) != SSH_OK) {
    util::Error e = lost("when starting");
    channel.drop();
    disconnect(/*broken=*/true);
    return e;
  }

  CommandResult result;
  std::string_view to_write;
  if (opts.stdin_data) to_write = *opts.stdin_data;
  bool eof_sent = false;
  const auto deadline = start + opts.timeout;
  std::array<char, kChunk> buf{};
  std::optional<util::Error> failure;
  long remote_pid = 0;  // > 0 once the remote shell reported it

  const bool beating = opts.keep_stdin_open && opts.heartbeat.count() > 0;
  auto next_beat = Clock::now() + opts.heartbeat;
  if (beating && opts.heartbeat_timeout.count() > 0) set_user_timeout(s, opts.heartbeat_timeout);

  // Ends the remote command: TERM to its shell (sshd honours signal requests for non-root
  // users), then TERM and KILL to its process group (kill_remote_group) once its pid is known,
  // else KILL to the shell at once.
  auto stop_remote = [&] {
    ssh_channel_request_send_signal(raw, "TERM");
    if (remote_pid > 0) {
      kill_remote_group(s, remote_pid);
    } else {
      ssh_channel_request_send_signal(raw, "KILL");
    }
  };
  ssh_set_blocking(s, 0);
  for (;;) {
    if (opts.cancelled ? opts.cancelled() : false) {
      stop_remote();
      result.timed_out = true;
      break;
    }
    if (!opts.cancelled && util::interrupted()) {
      stop_remote();
      failure = util::error(ExitCode::kInterrupted, fmt::format("{}: {}; {} was killed", host_,
                                                                util::interruption(), shown));
      break;
    }
    if (Clock::now() >= deadline) {
      stop_remote();
      result.timed_out = true;
      break;
    }
    bool progress = false;
    if (beating && to_write.empty() && Clock::now() >= next_beat) {
      to_write = opts.heartbeat_data;
      next_beat = Clock::now() + opts.heartbeat;
    }
    if (!eof_sent && !to_write.empty()) {
      uint32_t window = ssh_channel_window_size(raw);
      if (window > 0) {
        uint32_t n = std::min<uint32_t>(
            {window, kChunk, static_cast<uint32_t>(std::min<size_t>(to_write.size(), kChunk))});
        int w = ssh_channel_write(raw, to_write.data(), n);
        if (w == SSH_ERROR) {
          failure = lost("while sending stdin to");
          break;
        }
        to_write.remove_prefix(static_cast<size_t>(w));
        progress = progress || w > 0;
      }
    }
    if (!eof_sent && to_write.empty() && !opts.keep_stdin_open) {
      if (ssh_channel_send_eof(raw) == SSH_ERROR) {
        failure = lost("while sending stdin to");
        break;
      }
      eof_sent = true;
    }
    bool at_eof = true;
    for (int is_stderr = 0; is_stderr <= 1; ++is_stderr) {
      int n = ssh_channel_read_nonblocking(raw, buf.data(), kChunk, is_stderr);
      if (n > 0) {
        std::string& into = is_stderr != 0 ? result.err : result.out;
        into.append(buf.data(), static_cast<size_t>(n));
        // Streamed output leaves the result; stderr once the pid report is out of it.
        if (opts.on_output && (is_stderr == 0 || remote_pid != 0)) {
          opts.on_output(is_stderr != 0 ? 2 : 1, into);
          into.clear();
        }
        progress = true;
        at_eof = false;
      } else if (n == SSH_ERROR) {
        failure = lost("while running");
        break;
      } else if (n != SSH_EOF) {
        at_eof = false;
      }
    }
    if (remote_pid == 0) {
      remote_pid = take_pid_report(result.err);
      if (remote_pid != 0 && opts.on_output && !result.err.empty()) {
        opts.on_output(2, result.err);
        result.err.clear();
      }
    }
    if (failure) break;
    if (at_eof || ssh_channel_is_closed(raw) != 0) {
      // All output is in; the exit status follows the EOF.
      int status = pump_exit_status(raw);
      if (status >= 0 && exit_state.status < 0) exit_state.status = status;
      if (exit_state.status >= 0 || exit_state.signal >= 0 || ssh_channel_is_closed(raw) != 0) {
        break;
      }
      if (ssh_is_connected(s) == 0) {
        failure = lost("while waiting for the exit status of");
        break;
      }
    }
    if (!progress) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      pollfd p{ssh_get_fd(s), POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::clamp<long long>(left.count(), 0, kPollSliceMs)));
    }
  }
  ssh_remove_channel_callbacks(raw, &callbacks);
  if (remote_pid == 0) take_pid_report(result.err);
  if (opts.on_output && !result.err.empty()) {
    opts.on_output(2, result.err);
    result.err.clear();
  }
  if (failure) {
    if (failure->code == ExitCode::kUnreachable) {  // the session is unusable: drop it
      channel.drop();
      disconnect(/*broken=*/true);
    }
    return *failure;
  }
  if (!result.timed_out) {
    result.exit_status = exit_state.signal >= 0 ? exit_state.signal : exit_state.status;
    result.signaled = exit_state.signal >= 0;
  }
  result.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  return result;
}

}  // namespace cc::remote
