// SshExecutor and fan_out against the lab's real sshd processes: authentication, host-key
// policy, timeouts, argument quoting, stdin, exit status, SFTP, parallel fan-out.
#include <chrono>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "remote/fan_out.h"
#include "remote/quote.h"
#include "tests/integration/ssh/lab_fixture.h"
#include "util/atomic_file.h"

using cc::remote::Command;
using cc::remote::RunOptions;
using cc::test::Lab;
using cc::test::local_ok;
using cc::test::TempDir;
using cc::util::ExitCode;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// known_hosts lines of the lab: "ADDRESS TYPE BASE64".
std::vector<std::string> known_lines(const Lab& lab) {
  auto text = cc::util::read_file(*lab.inventory.known_hosts);
  REQUIRE(text.ok());
  std::vector<std::string> lines;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  }
  REQUIRE(lines.size() == 8);
  return lines;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

// "SHA256:..." of the first key in a known_hosts-format file, as ssh-keygen computes it.
std::string fingerprint_of(const fs::path& known_hosts_file) {
  std::string out = local_ok({"ssh-keygen", "-l", "-f", known_hosts_file.string()});
  auto w = words(out);
  REQUIRE(w.size() >= 2);
  REQUIRE(w[1].rfind("SHA256:", 0) == 0);
  return w[1];
}

}  // namespace

TEST_CASE("ssh: public-key authentication, argv without a shell, session reuse") {
  Lab lab;
  auto h1 = lab.host(0);
  CHECK(h1->host() == "h1");
  auto r = h1->run({{"id", "-un"}}, {});
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  CHECK(r->exit_status == 0);
  CHECK(r->out == "root\n");
  CHECK(r->err == "");
  CHECK_FALSE(r->timed_out);
  // The same session serves more commands; the lab host has its own hostname.
  for (int i = 0; i < 3; ++i) {
    r = h1->run({{"uname", "-n"}}, {});
    REQUIRE(r.ok());
    CHECK(r->out == "h1\n");
  }
  r = h1->run({{"sh -c 'echo out; echo err >&2'"}, true}, {});
  REQUIRE(r.ok());
  CHECK(r->out == "out\n");
  CHECK(r->err == "err\n");
}

TEST_CASE("ssh: an unknown host key is refused with its fingerprint, then accepted on request") {
  Lab lab;
  TempDir tmp;
  auto lines = known_lines(lab);
  // The true fingerprint of h1's key, from the lab's own record of it.
  REQUIRE(cc::util::write_file_atomic(tmp.path / "h1_only", lines[0] + "\n").ok());
  const std::string fingerprint = fingerprint_of(tmp.path / "h1_only");

  for (bool file_exists : {true, false}) {
    CAPTURE(file_exists);
    fs::path known = tmp.path / (file_exists ? "empty_known_hosts" : "sub/missing_known_hosts");
    if (file_exists) REQUIRE(cc::util::write_file_atomic(known, "").ok());
    auto o = lab.options();
    o.known_hosts = known;
    auto refused = lab.host(0, o)->run({{"true"}}, {});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ExitCode::kUnreachable);
    const std::string& m = refused.error().message;
    CHECK(m.rfind("h1: ", 0) == 0);
    CHECK(m.find(fingerprint) != std::string::npos);
    CHECK(m.find("--accept-new-host-keys") != std::string::npos);
    CHECK(m.find(known.string()) != std::string::npos);

    o.accept_new_host_keys = true;
    auto accepted = lab.host(0, o)->run({{"uname", "-n"}}, {});
    REQUIRE_MESSAGE(accepted.ok(), (accepted.ok() ? "" : accepted.error().message));
    CHECK(accepted->out == "h1\n");
    auto text = cc::util::read_file(known);
    REQUIRE(text.ok());
    CHECK(text->find(words(lines[0])[2]) != std::string::npos);  // the key's base64 was added
    CHECK(fingerprint_of(known) == fingerprint);

    // Now known: accepted without the flag.
    o.accept_new_host_keys = false;
    auto again = lab.host(0, o)->run({{"true"}}, {});
    CHECK(again.ok());
  }
}

