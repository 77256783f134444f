// Unit tests of the SSH executor that need no sshd: failures must be clean, prompt and named.
// The real protocol paths are covered by tests/integration/ssh against the lab's sshd.
#include "remote/ssh_executor.h"

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <net/if.h>
#include <netdb.h>
#include <unistd.h>

#include "remote/ssh_session.h"
#include "tests/temp_dir.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"

namespace fs = std::filesystem;
using cc::remote::SshExecutor;
using cc::remote::SshOptions;
using cc::util::ExitCode;
using namespace std::chrono_literals;

namespace {

// A TCP socket on 127.0.0.1 that accepts connections (kernel backlog) but never speaks SSH.
struct SilentServer {
  SilentServer() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd, 8) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port = ntohs(addr.sin_port);
  }
  ~SilentServer() { ::close(fd); }
  int fd = -1;
  unsigned port = 0;
};

// An ssh_config in a fresh directory, mapping alias `name` to 127.0.0.1:port.
struct Config {
  explicit Config(const std::string& name, unsigned port) {
    REQUIRE(cc::util::write_file_atomic(
                file, fmt::format("Host {}\n  HostName 127.0.0.1\n  Port {}\n  User nobody\n", name,
                                  port))
                .ok());
  }
  cc::test::TempDir tmp{"cc-ssh"};
  fs::path dir = tmp.path;
  fs::path file = dir / "ssh_config";
};

unsigned unused_port() {
  SilentServer s;  // bound, then closed: nothing listens there afterwards
  return s.port;
}

}  // namespace

TEST_CASE("ssh: a refused connection is kUnreachable and names host and address") {
  Config cfg("node1", unused_port());
  SshOptions o;
  o.config_file = cfg.file;
  o.known_hosts = cfg.dir / "known_hosts";
  SshExecutor ssh("node1", "node1", o);
  CHECK(ssh.host() == "node1");
  auto r = ssh.run({{"true"}}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUnreachable);
  CHECK(r.error().message.rfind("node1: cannot connect to nobody@127.0.0.1:", 0) == 0);
  // The next call tries again (no crash on a session that never came up).
  r = ssh.run({{"true"}}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUnreachable);
}

TEST_CASE("ssh: a server that never answers hits the connect timeout, not more") {
  SilentServer server;
  Config cfg("mute", server.port);
  SshOptions o;
  o.config_file = cfg.file;
  o.known_hosts = cfg.dir / "known_hosts";
  o.connect_timeout = 400ms;
  SshExecutor ssh("mute", "mute", o);
  auto t0 = std::chrono::steady_clock::now();
  auto r = ssh.run({{"true"}}, {});
  auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUnreachable);
  CHECK(r.error().message.find("mute: no answer from nobody@127.0.0.1:") == 0);
  CHECK(r.error().message.find("--connect-timeout") != std::string::npos);
  CHECK(took >= 400ms);
  CHECK(took < 2s);
  auto up = ssh.upload(cfg.file, "/tmp/x", 0644, 1s);
  REQUIRE_FALSE(up.ok());
  CHECK(up.error().code == ExitCode::kUnreachable);
}

namespace {

// A name lookup that takes 1.5 s (an mDNS name on a link that is down), then answers.
int lookup_after_1500ms(const char* name, const char* service, const addrinfo* hints,
                        addrinfo** res) {
  std::this_thread::sleep_for(1500ms);
  return ::getaddrinfo(name, service, hints, res);
}

// A name lookup that never answers in time (a DNS server that is gone).
int lookup_after_30s(const char* name, const char* service, const addrinfo* hints,
                     addrinfo** res) {
  std::this_thread::sleep_for(30s);
  return ::getaddrinfo(name, service, hints, res);
}

// A name lookup with no DNS server to ask (a lab machine without one): EAI_AGAIN, which
// check_destination leaves to the connection.
int lookup_no_server(const char*, const char*, const addrinfo*, addrinfo**) {
  return EAI_AGAIN;
}

}  // namespace

