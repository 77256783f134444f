// SshExecutor: opening a session (config, TCP + handshake, host key check, authentication).
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#include <fcntl.h>
#include <fmt/format.h>
#include <libssh/libssh.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remote/quote.h"
#include "remote/resolve.h"
#include "remote/ssh_session.h"
#include "util/address.h"
#include "util/atomic_file.h"
#include "util/host_name.h"
#include "util/interrupt.h"

namespace cc::remote {
namespace {

using Clock = std::chrono::steady_clock;
using util::ExitCode;

constexpr int kConnectPollMs = 10;  // connect: how often to look at progress and at Ctrl-C

std::string option(ssh_session s, ssh_options_e which) {
  char* value = nullptr;
  if (ssh_options_get(s, which, &value) != SSH_OK || value == nullptr) return "";
  std::string out = value;
  ssh_string_free_char(value);
  return out;
}

// "SHA256:..." of the server's host key, and its type ("ssh-ed25519").
struct HostKey {
  std::string type;
  std::string fingerprint;
};

HostKey server_key(ssh_session s) {
  HostKey k{"unknown", "(unavailable)"};
  ssh_key key = nullptr;
  if (ssh_get_server_publickey(s, &key) != SSH_OK) return k;
  k.type = ssh_key_type_to_char(ssh_key_type(key));
  unsigned char* hash = nullptr;
  size_t hlen = 0;
  if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hlen) == SSH_OK) {
    char* fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hlen);
    if (fp != nullptr) {
      k.fingerprint = fp;
      ssh_string_free_char(fp);
    }
    ssh_clean_pubkey_hash(&hash);
  }
  ssh_key_free(key);
  return k;
}

// The name known_hosts uses: "address", or "[address]:port" off port 22 (as ssh-keygen -R).
std::string known_hosts_name(ssh_session s) {
  std::string address = option(s, SSH_OPTIONS_HOST);
  unsigned port = 22;
  ssh_options_get_port(s, &port);
  return port == 22 ? address : util::host_port(address, static_cast<int>(port));
}

// "user@address:port" as libssh will use them (the user is known once ssh_connect ran).
std::string describe_target(ssh_session s) {
  unsigned port = 22;
  ssh_options_get_port(s, &port);
  std::string user = option(s, SSH_OPTIONS_USER);
  return fmt::format("{}{}{}", user, user.empty() ? "" : "@",
                     util::host_port(option(s, SSH_OPTIONS_HOST), static_cast<int>(port)));
}

// Adds the server's key to known_hosts as one atomic replacement of the file (libssh's own
// ssh_session_update_known_hosts appends in place). Fan-out threads may accept keys at the same
// time, so the read-modify-write is serialised within the process.
util::Status record_host_key(ssh_session s, const std::string& known_file) {
  namespace fs = std::filesystem;
  if (known_file.empty() || known_file.find_first_of("%~") != std::string::npos) {
    // Not an expanded path: let libssh resolve and append it.
    if (ssh_session_update_known_hosts(s) == SSH_OK) return {};
    return util::error(ExitCode::kUnreachable, ssh_get_error(s));
  }
  char* entry = nullptr;
  if (ssh_session_export_known_hosts_entry(s, &entry) != SSH_OK || entry == nullptr) {
    return util::error(ExitCode::kUnreachable, ssh_get_error(s));
  }
  std::string line = entry;
  ssh_string_free_char(entry);
  if (line.empty() || line.back() != '\n') line += '\n';

  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::error_code ec;
  fs::path path = known_file;
  if (fs::is_symlink(path, ec)) path = fs::canonical(path, ec);  // replace the target, not the link
  std::string text;
  unsigned mode = 0644;  // as ssh creates ~/.ssh/known_hosts
  if (fs::exists(path, ec)) {
    auto old = util::read_file(path);
    if (!old) return old.error();
    text = std::move(*old);
    mode = static_cast<unsigned>(fs::status(path, ec).permissions() & fs::perms::mask);
  }
  if (!text.empty() && text.back() != '\n') text += '\n';
  return util::write_file_atomic(path, text + line, mode);
}

