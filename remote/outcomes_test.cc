#include "remote/outcomes.h"

#include <doctest/doctest.h>

using cc::remote::CommandResult;
using cc::remote::HostOutcome;
using cc::util::ExitCode;

namespace {

HostOutcome ran(std::string host, int status, std::string out, std::string err = "",
                bool timed_out = false) {
  CommandResult r;
  r.exit_status = status;
  r.out = std::move(out);
  r.err = std::move(err);
  r.timed_out = timed_out;
  return HostOutcome{std::move(host), r};
}

HostOutcome failed(std::string host, ExitCode code) {
  std::string msg = host + ": cannot connect to root@10.0.0.2:22: Connection refused";
  return HostOutcome{std::move(host), cc::util::error(code, msg)};
}

}  // namespace

TEST_CASE("group_outputs collapses identical outputs in order of first appearance") {
  std::vector<HostOutcome> o;
  o.push_back(ran("h1", 0, "Linux\n"));
  o.push_back(ran("h2", 0, "Darwin\n", "warning\n"));
  o.push_back(ran("h3", 0, "Linux\n", "warning\n"));
  o.push_back(ran("h4", 0, ""));
  o.push_back(failed("h5", ExitCode::kUnreachable));
  auto out = cc::remote::group_outputs(o, false);
  REQUIRE(out.size() == 2);
  CHECK(out[0].hosts == std::vector<std::string>{"h1", "h3"});
  CHECK(out[0].text == "Linux\n");
  CHECK(out[1].hosts == std::vector<std::string>{"h2"});
  CHECK(cc::remote::hosts_label(out[0].hosts) == "h1,h3 (2)");
  auto err = cc::remote::group_outputs(o, true);
  REQUIRE(err.size() == 1);
  CHECK(err[0].hosts == std::vector<std::string>{"h2", "h3"});
  CHECK(err[0].text == "warning\n");
}

TEST_CASE("problem_lines and summary_line say what went wrong where") {
  std::vector<HostOutcome> o;
  o.push_back(ran("h1", 0, "x"));
  o.push_back(ran("h2", 7, ""));
  o.push_back(ran("h3", -1, "partial", "", true));
  o.push_back(ran("h4", 7, ""));
  o.push_back(failed("h5", ExitCode::kUnreachable));
  auto lines = cc::remote::problem_lines(o, 2.5);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "h2,h4: exit status 7");
  CHECK(lines[1] == "h3: timed out after 2.5 s (killed)");
  CHECK(lines[2] == "h5: cannot connect to root@10.0.0.2:22: Connection refused");
  CHECK(cc::remote::summary_line(o) ==
        "exec: 5 hosts, 1 exit 0, 2 non-zero, 1 timed out, 1 unreachable");
  CHECK(cc::remote::problem_lines({ran("h1", 0, "")}, 1).empty());
}

TEST_CASE("problem_lines: exit 127 says why a command is not found over SSH and what to do") {
  // ompi#599, #8870: a program on the login shell's PATH only; exec said "exit status 127".
  auto lines = cc::remote::problem_lines({ran("h1", 127, ""), ran("h2", 127, "")}, 1);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] ==
        "h1,h2: exit status 127 (command not found: a non-interactive SSH session reads no login "
        "profile (~/.zprofile, ~/.bash_profile, conda activate), so ~/.local/bin, "
        "/opt/homebrew/bin or a conda or venv bin directory is often missing from its PATH: "
        "give the absolute path, or `--shell -- 'export PATH=DIR:$PATH; CMD'`)");
}

TEST_CASE("exec_exit_status: unreachable first, then the worst remote status") {
  CHECK(cc::remote::exec_exit_status({}) == 0);
  CHECK(cc::remote::exec_exit_status({ran("a", 0, ""), ran("b", 0, "")}) == 0);
  CHECK(cc::remote::exec_exit_status({ran("a", 1, ""), ran("b", 7, ""), ran("c", 0, "")}) == 7);
  CHECK(cc::remote::exec_exit_status({ran("a", 1, ""), ran("b", -1, "", "", true)}) == 124);
  CHECK(cc::remote::exec_exit_status({ran("a", 200, ""), ran("b", -1, "", "", true)}) == 200);
  CHECK(cc::remote::exec_exit_status({ran("a", -1, "")}) == 255);
  CHECK(cc::remote::exec_exit_status({ran("a", 200, ""), failed("b", ExitCode::kUnreachable)}) ==
        3);
  CHECK(cc::remote::exec_exit_status({ran("a", 9, ""), failed("b", ExitCode::kUsage)}) == 2);
  CHECK(cc::remote::exec_exit_status(
            {failed("a", ExitCode::kUnreachable), failed("b", ExitCode::kInterrupted)}) == 130);
}