TEST_CASE("ssh: the connect timeout bounds the name lookup, TCP and handshake together") {
  SilentServer server;
  Config cfg("mute", server.port);
  SshOptions o;
  o.config_file = cfg.file;
  o.known_hosts = cfg.dir / "known_hosts";
  o.connect_timeout = 2s;
  o.lookup = lookup_after_1500ms;
  SshExecutor ssh("mute", "mute", o);
  auto t0 = std::chrono::steady_clock::now();
  auto r = ssh.run({{"true"}}, {});
  auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUnreachable);
  CHECK(r.error().message.find("mute: no answer from nobody@127.0.0.1:") == 0);
  CHECK(took >= 2s);
  CHECK(took < 3s);  // the lookup's 1.5 s counted in the 2 s, not added to them (3.5 s)

  // A lookup that does not answer: given up within the connect timeout, naming the name.
  o.connect_timeout = 1s;
  o.lookup = lookup_after_30s;
  SshExecutor dns("mute", "mute", o);
  t0 = std::chrono::steady_clock::now();
  r = dns.run({{"true"}}, {});
  took = std::chrono::steady_clock::now() - t0;
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUnreachable);
  CHECK(r.error().message ==
        fmt::format("mute: cannot connect to nobody@127.0.0.1:{}: no answer from the name lookup "
                    "of '127.0.0.1' within 1 s (connect timeout). Check the resolver "
                    "(/etc/resolv.conf) and the network, give the host's address (HostName in "
                    "the SSH config), or wait longer with --connect-timeout SECONDS",
                    server.port));
  CHECK(took < 2s);
}

TEST_CASE("ssh: a name that does not resolve ends with the caller's hint (a lab without --lab)") {
  Config cfg("other", unused_port());
  SshOptions o;
  o.config_file = cfg.file;
  o.known_hosts = cfg.dir / "known_hosts";
  o.lookup = lookup_no_server;
  o.unresolved_hint = "; if it is a host of a lab, add --lab default";
  CHECK(cc::remote::check_destination("h1", o).ok());  // no answer: left to the connection
  SshExecutor ssh("h1", "h1", o);
  auto r = ssh.run({{"true"}}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUnreachable);
  CHECK(r.error().message.starts_with("h1: cannot connect to "));
  CHECK(r.error().message.ends_with(
      fmt::format("could not resolve host name 'h1' ({}). Check the host name, or give it a Host "
                  "entry with HostName in the SSH config (-F); if it is a host of a lab, add "
                  "--lab default",
                  ::gai_strerror(EAI_AGAIN))));
  // A name that certainly does not exist, found before connecting, ends with it too.
  o.lookup = ::getaddrinfo;
  auto none = cc::remote::check_destination("h9.invalid", o);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message.ends_with("; if it is a host of a lab, add --lab default"));
  // A refused connection is no naming problem: no hint.
  SshExecutor refused("other", "other", o);
  auto rr = refused.run({{"true"}}, {});
  REQUIRE_FALSE(rr.ok());
  CHECK(rr.error().message.find("add --lab") == std::string::npos);
}

TEST_CASE("ssh: Ctrl-C while connecting ends the attempt at once") {
  SilentServer server;
  Config cfg("mute", server.port);
  SshOptions o;
  o.config_file = cfg.file;
  o.known_hosts = cfg.dir / "known_hosts";
  o.connect_timeout = 30s;
  SshExecutor ssh("mute", "mute", o);
  std::thread ctrl_c([] {
    std::this_thread::sleep_for(200ms);
    cc::util::set_interrupted(true);
  });
  auto t0 = std::chrono::steady_clock::now();
  auto r = ssh.run({{"true"}}, {});
  ctrl_c.join();
  cc::util::set_interrupted(false);
  // Far below the 30 s connect timeout: the attempt ended because of Ctrl-C, not the timeout
  // (a generous bound: CI machines are loaded).
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kInterrupted);
}

TEST_CASE("ssh: a missing -F file and malformed commands are usage errors") {
  SshOptions o;
  o.config_file = "/nonexistent/ssh_config";
  SshExecutor ssh("h1", "h1", o);
  auto r = ssh.run({{"true"}}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUsage);
  CHECK(r.error().message.find("/nonexistent/ssh_config") != std::string::npos);
  r = ssh.run({{}}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUsage);
  CHECK(r.error().message.rfind("h1: ", 0) == 0);
  r = ssh.run({{"a", "b"}, true}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUsage);
  auto up = ssh.upload("/nonexistent/file", "/tmp/x", 0644, 1s);
  REQUIRE_FALSE(up.ok());
  CHECK(up.error().code == ExitCode::kUsage);
  CHECK(up.error().message.find("/nonexistent/file") != std::string::npos);
}