// Why libssh refused `destination` as its host (ssh_options_set gives no reason). A scoped
// IPv6 address is a destination as ssh(1) takes it, bracketed or not (fe80::1%en0,
// user@fe80::1%en0), but only with a scope that is an interface of this machine: libssh checks
// it with if_nametoindex, and the scope says which of our interfaces leads to the address.
std::string destination_refusal(const std::string& destination) {
  std::string host = destination.substr(destination.rfind('@') + 1);  // npos + 1: all of it
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (const auto pct = host.find('%'); pct != std::string::npos && !util::address_problem(host)) {
    const std::string scope = host.substr(pct + 1);
    if (::if_nametoindex(scope.c_str()) == 0) {
      return fmt::format(
          "its scope '{}' is no network interface of this machine: a link-local "
          "address is reached through one of this machine's own interfaces, so "
          "name that one ({}%IF; `ifconfig -l` or `ip -br link` lists them)",
          scope, host.substr(0, pct));
    }
  }
  // HOST:PORT and ssh://USER@HOST:PORT, as mpirun's and pdsh's host lists take them.
  if (destination.starts_with("ssh://") ||
      (host.find(':') != std::string::npos && util::address_problem(host))) {
    return "a port (or an ssh:// URL) is not part of a destination here: name a Host entry of "
           "the SSH config that gives it (Host NAME, HostName ADDRESS, Port PORT, User USER)";
  }
  return "expected HOST or USER@HOST: a host name without spaces or shell characters, an IPv4 "
         "address, or an IPv6 address (with its scope when link-local: fe80::1%en0; brackets "
         "optional)";
}

// What to check when the TCP connection or the handshake failed; `hint` is added when the
// name did not resolve (SshOptions::unresolved_hint).
std::string connect_advice(std::string_view why, std::string_view hint) {
  if (why.find("resolve") != std::string_view::npos) {
    return fmt::format(
        "Check the host name, or give it a Host entry with HostName in the SSH "
        "config (-F){}",
        hint);
  }
  return "Check that the host is up and runs sshd, and its address and port in the SSH config";
}

// The host name the config resolved to, without the brackets of an IPv6 address.
std::string host_name(ssh_session s) {
  std::string name = option(s, SSH_OPTIONS_HOST);
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);
  }
  return name;
}

bool has_proxy_command(ssh_session s) {
  return !option(s, SSH_OPTIONS_PROXYCOMMAND).empty();
}

// The proxy command as a line to run by hand: libssh's %h and %p filled in.
std::string proxy_line(ssh_session s) {
  std::string line = option(s, SSH_OPTIONS_PROXYCOMMAND);
  unsigned port = 22;
  ssh_options_get_port(s, &port);
  for (auto [esc, value] : {std::pair<std::string_view, std::string>{"%h", host_name(s)},
                            {"%p", std::to_string(port)}}) {
    for (size_t at = line.find(esc); at != std::string::npos; at = line.find(esc, at)) {
      line.replace(at, esc.size(), value);
      at += value.size();
    }
  }
  return line;
}

// Why a connection through a proxy failed, and how to see the proxy's own error.
std::string proxy_advice(ssh_session s) {
  return fmt::format(
      "The connection goes through the proxy command `{}` (ProxyJump or ProxyCommand in the SSH "
      "config), whose own errors libssh does not show: run it yourself to see why",
      proxy_line(s));
}

