#include "remote/ssh_config_scan.h"

#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "tests/temp_dir.h"
#include "util/atomic_file.h"

namespace fs = std::filesystem;
using cc::remote::ConfigLine;
using cc::remote::match_note;
using cc::remote::ssh_config_match_lines;
using cc::test::TempDir;

namespace {

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  REQUIRE(cc::util::write_file_atomic(p, text).ok());
}

std::string where(const std::vector<ConfigLine>& lines) {
  std::string out;
  for (const auto& l : lines) {
    out += l.file.filename().string() + ":" + std::to_string(l.line) + ": " + l.text + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("ssh config scan: Match lines of the file and of what it Includes, in reading order") {
  TempDir d{"cc-sshcfg"};
  const fs::path home = d.path / "home", base = home / ".ssh";
  write(base / "config",
        "# Match in a comment is no Match\n"
        "Host h1\n"
        "  HostName 10.0.0.1\n"
        "  Include conf.d/*.conf\n"
        "\n"
        "   match host h2 exec \"true\"\n"
        "  User admin\n"
        "Include ~/extra \"/nonexistent/x\"\n"
        "MATCH=final all\n"
        "Matches yes\n");
  write(base / "conf.d" / "b.conf", "Match user root\n");
  write(base / "conf.d" / "a.conf", "Host x\nInclude=nested\n");  // relative: to ~/.ssh
  write(base / "nested", "Port 22\nMatch originalhost h3\n");
  write(home / "extra", "Match canonical all\n");
  const auto lines = ssh_config_match_lines(base / "config", base, home);
  CHECK(where(lines) ==
        "nested:2: Match originalhost h3\n"   // conf.d/a.conf, before b.conf (glob order)
        "b.conf:1: Match user root\n"
        "config:6: match host h2 exec \"true\"\n"
        "extra:1: Match canonical all\n"      // ~/ is the home given
        "config:9: MATCH=final all\n");
  REQUIRE(lines.size() == 5);
  CHECK(lines[2].file == base / "config");
  // No Match anywhere: nothing; a missing file: nothing (libssh skips it too).
  write(d.path / "plain", "Host *\n  User me\n");
  CHECK(ssh_config_match_lines(d.path / "plain", base, home).empty());
  CHECK(ssh_config_match_lines(d.path / "missing", base, home).empty());
  // An Include of itself stops at libssh's depth (16), not in a loop.
  write(d.path / "loop", "Include loop\nMatch all\n");
  CHECK(ssh_config_match_lines(d.path / "loop", d.path, home).size() == 17);
}

TEST_CASE("ssh config scan: the note names each place and says what to write instead") {
  CHECK(match_note({}).empty());
  const std::string one = match_note({{"/h/.ssh/config", 6, "Match host h2"}});
  CHECK(one.starts_with("note: the SSH config has `Match` here:\n  /h/.ssh/config:6: Match host "
                        "h2\nclusterctl connects with libssh, which reads Match blocks otherwise "
                        "than ssh: "));
  CHECK(one.find("skips `canonical` and `final`") != std::string::npos);
  CHECK(one.find("never applies `originalhost`") != std::string::npos);
  CHECK(one.ends_with("put what a host needs in a `Host` block, or give it in an inventory "
                      "(`ssh: user@address`, `address:`)"));
  std::vector<ConfigLine> many;
  for (std::size_t i = 1; i <= 7; ++i) many.push_back({"c", i, "Match all"});
  const std::string seven = match_note(many);
  CHECK(seven.starts_with("note: the SSH config has `Match` in these places:\n  c:1: Match all\n"));
  CHECK(seven.find("\n  c:5: Match all\n  and 2 more\n") != std::string::npos);
  CHECK(seven.find("c:6:") == std::string::npos);
}

TEST_CASE("ssh config scan: negated Host patterns after another, Includes of several paths") {
  // libssh 0.10.6 (checked with ssh_options_parse_config beside `ssh -G`): `Host * !studio2`
  // applies to studio2, and `Include a.conf b.conf` reads a.conf alone.
  TempDir d{"cc-sshcfg"};
  const fs::path home = d.path / "home", base = home / ".ssh";
  write(base / "config",
        "Host * !studio2\n"
        "  User negated\n"
        "Host !studio2 *\n"  // negation first: both read it alike
        "Host a b\n"
        "host=x,y !z\n"
        "Include a.conf b.conf\n"
        "Include \"c.conf\"\n");
  write(base / "a.conf", "Match all\n");
  write(base / "b.conf", "Match user root\n");  // libssh never reads it: no Match to note
  write(base / "c.conf", "Host q\n");
  const cc::remote::ConfigScan scan = cc::remote::scan_ssh_config(base / "config", base, home);
  CHECK(where(scan.negation_after_pattern) == "config:1: Host * !studio2\nconfig:5: host=x,y !z\n");
  CHECK(where(scan.several_includes) == "config:6: Include a.conf b.conf\n");
  CHECK(where(scan.match) == "a.conf:1: Match all\n");
  const std::string notes = cc::remote::scan_notes(scan);
  CHECK(notes.starts_with("note: the SSH config has `Match` here:\n  " +
                          (base / "a.conf").string() + ":1: Match all\n"));
  CHECK(notes.find("\nnote: the SSH config has a `Host` line with a negated pattern after "
                   "another pattern in these places:\n  " +
                   (base / "config").string() + ":1: Host * !studio2\n  " +
                   (base / "config").string() +
                   ":5: host=x,y !z\nclusterctl connects with libssh, which takes a Host line's "
                   "first pattern that matches and never looks at the negated ones after it: it "
                   "applies `Host * !studio2` to studio2, where ssh does not. Put the negated "
                   "patterns first (`Host !studio2 *`), which both read alike\n") !=
        std::string::npos);
  CHECK(notes.ends_with("\nnote: the SSH config has an `Include` of several paths here:\n  " +
                        (base / "config").string() +
                        ":6: Include a.conf b.conf\nclusterctl connects with libssh, which reads "
                        "the first path of an Include line alone, where ssh reads them all: the "
                        "Host blocks of the others do not apply to clusterctl. Write one Include "
                        "line per path"));
  CHECK(cc::remote::scan_notes({}).empty());
}

TEST_CASE("ssh config scan: Host lines after a HostName, matched by libssh against it") {
  // libssh 0.10.6 (ssh_options_parse_config beside `ssh -G`): for studio1, libssh logs in as
  // viaaddr on port 2222, ssh as admin on port 22.
  TempDir d{"cc-sshcfg"};
  const fs::path home = d.path / "home", base = home / ".ssh";
  write(base / "config",
        "Host studio1\n"
        "  HostName 192.168.1.10\n"
        "Host studio*\n"
        "  User admin\n"
        "Host 192.168.1.*\n"
        "  Port 2222\n"
        "Host *\n"  // takes both names: no difference
        "  User viaaddr\n"
        "Host studio2\n"
        "  HostName %h.lan\n"
        "Host other\n"
        "  Include other.conf\n"  // libssh reads it only for `other`
        "Host studio2.lan\n"
        "  User lan\n");
  write(base / "other.conf", "Host 192.168.1.10\n");
  using cc::remote::host_lines_after_hostname;
  const auto one = host_lines_after_hostname(base / "config", base, home, "admin@STUDIO1");
  REQUIRE(one.size() == 2);
  CHECK(one[0].host.line == 3);
  CHECK(one[0].hostname.line == 2);
  CHECK(one[0].matched == "192.168.1.10");
  CHECK_FALSE(one[0].libssh_applies);
  CHECK(one[1].host.line == 5);
  CHECK(one[1].libssh_applies);
  // %h is the name given, as in ssh; the Host lines after it are matched against the result.
  const auto two = host_lines_after_hostname(base / "config", base, home, "studio2");
  REQUIRE(two.size() == 1);
  CHECK(two[0].host.line == 13);
  CHECK(two[0].matched == "studio2.lan");
  CHECK(two[0].libssh_applies);
  // No HostName applies: every Host line is matched against the name given, as in ssh.
  CHECK(host_lines_after_hostname(base / "config", base, home, "studio3").empty());
  CHECK(host_lines_after_hostname(d.path / "missing", base, home, "studio1").empty());

  const std::string note = cc::remote::host_after_hostname_note("studio2", two);
  CHECK(note ==
        "note: for studio2, the SSH config has `Host` lines after its HostName that clusterctl "
        "reads otherwise than ssh:\n  " +
            (base / "config").string() + ":13: Host studio2.lan (matched against studio2.lan, "
            "the HostName of " + (base / "config").string() + ":10: clusterctl applies this "
            "block, ssh does not)\nclusterctl connects with libssh, which matches the Host "
            "lines after a HostName against that HostName, where ssh matches every Host line "
            "against the name given (studio2); so clusterctl may reach another address, user "
            "or port than `ssh studio2` (see `ssh -G studio2`). To be sure both agree, put what "
            "studio2 needs in the block that sets its HostName or before it, or give it in an "
            "inventory (`ssh: user@address`, `address:`)");
  CHECK(cc::remote::host_after_hostname_note("studio3", {}).empty());
}