TEST_CASE("ssh: 8 hosts accepting new keys at once all land in one known_hosts, mode kept") {
  Lab lab;
  TempDir tmp;
  const fs::path known = tmp.path / "known_hosts";
  REQUIRE(cc::util::write_file_atomic(known, "# operator's own comment\n", 0600).ok());
  auto o = lab.options();
  o.known_hosts = known;
  o.accept_new_host_keys = true;
  std::vector<std::unique_ptr<cc::remote::SshExecutor>> hosts;
  std::vector<cc::remote::Executor*> ptrs;
  for (size_t i = 0; i < 8; ++i) {
    hosts.push_back(lab.host(i, o));
    ptrs.push_back(hosts.back().get());
  }
  auto outcomes = cc::remote::fan_out(ptrs, {{"true"}}, {}, {});
  for (const auto& out : outcomes) {
    CHECK_MESSAGE(out.result.ok(), out.host);
  }
  auto text = cc::util::read_file(known);
  REQUIRE(text.ok());
  CHECK(text->rfind("# operator's own comment\n", 0) == 0);
  for (const auto& line : known_lines(lab)) {
    CHECK_MESSAGE(text->find(words(line)[2]) != std::string::npos, line);  // each host's key
  }
  CHECK((fs::status(known).permissions() & fs::perms::mask) ==
        (fs::perms::owner_read | fs::perms::owner_write));
}

TEST_CASE("ssh: a changed host key is always refused and known_hosts is left alone") {
  Lab lab;
  TempDir tmp;
  auto lines = known_lines(lab);
  auto h1 = words(lines[0]);
  auto h2 = words(lines[1]);
  // h1's address recorded with h2's key (same type: "changed").
  fs::path changed = tmp.path / "known_hosts_changed";
  const std::string changed_text = h1[0] + " " + h2[1] + " " + h2[2] + "\n";
  REQUIRE(cc::util::write_file_atomic(changed, changed_text).ok());
  // h1's address recorded with a key of another type ("other").
  local_ok({"ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-f", (tmp.path / "ecdsa").string()});
  auto ecdsa = cc::util::read_file(tmp.path / "ecdsa.pub");
  REQUIRE(ecdsa.ok());
  auto ew = words(*ecdsa);
  fs::path other = tmp.path / "known_hosts_other";
  const std::string other_text = h1[0] + " " + ew[0] + " " + ew[1] + "\n";
  REQUIRE(cc::util::write_file_atomic(other, other_text).ok());

  for (const auto& entry : {std::pair{changed, changed_text}, {other, other_text}}) {
    const fs::path& file = entry.first;  // (no structured binding: CAPTURE needs a variable)
    const std::string& text = entry.second;
    for (bool accept : {false, true}) {
      CAPTURE(file);
      CAPTURE(accept);
      auto o = lab.options();
      o.known_hosts = file;
      o.accept_new_host_keys = accept;
      auto r = lab.host(0, o)->run({{"true"}}, {});
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().code == ExitCode::kUnreachable);
      const std::string& m = r.error().message;
      CHECK(m.rfind("h1: REFUSED: ", 0) == 0);
      CHECK(m.find(file.string()) != std::string::npos);
      CHECK(m.find("ssh-keygen -R '" + h1[0] + "' -f " + file.string()) != std::string::npos);
      auto after = cc::util::read_file(file);
      REQUIRE(after.ok());
      CHECK(*after == text);
    }
  }
}