// What public-key authentication had to offer, when the host accepted none of it: the agent
// ($SSH_AUTH_SOCK) and the first IdentityFile (the config's, else ~/.ssh/id_ed25519), each with
// what went wrong with it, and what to do.
// A user name with an '@' in it, said first when no key was accepted: ssh takes all before a
// destination's last '@' as the user, so a doubled '@' (`root@x@h1`, a typo, as
// openpmix/prrte#2714 met in hostfiles) logs in as `root@x` and fails as if the keys were
// wrong. Not refused: a directory user such as `jo@corp.example` is written that way.
std::string at_in_user(ssh_session s, const std::string& destination) {
  const std::string user = option(s, SSH_OPTIONS_USER);
  if (user.find('@') == std::string::npos) return "";
  return fmt::format(
      "the user name is '{}', which holds an '@' ({}): if an '@' there is a typo, correct it; "
      "otherwise, ",
      user,
      destination.find('@') != destination.rfind('@')
          ? fmt::format("ssh takes all before the last '@' of '{}' as the user", destination)
          : std::string("from the SSH config's User"));
}

std::string auth_advice(ssh_session s) {
  std::string home;
  if (const char* h = std::getenv("HOME"); h != nullptr) home = h;
  std::string notes;
  const char* sock = std::getenv("SSH_AUTH_SOCK");
  struct stat st {};
  if (sock == nullptr || *sock == '\0') {
    notes = "no ssh-agent (SSH_AUTH_SOCK is not set)";
  } else if (::stat(sock, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    notes = fmt::format(
        "no ssh-agent: SSH_AUTH_SOCK names {}, which is no socket (an agent "
        "that has ended: start one with `eval \"$(ssh-agent)\"`)",
        sock);
  } else {
    notes = fmt::format("the ssh-agent at {} offered its keys (`ssh-add -l` lists them)", sock);
  }
  std::string id = option(s, SSH_OPTIONS_IDENTITY);
  if (id.starts_with("%d/")) id = home + "/.ssh" + id.substr(2);
  if (id.starts_with("~/")) id = home + id.substr(1);
  if (id.empty()) return notes;
  std::error_code ec;
  if (!std::filesystem::exists(id, ec)) {
    return fmt::format(
        "{}. IdentityFile {} does not exist: fix its path in the SSH config, "
        "or make a key with `ssh-keygen -t ed25519 -f {}` and copy it with "
        "`ssh-copy-id -i {}`",
        notes, id, shell_quote_arg(id), shell_quote_arg(id));
  }
  ssh_key key = nullptr;
  if (ssh_pki_import_privkey_file(id.c_str(), nullptr, nullptr, nullptr, &key) != SSH_OK) {
    return fmt::format(
        "{}. IdentityFile {} could not be loaded: it is protected by a "
        "passphrase (clusterctl never asks for one) or is no private key. Load "
        "it into your agent with `ssh-add {}`",
        notes, id, shell_quote_arg(id));
  }
  ssh_key_free(key);
  return fmt::format(
      "{}. IdentityFile {} was refused too: add {}.pub to the host's "
      "~/.ssh/authorized_keys (`ssh-copy-id -i {}`)",
      notes, id, id, shell_quote_arg(id));
}

// The account that public-key authentication tried, to check beside the keys: a wrong user
// (`ssh: nobody@h2`) is refused as a key the host does not know is.
std::string user_advice(ssh_session s) {
  const std::string user = option(s, SSH_OPTIONS_USER);
  if (user.empty()) return "";
  return fmt::format(
      ". Also check the user name it tried, '{}': if that is not the account on the host, fix "
      "it (`ssh: USER@HOST` in the inventory, or `User` in the SSH config)",
      user);
}

// Owns a socket until it is handed to libssh.
struct SocketFd {
  int fd = -1;
  ~SocketFd() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

// Why a TCP connection was not made (the message) and whether the deadline ended it.
struct TcpFailure {
  std::string why;
  bool timed_out = false;
  bool interrupted = false;
};

// One non-blocking TCP connect to `a`, waited on until `deadline` (and Ctrl-C): the socket, or
// -1 with `fail` filled in.
// A link-local IPv6 address without its scope: every interface has fe80::/64, so the
// connection cannot tell which link to use, and fails with "Invalid argument" (EINVAL), as
// ssh(1) does; open-mpi/ompi#585 hit the same with peers' unscoped fe80 addresses. `name` is
// the host SSH would connect to (the HostName of `destination` in `config`, or itself).
std::optional<std::string> unscoped_link_local(const std::string& name,
                                               const std::string& destination,
                                               const std::string& config) {
  if (name.find('%') != std::string::npos || !util::link_local_ipv6(name)) return std::nullopt;
  return fmt::format(
      "'{}' is a link-local IPv6 address without its scope{}: such an address is reached "
      "through one of this machine's interfaces, so name that one, as ssh takes it ({}%IF, "
      "e.g. {}%en0; `ifconfig -l` or `ip -br link` lists them)",
      name,
      name == destination || destination.ends_with("@" + name)
          ? std::string()
          : fmt::format(" (the HostName of '{}' in {})", destination, config),
      name, name);
}

int connect_one(const addrinfo& a, Clock::time_point deadline, TcpFailure& fail) {
  SocketFd sock{::socket(a.ai_family, a.ai_socktype, a.ai_protocol)};
  if (sock.fd < 0 || ::fcntl(sock.fd, F_SETFD, FD_CLOEXEC) != 0 ||
      ::fcntl(sock.fd, F_SETFL, ::fcntl(sock.fd, F_GETFL) | O_NONBLOCK) != 0) {
    fail.why = std::strerror(errno);
    return -1;
  }
  if (::connect(sock.fd, a.ai_addr, a.ai_addrlen) == 0) return sock.release();
  if (errno != EINPROGRESS) {
    fail.why = std::strerror(errno);
    return -1;
  }
  for (;;) {
    if (util::interrupted()) {
      fail.interrupted = true;
      return -1;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      fail.timed_out = true;
      return -1;
    }
    pollfd p{sock.fd, POLLOUT, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), kConnectPollMs)));
    if (n < 0 && errno != EINTR) {
      fail.why = std::strerror(errno);
      return -1;
    }
    if (n <= 0) continue;
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(sock.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
      fail.why = std::strerror(err);
      return -1;
    }
    return sock.release();
  }
}

}  // namespace