TEST_CASE("ssh: libssh's ProxyJump command gets our config, known_hosts and no prompts") {
  using cc::remote::jump_proxy_command;
  SshOptions o;
  // libssh 0.10 ran `ssh -W '[%h]:%p' bastion` with ~/.ssh/config: bastion, a Host of -F's
  // file, was unknown there and the connection was "reset by peer".
  CHECK(jump_proxy_command("ssh -W '[%h]:%p' bastion", o) ==
        "ssh -o BatchMode=yes -W '[%h]:%p' bastion");
  o.config_file = "/etc/lab dir/ssh_config";
  o.known_hosts = "/etc/lab dir/known_hosts";
  CHECK(jump_proxy_command("ssh -l admin -p 2222 -J next -W '[%h]:%p' bastion", o) ==
        "ssh -F '/etc/lab dir/ssh_config' -o 'UserKnownHostsFile=/etc/lab dir/known_hosts' -o "
        "GlobalKnownHostsFile=/dev/null -o BatchMode=yes -l admin -p 2222 -J next -W "
        "'[%h]:%p' bastion");
  // A ProxyCommand the operator wrote is theirs.
  CHECK(jump_proxy_command("nc -X 5 -x proxy:1080 %h %p", o) == "nc -X 5 -x proxy:1080 %h %p");
  CHECK(jump_proxy_command("ssh -W %h:%p bastion", o) == "ssh -W %h:%p bastion");
  // libssh expands % in the whole line: a path with one is left out.
  o.config_file = "/tmp/100%/ssh_config";
  o.known_hosts.reset();
  CHECK(jump_proxy_command("ssh -W '[%h]:%p' b", o) == "ssh -o BatchMode=yes -W '[%h]:%p' b");
}

TEST_CASE("ssh: the remote shell's pid report is taken out of stderr") {
  using cc::remote::take_pid_report;
  CHECK(cc::remote::with_pid_report("uname -n") == "echo clusterctl-pid=$$ >&2; uname -n");
  std::string err = "clusterctl-pid=4242\nwarning: x\n";
  CHECK(take_pid_report(err) == 4242);
  CHECK(err == "warning: x\n");
  err = "clusterctl-pid=42";  // line not complete yet
  CHECK(take_pid_report(err) == 0);
  CHECK(err == "clusterctl-pid=42");
  err = "bashrc says hi\nclusterctl-pid=77\nreal\n";  // a startup file printed first
  CHECK(take_pid_report(err) == 77);
  CHECK(err == "bashrc says hi\nreal\n");
  err = "";
  CHECK(take_pid_report(err) == 0);
  err = "clusterctl-pid=abc\n";
  CHECK(take_pid_report(err) == -1);
  err = std::string(70'000, 'x');
  CHECK(take_pid_report(err) == -1);
}

TEST_CASE("ssh: configured_host_name is the HostName ssh reaches, never the config's alias") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("cc-sshcfg-host-{}", ::getpid());
  fs::create_directories(dir);
  const fs::path config = dir / "ssh_config";
  REQUIRE(cc::util::write_file_atomic(config,
                                      "Host node1\n  HostName 10.0.0.1\n"
                                      "Host node6\n  HostName 2001:db8::5\n"
                                      "Host jumped\n  HostName 10.9.0.3\n"
                                      "  ProxyCommand ssh -W %h:%p bastion\n")
              .ok());
  SshOptions o;
  o.config_file = config;
  CHECK(cc::remote::configured_host_name("node1", o) == "10.0.0.1");
  CHECK(cc::remote::configured_host_name("root@node1", o) == "10.0.0.1");
  CHECK(cc::remote::configured_host_name("node6", o) == "2001:db8::5");
  CHECK(cc::remote::configured_host_name("jumped", o) == "10.9.0.3");
  CHECK(cc::remote::configured_host_name("studio2", o) == "studio2");  // no entry: itself
  CHECK(cc::remote::configured_host_name("root@studio2", o) == "studio2");
  o.config_file = dir / "missing_config";
  CHECK_FALSE(cc::remote::configured_host_name("node1", o).has_value());
  fs::remove_all(dir);
}

