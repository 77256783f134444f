#include "provision/mac_hygiene.h"

#include <doctest/doctest.h>

#include "remote/fake_executor.h"
#include "remote/quote.h"

namespace cc::provision {
namespace {

using discovery::RawOutput;
using Status = HygieneItem::Status;

// `pmset -g` on a Mac Studio (desktop: autorestart is listed) and on a MacBook Pro.
const char* kPmsetDesktop =
    "System-wide power settings:\n"
    "Currently in use:\n"
    " standby              0\n"
    " Sleep On Power Button 1\n"
    " autorestart          1\n"
    " hibernatefile        /var/vm/sleepimage\n"
    " powernap             1\n"
    " networkoversleep     0\n"
    " disksleep            10\n"
    " sleep                0\n"
    " hibernatemode        0\n"
    " ttyskeepawake        1\n"
    " displaysleep         10\n"
    " tcpkeepalive         1\n"
    " womp                 1\n";
const char* kPmsetLaptop =
    "System-wide power settings:\n"
    "Currently in use:\n"
    " standby              1\n"
    " Sleep On Power Button 1\n"
    " hibernatefile        /var/vm/sleepimage\n"
    " displaysleep         2\n"
    " sleep                1 (sleep prevented by sharingd, powerd)\n"
    " hibernatemode        3\n";

TEST_CASE("rdma hygiene: sleep from pmset -g") {
  auto ok = sleep_item({kPmsetDesktop, "", 0});
  CHECK(ok.status == Status::kOk);
  CHECK(ok.setting == "sleep");
  auto fix = sleep_item({kPmsetLaptop, "", 0});
  CHECK(fix.status == Status::kFix);
  CHECK(fix.fix == "sudo pmset -a sleep 0");
  CHECK(fix.detail.find("after 1 minute idle") != std::string::npos);
  CHECK(sleep_item({"Currently in use:\n Sleep On Power Button 1\n", "", 0}).status ==
        Status::kUnknown);
  CHECK(sleep_item({"", "pmset: command not found", 127}).status == Status::kUnknown);
}

TEST_CASE("rdma hygiene: restart after power failure from systemsetup, else pmset") {
  const RawOutput pmset_on{kPmsetDesktop, "", 0};
  CHECK(restart_item({"Restart After Power Failure: On\n", "", 0}, pmset_on).status == Status::kOk);
  auto off = restart_item({"Restart After Power Failure: Off\n", "", 0}, pmset_on);
  CHECK(off.status == Status::kFix);
  CHECK(off.fix == "sudo systemsetup -setrestartpowerfailure on");
  CHECK(restart_item({"Restart After Power Failure: Not supported on this machine.\n", "", 0},
                     {kPmsetLaptop, "", 0})
            .status == Status::kUnsupported);
  // Without administrator rights systemsetup refuses; pmset's autorestart answers.
  const RawOutput refused{"You need administrator access to run this tool... exiting!\n", "", 0};
  auto via_pmset = restart_item(refused, pmset_on);
  CHECK(via_pmset.status == Status::kOk);
  CHECK(via_pmset.detail == "pmset autorestart 1");
  auto unknown = restart_item(refused, {kPmsetLaptop, "", 0});
  CHECK(unknown.status == Status::kUnknown);
  CHECK(unknown.detail.find("administrator rights") != std::string::npos);
}

TEST_CASE("rdma hygiene: automatic login from the loginwindow preferences") {
  auto ok = auto_login_item({"admin\n", "", 0});
  CHECK(ok.status == Status::kOk);
  CHECK(ok.detail == "logs in automatically as admin");
  auto fix = auto_login_item(
      {"",
       "The domain/default pair of (/Library/Preferences/com.apple.loginwindow, autoLoginUser) "
       "does not exist\n",
       1});
  CHECK(fix.status == Status::kFix);
  CHECK(fix.fix.find("Automatically log in as") != std::string::npos);
  CHECK(auto_login_item({"", "no recording", -1}).status == Status::kUnknown);
}

TEST_CASE("rdma hygiene: the three probes through an executor") {
  remote::FakeExecutor ex("m1");
  ex.on(remote::shell_quote(pmset_argv()), {0, false, kPmsetLaptop, "", {}});
  ex.on(remote::shell_quote(restart_power_failure_argv()),
        {0, false, "Restart After Power Failure: Off\n", "", {}});
  ex.on(remote::shell_quote(auto_login_argv()), {0, false, "admin\n", "", {}});
  auto items = check_hygiene(ex, std::chrono::milliseconds(1000));
  REQUIRE(items.ok());
  REQUIRE(items->size() == 3);
  CHECK((*items)[0].status == Status::kFix);
  CHECK((*items)[1].status == Status::kFix);
  CHECK((*items)[2].status == Status::kOk);
  CHECK(ex.calls() ==
        std::vector<std::string>{"pmset -g", "systemsetup -getrestartpowerfailure",
                                 "defaults read /Library/Preferences/com.apple.loginwindow "
                                 "autoLoginUser"});

  ex.fail_with(util::error(util::ExitCode::kUnreachable, "m1: connection refused"));
  CHECK(check_hygiene(ex, std::chrono::milliseconds(1000)).error().code ==
        util::ExitCode::kUnreachable);
  remote::FakeExecutor missing("m2");
  missing.fail_with(util::error(util::ExitCode::kUsage, "m2: no recording of `pmset -g`"));
  auto unknown = check_hygiene(missing, std::chrono::milliseconds(1000));
  REQUIRE(unknown.ok());
  CHECK((*unknown)[0].status == Status::kUnknown);
  CHECK((*unknown)[0].detail == "`pmset -g` did not run: m2: no recording of `pmset -g`");
}

}  // namespace
}  // namespace cc::provision