void set_round_trip_timeout(ssh_session s, std::chrono::milliseconds timeout) {
  long ms = std::max<long>(1, static_cast<long>(timeout.count()));
  long sec = ms / 1000;
  long usec = (ms % 1000) * 1000;
  ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &sec);
  ssh_options_set(s, SSH_OPTIONS_TIMEOUT_USEC, &usec);
}

SshExecutor::SshExecutor(std::string host, std::string destination, SshOptions options)
    : host_(std::move(host)), destination_(std::move(destination)), options_(std::move(options)) {
  static std::once_flag init;
  std::call_once(init, [] { ssh_init(); });
}

SshExecutor::~SshExecutor() = default;

void SshExecutor::disconnect(bool broken) {
  if (session_) session_->broken = broken;
  session_.reset();
}

util::Status SshExecutor::connect() {
  auto fail = [&](ExitCode code, std::string message) {
    return util::error(code, fmt::format("{}: {}", host_, message));
  };
  auto session = std::make_unique<Session>();
  session->broken = true;  // until connected: a failed attempt is dropped without waiting
  session->ssh = ssh_new();
  if (session->ssh == nullptr) return fail(ExitCode::kUnreachable, "cannot create an SSH session");
  ssh_session s = session->ssh;

  if (ssh_options_set(s, SSH_OPTIONS_HOST, destination_.c_str()) != SSH_OK) {
    // libssh often gives no reason here (ssh_get_error is empty).
    std::string why = ssh_get_error(s);
    if (why.empty()) why = destination_refusal(destination_);
    return fail(ExitCode::kUsage,
                fmt::format("'{}' is not a valid SSH destination: {}; fix it in --hosts, the "
                            "inventory's ssh: or the SSH config",
                            destination_, why));
  }
  // The config is applied after the destination (Host blocks match it) and before the
  // overrides below (which must win). Parsing marks the config as done, so ssh_connect does
  // not read the default files again.
  if (options_.config_file) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(*options_.config_file, ec)) {
      return fail(ExitCode::kUsage,
                  fmt::format("SSH config file {} does not exist (given with -F or by the "
                              "inventory)",
                              options_.config_file->string()));
    }
    if (ssh_options_parse_config(s, options_.config_file->c_str()) != SSH_OK) {
      return fail(ExitCode::kUsage, fmt::format("cannot use SSH config file {}: {}",
                                                options_.config_file->string(), ssh_get_error(s)));
    }
  } else if (ssh_options_parse_config(s, nullptr) != SSH_OK) {
    return fail(
        ExitCode::kUsage,
        fmt::format("cannot read ~/.ssh/config or /etc/ssh/ssh_config: {}", ssh_get_error(s)));
  }
  if (options_.known_hosts) {
    ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, options_.known_hosts->c_str());
    ssh_options_set(s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null");
  }
  if (const std::string proxy = option(s, SSH_OPTIONS_PROXYCOMMAND); !proxy.empty()) {
    const std::string jump = jump_proxy_command(proxy, options_);
    if (jump != proxy) ssh_options_set(s, SSH_OPTIONS_PROXYCOMMAND, jump.c_str());
  }
  set_round_trip_timeout(s, options_.connect_timeout);

  // One deadline for the whole connection: name lookup, TCP connect, SSH handshake and
  // authentication. libssh would call getaddrinfo itself, which has no timeout (a name on a
  // link that is down took 6 s more than --connect-timeout), so the lookup (bounded too:
  // resolve.h) and the TCP connect are done here and the socket is handed to libssh
  // (SSH_OPTIONS_FD). Behind a ProxyCommand the proxy connects: libssh runs it.
  const auto deadline = Clock::now() + options_.connect_timeout;
  session->target = describe_target(s);
  auto no_answer = [&] {
    return fail(ExitCode::kUnreachable,
                fmt::format("no answer from {} within {:.3g} s (connect timeout). Check that "
                            "the host is up and reachable, or wait longer with "
                            "--connect-timeout SECONDS",
                            session->target,
                            std::chrono::duration<double>(options_.connect_timeout).count()));
  };
  if (!has_proxy_command(s)) {
    const std::string name = host_name(s);
    // Refused before the lookup: connecting would fail with only "Invalid argument".
    if (auto unscoped = unscoped_link_local(
            name, destination_,
            options_.config_file ? options_.config_file->string() : "~/.ssh/config")) {
      return fail(ExitCode::kUsage, *unscoped);
    }
    unsigned port = 22;
    ssh_options_get_port(s, &port);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto found = resolve_host(name, std::to_string(port), hints,
                              std::clamp(left, std::chrono::milliseconds(1), kResolveTimeout),
                              options_.lookup);
    if (!found && found.error().code == ExitCode::kUnreachable && left < kResolveTimeout) {
      // The connect timeout ended the lookup, not the lookup's own limit: say which.
      return fail(ExitCode::kUnreachable,
                  fmt::format("cannot connect to {}: no answer from the name lookup of '{}' "
                              "within {:.3g} s (connect timeout). Check the resolver "
                              "(/etc/resolv.conf) and the network, give the host's address "
                              "(HostName in the SSH config), or wait longer with "
                              "--connect-timeout SECONDS",
                              session->target, name,
                              std::chrono::duration<double>(options_.connect_timeout).count()));
    }
    if (!found) {
      return fail(found.error().code,
                  fmt::format("cannot connect to {}: {}", session->target, found.error().message));
    }
    if (found->status != 0) {
      const std::string why = fmt::format("could not resolve host name '{}' ({})", name,
                                          ::gai_strerror(found->status));
      return fail(ExitCode::kUnreachable,
                  fmt::format("cannot connect to {}: {}. {}", session->target, why,
                              connect_advice(why, options_.unresolved_hint)));
    }
    TcpFailure tcp;
    int fd = -1;
    for (const addrinfo* a = found->addresses.get(); a != nullptr && fd < 0; a = a->ai_next) {
      fd = connect_one(*a, deadline, tcp);
      if (tcp.interrupted || tcp.timed_out) break;
    }
    if (tcp.interrupted) {
      return fail(ExitCode::kInterrupted, util::interruption() + " while connecting");
    }
    if (tcp.timed_out) return no_answer();
    if (fd < 0) {
      return fail(ExitCode::kUnreachable,
                  fmt::format("cannot connect to {}: {}. {}", session->target, tcp.why,
                              connect_advice(tcp.why, options_.unresolved_hint)));
    }
    socket_t handed = fd;
    ssh_options_set(s, SSH_OPTIONS_FD, &handed);  // libssh closes it with the session
  }

  // The SSH handshake, non-blocking so Ctrl-C and the deadline are seen at once.
  ssh_set_blocking(s, 0);
  for (;;) {
    int rc = ssh_connect(s);
    session->target = describe_target(s);
    if (rc == SSH_OK) break;
    if (rc == SSH_ERROR) {
      std::string why = ssh_get_error(s);
      return fail(
          ExitCode::kUnreachable,
          fmt::format("cannot connect to {}: {}. {}", session->target, why,
                      has_proxy_command(s) ? proxy_advice(s)
                                           : connect_advice(why, options_.unresolved_hint)));
    }
    if (util::interrupted()) {
      return fail(ExitCode::kInterrupted, util::interruption() + " while connecting");
    }
    if (Clock::now() >= deadline) return no_answer();
    socket_t fd = ssh_get_fd(s);
    if (fd != SSH_INVALID_SOCKET) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, kConnectPollMs);
    } else {
      ::poll(nullptr, 0, kConnectPollMs);
    }
  }
  ssh_set_blocking(s, 1);
  // The host key check and authentication get what is left of the connect timeout.
  set_round_trip_timeout(s, std::chrono::duration_cast<std::chrono::milliseconds>(
                                deadline - Clock::now()));

  // Host key: known_hosts decides; only a key never seen may be added, and only when asked.
  std::string known_file = option(s, SSH_OPTIONS_KNOWNHOSTS);
  std::string name = known_hosts_name(s);
  HostKey key = server_key(s);
  switch (ssh_session_is_known_server(s)) {
    case SSH_KNOWN_HOSTS_OK:
      break;
    case SSH_KNOWN_HOSTS_UNKNOWN:
    case SSH_KNOWN_HOSTS_NOT_FOUND:
      if (!options_.accept_new_host_keys) {
        return fail(ExitCode::kUnreachable,
                    fmt::format("host key of {} is not known: it offered the {} key {}, which "
                                "is not in {}. If that is the host's key, run again with "
                                "--accept-new-host-keys to record it",
                                name, key.type, key.fingerprint, known_file));
      }
      if (auto st = record_host_key(s, known_file); !st) {
        return fail(ExitCode::kUnreachable,
                    fmt::format("cannot record the host key of {} in {}: {}", name, known_file,
                                st.error().message));
      }
      break;
    case SSH_KNOWN_HOSTS_CHANGED:
      return fail(ExitCode::kUnreachable,
                  fmt::format("REFUSED: the host key of {} changed: it now offers the {} key {}, "
                              "which does not match {}. Either the host was reinstalled or "
                              "someone is intercepting the connection. If the change is "
                              "expected, remove the old key with `ssh-keygen -R '{}' -f {}` and "
                              "connect again with --accept-new-host-keys",
                              name, key.type, key.fingerprint, known_file, name, known_file));
    case SSH_KNOWN_HOSTS_OTHER:
      return fail(ExitCode::kUnreachable,
                  fmt::format("REFUSED: {} offered a {} host key ({}), but {} records a key of "
                              "another type for it. Either the host was reinstalled or someone "
                              "is intercepting the connection. If the change is expected, "
                              "remove the old key with `ssh-keygen -R '{}' -f {}` and connect "
                              "again with --accept-new-host-keys",
                              name, key.type, key.fingerprint, known_file, name, known_file));
    case SSH_KNOWN_HOSTS_ERROR:
    default:
      return fail(ExitCode::kUnreachable,
                  fmt::format("cannot check the host key of {} against {}: {}", name, known_file,
                              ssh_get_error(s)));
  }

  // Public-key authentication: the agent ($SSH_AUTH_SOCK), then IdentityFile / ~/.ssh/id_*.
  int auth = ssh_userauth_publickey_auto(s, nullptr, nullptr);
  if (auth != SSH_AUTH_SUCCESS) {
    if (auth == SSH_AUTH_DENIED) {
      const std::string at = at_in_user(s, destination_);
      return fail(ExitCode::kUnreachable,
                  fmt::format("public-key authentication to {} failed (no key was accepted): "
                              "{}{}{}",
                              session->target, at, auth_advice(s),
                              // a user name with an '@' is already named above
                              at.empty() ? user_advice(s) : ""));
    }
    std::string why = auth == SSH_AUTH_ERROR ? std::string(ssh_get_error(s))
                                             : "the server asks for a further method";
    return fail(ExitCode::kUnreachable,
                fmt::format("public-key authentication to {} failed ({}). Tried the ssh-agent "
                            "and the IdentityFile keys (default ~/.ssh/id_ed25519, id_ecdsa, "
                            "id_rsa); add your public key to the host's "
                            "~/.ssh/authorized_keys (ssh-copy-id) or load it with ssh-add{}",
                            session->target, why, user_advice(s)));
  }
  set_round_trip_timeout(s, options_.connect_timeout);  // each later round trip
  host_key_ = key.fingerprint.starts_with("SHA256:") ? key.fingerprint : "";
  session->broken = false;
  session_ = std::move(session);
  return {};
}

}  // namespace cc::remote