TEST_CASE("ssh: a command past its timeout is killed, output so far kept, session reusable") {
  Lab lab;
  auto h2 = lab.host(1);
  RunOptions o;
  o.timeout = 1s;
  auto t0 = std::chrono::steady_clock::now();
  auto r = h2->run({{"sh", "-c", "echo started; exec sleep 30.4242"}}, o);
  auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE(r.ok());
  CHECK(r->timed_out);
  CHECK(r->exit_status == -1);
  CHECK(r->out == "started\n");
  CHECK(took >= 1s);
  CHECK(took < 4s);  // ~1.1 s alone; generous for ctest -j on two loaded cores
  // The remote sleep got KILL (sshd >= 7.9 honours signal requests).
  bool gone = false;
  for (int i = 0; i < 20 && !gone; ++i) {
    auto p = h2->run({{"pgrep", "-f", "sleep 30[.]4242"}}, {});  // [.]: not itself
    REQUIRE(p.ok());
    gone = p->exit_status == 1;
    if (!gone) std::this_thread::sleep_for(100ms);
  }
  CHECK(gone);
  auto next = h2->run({{"echo", "still here"}}, {});
  REQUIRE(next.ok());
  CHECK(next->out == "still here\n");
}

TEST_CASE("ssh: hostile arguments reach the remote program byte for byte, and run nothing") {
  Lab lab;
  auto h3 = lab.host(2);
  const std::string pwned = "/tmp/cc-ssh-pwned-" + std::to_string(::getpid());
  std::vector<std::string> hostile = {"two words",
                                      "it's",
                                      "\"double\"",
                                      "$(touch " + pwned + ")",
                                      "`touch " + pwned + "`",
                                      "line1\nline2",
                                      "tab\there",
                                      "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                                      "",
                                      ";rm -rf x",
                                      "*",
                                      "/*",
                                      "~",
                                      "$HOME",
                                      "${PATH}",
                                      "\\",
                                      "'\\''",
                                      "!",
                                      "a&&b||c",
                                      "<in >out 2>&1",
                                      "{a,b}",
                                      "-n",
                                      "--",
                                      "%s",
                                      "\r\n",
                                      " leading and trailing ",
                                      "\x01\x7f\xff",
                                      "#comment"};
  std::vector<std::string> argv = {"printf", "%s\\0"};
  argv.insert(argv.end(), hostile.begin(), hostile.end());
  auto r = h3->run({argv}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  CHECK(r->err == "");
  std::vector<std::string> got;
  size_t start = 0;
  for (size_t nul = r->out.find('\0'); nul != std::string::npos; nul = r->out.find('\0', start)) {
    got.push_back(r->out.substr(start, nul - start));
    start = nul + 1;
  }
  CHECK(start == r->out.size());
  REQUIRE(got.size() == hostile.size());
  for (size_t i = 0; i < hostile.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == hostile[i]);
  }
  auto check = h3->run({{"test", "-e", pwned}}, {});
  REQUIRE(check.ok());
  CHECK(check->exit_status == 1);
  CHECK_FALSE(fs::exists(pwned));
}