TEST_CASE("ssh: check_destination tells a name that does not exist from one that may connect") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("cc-sshcfg-{}", ::getpid());
  fs::create_directories(dir);
  const fs::path config = dir / "ssh_config";
  REQUIRE(cc::util::write_file_atomic(config,
                                      "Host h1\n  HostName 127.0.0.1\n  Port 9\n"
                                      "Host badname\n  HostName nowhere.invalid\n"
                                      "Host jumped\n  HostName nowhere.invalid\n"
                                      "  ProxyCommand ssh -W %h:%p bastion\n")
              .ok());
  SshOptions o;
  o.config_file = config;
  CHECK(cc::remote::check_destination("h1", o).ok());            // a Host entry
  CHECK(cc::remote::check_destination("127.0.0.1", o).ok());     // an address
  CHECK(cc::remote::check_destination("root@h1", o).ok());       // with a user
  CHECK(cc::remote::check_destination("jumped", o).ok());        // resolved behind the proxy
  auto none = cc::remote::check_destination("h9.invalid", o);    // neither
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == ExitCode::kUsage);
  CHECK(none.error().message.starts_with(
      fmt::format("no host 'h9.invalid' in {}, and no host of that name", config.string())));
  // A scoped IPv6 address, bracketed or not, as ssh(1) takes it: with an interface of ours.
  char ifname[IF_NAMESIZE] = {};
  REQUIRE(::if_indextoname(1, ifname) != nullptr);  // loopback: lo, lo0
  for (const char* form : {"fe80::1%{}", "root@fe80::1%{}", "[fe80::1%{}]"}) {
    const std::string dest = fmt::format(fmt::runtime(form), ifname);
    CAPTURE(dest);
    CHECK(cc::remote::check_destination(dest, o).ok());
  }
  auto scope = cc::remote::check_destination("fe80::1%nosuchif9", o);
  REQUIRE_FALSE(scope.ok());
  CHECK(scope.error().code == ExitCode::kUsage);
  CHECK(scope.error().message.starts_with(
      "'fe80::1%nosuchif9' is not a valid SSH destination: its scope 'nosuchif9' is no network "
      "interface of this machine"));
  // A link-local address without its scope: the connection failed with "Invalid argument"
  // (exit 3, as if the host were down); it is the destination's mistake, found before connecting.
  REQUIRE(cc::util::write_file_atomic(dir / "ll_config", "Host ll\n  HostName fe80::1\n").ok());
  SshOptions ll_options;
  ll_options.config_file = dir / "ll_config";
  for (const char* dest : {"fe80::1", "root@fe80::1", "[fe80::1]", "ll"}) {
    CAPTURE(dest);
    auto ll = cc::remote::check_destination(dest, ll_options);
    REQUIRE_FALSE(ll.ok());
    CHECK(ll.error().code == ExitCode::kUsage);
    CHECK(ll.error().message.starts_with("'fe80::1' is a link-local IPv6 address without its "
                                         "scope"));
    CHECK(ll.error().message.find("so name that one, as ssh takes it (fe80::1%IF, e.g. "
                                  "fe80::1%en0;") != std::string::npos);
    CHECK((ll.error().message.find("(the HostName of 'll' in ") != std::string::npos) ==
          (std::string(dest) == "ll"));
  }
  CHECK(cc::remote::check_destination("2001:db8::1", ll_options).ok());  // global: no scope
  // The connection itself says the same (discover, health and verify-mesh probe without the
  // pre-check): exit 2 naming the scope, not "cannot connect ...: Invalid argument" (exit 3).
  for (const char* dest : {"fe80::1", "ll"}) {
    CAPTURE(dest);
    ll_options.known_hosts = dir / "known_hosts";
    SshExecutor ssh("h5", dest, ll_options);
    auto r = ssh.run({{"true"}}, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ExitCode::kUsage);
    CHECK(r.error().message.starts_with("h5: 'fe80::1' is a link-local IPv6 address without its "
                                        "scope"));
  }
  // HOST:PORT (mpirun -H, pdsh) and ssh:// URLs: the port belongs in the SSH config.
  for (const char* dest : {"root@10.0.0.1:2222", "studio1:22", "ssh://root@studio1:22"}) {
    CAPTURE(dest);
    SshExecutor ssh("a", dest, o);
    auto r = ssh.run({{"true"}}, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ExitCode::kUsage);
    CHECK(r.error().message.find(
              "is not a valid SSH destination: a port (or an ssh:// URL) is not part of a "
              "destination here: name a Host entry of the SSH config that gives it") !=
          std::string::npos);
  }
  // The executor's own check is the same, led by the host's name; it connects to nothing.
  const cc::remote::SshExecutor scoped("h2", "fe80::1%nosuchif9", o);
  auto own = scoped.check();
  REQUIRE_FALSE(own.ok());
  CHECK(own.error().code == ExitCode::kUsage);
  CHECK(own.error().message.starts_with(
      "h2: 'fe80::1%nosuchif9' is not a valid SSH destination: its scope 'nosuchif9'"));
  CHECK(cc::remote::SshExecutor("h1", "h1", o).check().ok());
  // A config that does not exist is found before connecting too.
  SshOptions missing = o;
  missing.config_file = dir / "nowhere" / "ssh_config";
  auto no_config = cc::remote::SshExecutor("h1", "h1", missing).check();
  REQUIRE_FALSE(no_config.ok());
  CHECK(no_config.error().message.starts_with(
      fmt::format("h1: SSH config file {} does not exist", missing.config_file->string())));
  auto bad = cc::remote::check_destination("badname", o);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ExitCode::kUsage);
  CHECK(bad.error().message.starts_with(fmt::format(
      "no host 'badname': its HostName 'nowhere.invalid' in {} is no known host", config.string())));
  fs::remove_all(dir);
}