namespace cc::remote {

namespace {

struct SessionFree {
  void operator()(ssh_session s) const { ssh_free(s); }
};
using ConfiguredSession = std::unique_ptr<std::remove_pointer_t<ssh_session>, SessionFree>;

// A session that connects nowhere, with `destination` and the SSH config applied (what ssh
// would connect to). Errors (kUsage) as connecting would report them: a destination libssh
// refuses, a config file that does not exist or cannot be used. nullptr: libssh could not make
// a session (nothing to learn; connecting will say what is wrong).
util::Result<ConfiguredSession> configured_session(const std::string& destination,
                                                   const SshOptions& options) {
  ConfiguredSession s(ssh_new());
  if (!s) return ConfiguredSession();
  const std::string config = options.config_file ? options.config_file->string()
                                                 : std::string("~/.ssh/config");
  if (ssh_options_set(s.get(), SSH_OPTIONS_HOST, destination.c_str()) != SSH_OK) {
    return util::error(ExitCode::kUsage,
                       fmt::format("'{}' is not a valid SSH destination: {}", destination,
                                   destination_refusal(destination)));
  }
  std::error_code ec;
  if (options.config_file && !std::filesystem::is_regular_file(*options.config_file, ec)) {
    return util::error(ExitCode::kUsage,
                       fmt::format("SSH config file {} does not exist (given with -F or by the "
                                   "inventory)",
                                   config));
  }
  if (ssh_options_parse_config(
          s.get(), options.config_file ? options.config_file->c_str() : nullptr) != SSH_OK) {
    // As connect() reports it: connecting would fail the same way on every host.
    return util::error(
        ExitCode::kUsage,
        options.config_file
            ? fmt::format("cannot use SSH config file {}: {}", config, ssh_get_error(s.get()))
            : fmt::format("cannot read ~/.ssh/config or /etc/ssh/ssh_config: {}",
                          ssh_get_error(s.get())));
  }
  return s;
}

// The session's host name (HostName, else the destination's host), without IPv6 brackets.
std::optional<std::string> session_host(ssh_session s) {
  char* host = nullptr;
  if (ssh_options_get(s, SSH_OPTIONS_HOST, &host) != SSH_OK || host == nullptr) {
    return std::nullopt;
  }
  std::string name = host;
  ssh_string_free_char(host);
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);
  }
  return name;
}

}  // namespace