TEST_CASE("ssh: stdin is delivered whole, then EOF") {
  Lab lab;
  auto h4 = lab.host(3);
  std::string data;
  for (unsigned i = 0; i < 300'000; ++i) data += static_cast<char>((i * 7919u) % 256u);  // NULs too
  RunOptions o;
  o.stdin_data = data;
  auto r = h4->run({{"cat"}}, o);
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  CHECK(r->out.size() == data.size());
  CHECK(r->out == data);
  o.stdin_data = "a\nb\nc\n";
  r = h4->run({{"wc", "-l"}}, o);
  REQUIRE(r.ok());
  CHECK(r->out == "3\n");
  r = h4->run({{"cat"}}, {});  // no stdin: EOF at once, no hang
  REQUIRE(r.ok());
  CHECK(r->out == "");
}

TEST_CASE("ssh: exit status and death by signal come through") {
  Lab lab;
  auto h5 = lab.host(4);
  auto r = h5->run({{"exit 7"}, true}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 7);
  r = h5->run({{"false"}}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 1);
  r = h5->run({{"sh", "-c", "kill -9 $$"}}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 137);
  r = h5->run({{"clusterctl-no-such-program"}}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 127);
  CHECK(r->err.find("clusterctl-no-such-program") != std::string::npos);
}

TEST_CASE("ssh: fan-out over the 8 hosts returns each host's own answer, in order") {
  Lab lab;
  std::vector<std::unique_ptr<cc::remote::SshExecutor>> hosts;
  std::vector<cc::remote::Executor*> ptrs;
  for (size_t i = 0; i < 8; ++i) {
    hosts.push_back(lab.host(i));
    ptrs.push_back(hosts.back().get());
  }
  auto t0 = std::chrono::steady_clock::now();
  auto outcomes = cc::remote::fan_out(ptrs, {{"sh", "-c", "sleep 1; uname -n"}}, {}, {});
  auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took < 5s);  // in parallel: 8 x 1 s in sequence would be 8 s
  REQUIRE(outcomes.size() == 8);
  std::set<std::string> names;
  for (size_t i = 0; i < 8; ++i) {
    CHECK(outcomes[i].host == lab.inventory.hosts[i].name);
    REQUIRE_MESSAGE(outcomes[i].result.ok(), outcomes[i].host);
    CHECK(outcomes[i].result->out == lab.inventory.hosts[i].name + "\n");
    names.insert(outcomes[i].result->out);
  }
  CHECK(names.size() == 8);
}

TEST_CASE("ssh: SFTP upload sets the mode, replaces atomically, leaves no temporary file") {
  Lab lab;
  auto h6 = lab.host(5);
  TempDir tmp;
  const std::string remote = "/tmp/cc-ssh-upload-" + std::to_string(::getpid());
  std::string big(200'000, 'z');
  big += "#!/bin/sh\n";
  REQUIRE(cc::util::write_file_atomic(tmp.path / "a", big).ok());
  REQUIRE(h6->upload(tmp.path / "a", remote, 0751, 10s).ok());
  auto r = h6->run({{"stat", "-c", "%a %s", remote}}, {});
  REQUIRE(r.ok());
  CHECK(r->out == "751 " + std::to_string(big.size()) + "\n");
  REQUIRE(cc::util::write_file_atomic(tmp.path / "b", "second\n").ok());
  REQUIRE(h6->upload(tmp.path / "b", remote, 0600, 10s).ok());
  r = h6->run({{"sh", "-c", "stat -c %a \"$1\"; cat \"$1\"; ls /tmp | grep -c clusterctl-tmp", "sh",
                remote}},
              {});
  REQUIRE(r.ok());
  CHECK(r->out == "600\nsecond\n0\n");
  auto bad = h6->upload(tmp.path / "b", "/nonexistent-dir/x", 0644, 10s);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ExitCode::kUsage);
  CHECK(bad.error().message.find("h6: upload of") == 0);
  CHECK(bad.error().message.find("/nonexistent-dir/x") != std::string::npos);
  h6->run({{"rm", "-f", remote}}, {}).ok();
}

TEST_CASE("ssh: a host with no sshd is reported within the connect timeout") {
  Lab lab;
  TempDir tmp;
  // An address in the lab's subnet that no host has.
  std::string addr = lab.inventory.hosts[0].address;
  addr = addr.substr(0, addr.rfind('.')) + ".200";
  REQUIRE(cc::util::write_file_atomic(tmp.path / "ssh_config",
                                      "Host ghost\n  HostName " + addr + "\n  User root\n")
              .ok());
  cc::remote::SshOptions o;
  o.config_file = tmp.path / "ssh_config";
  o.known_hosts = tmp.path / "known_hosts";
  o.connect_timeout = 1s;
  cc::remote::SshExecutor ghost("ghost", "ghost", o);
  auto t0 = std::chrono::steady_clock::now();
  auto r = ghost.run({{"true"}}, {});
  CHECK(std::chrono::steady_clock::now() - t0 < 4s);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUnreachable);
  CHECK(r.error().message.rfind("ghost: ", 0) == 0);
  CHECK(r.error().message.find(addr) != std::string::npos);
}
