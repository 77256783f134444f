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