std::optional<std::string> configured_host_name(const std::string& destination,
                                                const SshOptions& options) {
  auto s = configured_session(destination, options);
  if (!s || !*s) return std::nullopt;
  return session_host(s->get());
}

util::Status check_destination(const std::string& destination, const SshOptions& options) {
  auto session = configured_session(destination, options);
  if (!session) return session.error();
  if (!*session) return {};
  ssh_session s = session->get();
  const std::string config =
      options.config_file ? options.config_file->string() : std::string("~/.ssh/config");
  char* proxy = nullptr;
  if (ssh_options_get(s, SSH_OPTIONS_PROXYCOMMAND, &proxy) == SSH_OK && proxy != nullptr) {
    ssh_string_free_char(proxy);
    return {};  // the name is resolved at the other end of the proxy
  }
  const std::optional<std::string> host = session_host(s);
  if (!host) return {};
  const std::string& name = *host;
  if (auto unscoped = unscoped_link_local(name, destination, config)) {
    return util::error(ExitCode::kUsage, *unscoped);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  auto found = resolve_host(name, "", hints, kResolveTimeout, options.lookup);
  if (!found) return {};  // no answer in time: the connection reports it, naming the host
  const int rc = found->status;
  // Only a definite "no such name" is the operator's mistake; a DNS server that does not
  // answer (EAI_AGAIN) is left to the connection, which reports the host as unreachable.
  if (rc == EAI_NONAME
#ifdef EAI_NODATA
      || rc == EAI_NODATA
#endif
  ) {
    return util::error(
        ExitCode::kUsage,
        name == destination || destination.ends_with("@" + name)
            ? fmt::format("no host {} in {}, and no host of that name ({}){}",
                          util::quote(destination), config, ::gai_strerror(rc),
                          options.unresolved_hint)
            : fmt::format("no host {}: its HostName {} in {} is no known host ({}){}",
                          util::quote(destination), util::quote(name), config,
                          ::gai_strerror(rc), options.unresolved_hint));
  }
  return {};
}

util::Status SshExecutor::check() const {
  auto st = check_destination(destination_, options_);
  if (st) return st;
  return util::error(st.error().code, fmt::format("{}: {}", host_, st.error().message));
}

}  // namespace cc::remote

