#include "discovery/text.h"

#include <string>

#include <doctest/doctest.h>

#include "discovery/command_outcome.h"
#include "discovery/json_util.h"

using namespace cc::discovery;

TEST_CASE("text: trim, lines, words") {
  CHECK(trim("  \tab c\r\n") == "ab c");
  CHECK(trim("") == "");
  auto lines = split_lines("a\r\nb\n\nc");
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "a");
  CHECK(lines[2] == "");
  CHECK(lines[3] == "c");
  CHECK(split_lines("").empty());
  CHECK(split_lines("x\n").size() == 1);
  auto words = split_words("  rdma_en2 \t 8096a9d9edbaac05  ");
  REQUIRE(words.size() == 2);
  CHECK(words[1] == "8096a9d9edbaac05");
}

TEST_CASE("text: strict integers") {
  CHECK(parse_u64("137438953472") == 137438953472ULL);
  CHECK(parse_u64("18446744073709551615") == 18446744073709551615ULL);
  CHECK_FALSE(parse_u64("18446744073709551616"));  // overflow
  CHECK_FALSE(parse_u64("-1"));
  CHECK_FALSE(parse_u64("12x"));
  CHECK_FALSE(parse_u64(""));
  CHECK(parse_int("4096") == 4096);
  CHECK_FALSE(parse_int("2147483648"));
}

TEST_CASE("text: parse errors name the command and say what was wrong") {
  auto e = parse_error("ibv_devinfo -v", "line 3: port number \"x\" is not a number");
  CHECK(e.code == cc::util::ExitCode::kCheckFailed);
  CHECK(e.message == "`ibv_devinfo -v` output: line 3: port number \"x\" is not a number");
  CHECK(excerpt("abc") == "\"abc\"");
  CHECK(excerpt(std::string(100, 'x'), 4) == "\"xxxx...\"");
}

TEST_CASE("json: a file the operator gave is named as a file, not as a command's output") {
  auto empty = parse_json_file("cluster.json", "");
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().code == cc::util::ExitCode::kUsage);
  CHECK(empty.error().message == "cluster.json: empty file (expected JSON)");
  auto bad = parse_json_file("trunc.json", "{\"hosts\": [");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message ==
        "trunc.json: not valid JSON at line 1, column 12: syntax error while parsing value - "
        "unexpected end of input; expected '[', '{', or a literal");
  // A trailing comma is named where it is (line 3), not at the '}' the parser stopped at.
  auto comma = parse_json_file("cluster.json", "{\n  \"hosts\": [],\n  \"cables\": [],\n}\n");
  REQUIRE_FALSE(comma.ok());
  CHECK(comma.error().message ==
        "cluster.json: not valid JSON at line 3, column 15: trailing comma after the last entry "
        "(before the '}' at line 4, column 1): JSON allows none; remove it");
  CHECK(bad.error().message.find("output") == std::string::npos);
  CHECK(parse_json_file("ok.json", "{\"a\": 1}")->at("a") == 1);
}

TEST_CASE("json: empty, malformed and too deep outputs are errors, never exceptions") {
  auto empty = parse_json_output("ip -j addr", "  \n");
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message == "`ip -j addr` output: empty output (expected JSON)");

  auto bad = parse_json_output("ip -j addr", "[{\"ifname\": \"eth0\",}");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.starts_with(
      "`ip -j addr` output: not valid JSON at line 1, column 19: trailing comma"));

  auto deep = parse_json_output("ip -j addr", std::string(10000, '[') + std::string(10000, ']'));
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.error().message.find("nested deeper than 64") != std::string::npos);

  auto ok = parse_json_output("x", "{\"a\": \"[[[[\", \"n\": 3}");
  REQUIRE(ok.ok());
  CHECK(get_int(*ok, "n") == 3);
  CHECK(get_string(*ok, "a") == "[[[[");
  CHECK_FALSE(get_int(*ok, "a"));
  CHECK_FALSE(get_string(*ok, "n"));
  CHECK(get_array(*ok, "a") == nullptr);
}

TEST_CASE("command outcome: a command missing on an older macOS is not a parse error") {
  CHECK(classify_command(0, "") == CommandOutcome::kRan);
  CHECK(classify_command(127, "zsh:1: command not found: rdma_ctl") == CommandOutcome::kMissing);
  CHECK(classify_command(127, "") == CommandOutcome::kMissing);
  CHECK(classify_command(1, "sh: ibv_devices: command not found") == CommandOutcome::kMissing);
  CHECK(classify_command(1, "Failed to open NETLINK_RDMA socket") == CommandOutcome::kFailed);
  CHECK(classify_command(-1, "") == CommandOutcome::kFailed);
}
