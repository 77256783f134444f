#include <csignal>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "lab/lab.h"
#include "lab/system.h"
#include "remote/fake_executor.h"
#include "tests/temp_dir.h"
#include "util/interrupt.h"

namespace fs = std::filesystem;
using cc::remote::FakeExecutor;
using cc::test::TempDir;
using cc::util::ExitCode;

// A Ctrl-C that cuts short the first `ip` lab up runs (a fast machine, lab.crash at 0.1 s) said
// "local: interrupted (Ctrl-C); `ip` was killed", unlike every other interrupted lab up.
TEST_CASE("lab up: Ctrl-C before anything is made names the signal and says nothing was made") {
  if (!cc::lab::sys::is_root()) {
    MESSAGE("skipped: lab up refuses to start without root");
    return;
  }
  TempDir tmp{"cc-lab-up-test"};
  cc::lab::UpOptions options;
  options.name = "ctunitintr";
  options.dir = tmp.path / "lab";
  for (int sig : {SIGINT, SIGTERM}) {
    FakeExecutor local("local");
    local.fail_with(cc::util::interrupted_error("; `ip` was killed"));
    cc::util::set_interrupted(true, sig);
    auto up = cc::lab::lab_up(local, options, {});
    cc::util::set_interrupted(false);
    REQUIRE_FALSE(up.ok());
    CHECK(up.error().code == ExitCode::kInterrupted);
    CHECK(up.error().message == std::string(sig == SIGINT ? "interrupted (Ctrl-C)"
                                                          : "terminated (SIGTERM)") +
                                    "; nothing of lab 'ctunitintr' was made yet");
    CHECK_FALSE(fs::exists(options.dir));
  }
}