namespace cc::remote {

std::string jump_proxy_command(std::string_view proxy, const SshOptions& options) {
  // libssh 0.10's form (config.c, ssh_config_parse_proxy_jump):
  // "ssh[ -l USER][ -p PORT][ -J NEXT] -W '[%h]:%p' HOST".
  if (!proxy.starts_with("ssh ") || proxy.find(" -W '[%h]:%p' ") == std::string_view::npos) {
    return std::string(proxy);
  }
  // libssh expands %-escapes in the whole line: a path with a % in it is left out.
  auto path_arg = [](const std::string& flag, const std::string& prefix,
                     const std::filesystem::path& path) {
    std::error_code ec;
    const std::string abs = std::filesystem::absolute(path, ec).string();
    if (ec || abs.find('%') != std::string::npos) return std::string();
    return " " + flag + " " + shell_quote_arg(prefix + abs);
  };
  std::string line = "ssh";
  if (options.config_file) line += path_arg("-F", "", *options.config_file);
  if (options.known_hosts) {
    line += path_arg("-o", "UserKnownHostsFile=", *options.known_hosts);
    line += " -o GlobalKnownHostsFile=/dev/null";
  }
  line += " -o BatchMode=yes";
  line += proxy.substr(3);
  return line;
}

}  // namespace cc::remote
