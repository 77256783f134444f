#include "remote/quote.h"

#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "remote/local_executor.h"

using cc::remote::shell_quote;
using cc::remote::shell_quote_arg;

TEST_CASE("shell_quote_arg leaves safe words alone and quotes everything else") {
  CHECK(shell_quote_arg("uname") == "uname");
  CHECK(shell_quote_arg("-n") == "-n");
  CHECK(shell_quote_arg("/usr/bin/ibv_devinfo") == "/usr/bin/ibv_devinfo");
  CHECK(shell_quote_arg("a=b,c:d@e%f+g") == "a=b,c:d@e%f+g");
  CHECK(shell_quote_arg("") == "''");
  CHECK(shell_quote_arg("two words") == "'two words'");
  CHECK(shell_quote_arg("it's") == "'it'\\''s'");
  CHECK(shell_quote_arg("'") == "''\\'''");
  CHECK(shell_quote_arg("$(touch /tmp/pwned)") == "'$(touch /tmp/pwned)'");
  CHECK(shell_quote_arg("`id`") == "'`id`'");
  CHECK(shell_quote_arg("*") == "'*'");
  CHECK(shell_quote_arg("~") == "'~'");
  CHECK(shell_quote_arg("a\nb") == "'a\nb'");
  CHECK(shell_quote_arg("\xc3\xa9t\xc3\xa9") == "'\xc3\xa9t\xc3\xa9'");
}

TEST_CASE("shell_quote joins quoted arguments with spaces") {
  CHECK(shell_quote({}) == "");
  CHECK(shell_quote({"system_profiler", "SPThunderboltDataType", "-json"}) ==
        "system_profiler SPThunderboltDataType -json");
  CHECK(shell_quote({"printf", "%s\n", "it's"}) == "printf '%s\n' 'it'\\''s'");
  CHECK(shell_quote({"", ""}) == "'' ''");
  CHECK(shell_quote({"echo", ";rm -rf x"}) == "echo ';rm -rf x'");
}

TEST_CASE("a POSIX shell gives back exactly the quoted arguments") {
  // The real test of quoting: /bin/sh -c "printf '%s\0' QUOTED..." must print each argument
  // unchanged, NUL-terminated, and run nothing it contains.
  std::vector<std::string> hostile = {"plain",
                                      "two words",
                                      "it's",
                                      "\"double\"",
                                      "$(touch /tmp/cc-quote-pwned)",
                                      "`touch /tmp/cc-quote-pwned`",
                                      "line1\nline2",
                                      "tab\there",
                                      "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
                                      "",
                                      ";rm -rf x",
                                      "*",
                                      "~",
                                      "$HOME",
                                      "\\",
                                      "'\\''",
                                      "!",
                                      "a&&b||c",
                                      "<in >out 2>&1",
                                      "{a,b}",
                                      "-n",
                                      "--",
                                      "%s",
                                      "\x01\x7f\xff"};
  std::vector<std::string> argv = {"printf", "%s\\0"};
  argv.insert(argv.end(), hostile.begin(), hostile.end());
  cc::remote::LocalExecutor local;
  auto r = local.run({{shell_quote(argv)}, /*shell=*/true}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  CHECK(r->err == "");
  std::string expected;
  for (const auto& h : hostile) expected += h + std::string(1, '\0');
  CHECK(r->out == expected);
  CHECK_FALSE(std::filesystem::exists("/tmp/cc-quote-pwned"));
}