TEST_CASE("outcomes_json has one object per host with the documented keys") {
  std::vector<HostOutcome> o;
  o.push_back(ran("h1", 0, "a\"b\n", "\xff"));
  o.push_back(ran("h2", -1, "part", "", true));
  o.push_back(failed("h3", ExitCode::kUnreachable));
  std::string expected =
      "[\n"
      "  {\n"
      "    \"host\": \"h1\",\n"
      "    \"exit_status\": 0,\n"
      "    \"timed_out\": false,\n"
      "    \"stdout\": \"a\\\"b\\n\",\n"
      "    \"stderr\": \"\xef\xbf\xbd\",\n"
      "    \"error\": null\n"
      "  },\n"
      "  {\n"
      "    \"host\": \"h2\",\n"
      "    \"exit_status\": null,\n"
      "    \"timed_out\": true,\n"
      "    \"stdout\": \"part\",\n"
      "    \"stderr\": \"\",\n"
      "    \"error\": null\n"
      "  },\n"
      "  {\n"
      "    \"host\": \"h3\",\n"
      "    \"exit_status\": null,\n"
      "    \"timed_out\": false,\n"
      "    \"stdout\": \"\",\n"
      "    \"stderr\": \"\",\n"
      "    \"error\": \"h3: cannot connect to root@10.0.0.2:22: Connection refused\"\n"
      "  }\n"
      "]";
  CHECK(cc::remote::outcomes_json(o) == expected);
}

TEST_CASE("problem_lines: a script whose #! interpreter is missing names it, not PATH") {
  // A script that is there, run by an interpreter that is not, was "command not found" with
  // PATH advice (exit 127), or a bare "exit status 126".
  auto lines = cc::remote::problem_lines(
      {ran("h1", 126, "", "bash: ./run.sh: /usr/bin/python9: bad interpreter: No such file or "
                          "directory\n"),
       ran("h2", 127, "", "/usr/bin/env: \u2018python9\u2019: No such file or directory\n"),
       ran("h3", 126, "", "zsh:1: ./run.sh: bad interpreter: /bin/bash\r: no such file or "
                          "directory\n"),
       ran("h4", 127, "", "bash: line 1: ./my run.sh: cannot execute: required file not found\n")},
      1);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] ==
        "h1: exit status 126 (interpreter not found: the interpreter /usr/bin/python9 named on "
        "the #! line of ./run.sh is missing there (the script itself was found): install it, or "
        "change that line to an interpreter the host has (`#!/usr/bin/env python3` finds one in "
        "PATH))");
  CHECK(lines[1] ==
        "h2: exit status 127 (interpreter not found: the interpreter python9 named on the #! "
        "line of the script is missing there (the script itself was found): install it, or "
        "change that line to an interpreter the host has (`#!/usr/bin/env python3` finds one in "
        "PATH))");
  CHECK(lines[2] ==
        "h3: exit status 126 (interpreter not found: ./run.sh has Windows (CRLF) line endings: "
        "its #! line ends in a carriage return, so the interpreter looked for is \"/bin/bash\\r\", "
        "which no host has; convert the file with `dos2unix ./run.sh` or `sed -i 's/\\r$//' "
        "./run.sh` (macOS: `sed -i '' $'s/\\r$//' ./run.sh`), where it is kept and where it runs)");
  CHECK(lines[3] ==
        "h4: exit status 127 (interpreter not found: ./my run.sh was found, the interpreter named "
        "on its #! line was not: `head -1 './my run.sh' | od -c` shows it; install it there, or "
        "change that line to an interpreter the host has; a line ending in \\r means Windows "
        "(CRLF) line endings: `dos2unix './my run.sh'` or `sed -i 's/\\r$//' './my run.sh'`)");
  // Other exits 126 and 127 are as they were.
  CHECK(cc::remote::problem_lines({ran("h1", 126, "", "sh: 1: ./x: Permission denied\n")}, 1) ==
        std::vector<std::string>{"h1: exit status 126"});
  CHECK_FALSE(cc::remote::missing_interpreter("sh: 1: ./x.sh: not found\n"));
  CHECK_FALSE(cc::remote::missing_interpreter("python3: can't open file 'env: x'\n"));
}
