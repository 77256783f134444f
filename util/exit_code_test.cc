#include "util/exit_code.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <stdexcept>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

using cc::util::ExitCode;
using cc::util::worst;

TEST_CASE("exit codes have their documented values") {
  CHECK(cc::util::to_int(ExitCode::kOk) == 0);
  CHECK(cc::util::to_int(ExitCode::kCheckFailed) == 1);
  CHECK(cc::util::to_int(ExitCode::kUsage) == 2);
  CHECK(cc::util::to_int(ExitCode::kUnreachable) == 3);
  CHECK(cc::util::to_int(ExitCode::kJobFailed) == 4);
  CHECK(cc::util::to_int(ExitCode::kInterrupted) == 130);
}

TEST_CASE("worst() orders outcomes by severity") {
  CHECK(worst(ExitCode::kOk, ExitCode::kCheckFailed) == ExitCode::kCheckFailed);
  CHECK(worst(ExitCode::kUnreachable, ExitCode::kCheckFailed) == ExitCode::kUnreachable);
  CHECK(worst(ExitCode::kCheckFailed, ExitCode::kUnreachable) == ExitCode::kUnreachable);
  CHECK(worst(ExitCode::kInterrupted, ExitCode::kUnreachable) == ExitCode::kInterrupted);
  CHECK(worst(ExitCode::kOk, ExitCode::kOk) == ExitCode::kOk);
}

TEST_CASE("a write to a pipe without a reader is a broken pipe, exit status 141") {
  CHECK(cc::util::kBrokenPipeStatus == 128 + SIGPIPE);
  // What fmt throws when `clusterctl ... | head -1` closed the pipe: a real write.
  auto* old = std::signal(SIGPIPE, SIG_IGN);  // as clusterctl runs
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  ::close(fds[0]);
  FILE* out = ::fdopen(fds[1], "w");
  REQUIRE(out != nullptr);
  std::setvbuf(out, nullptr, _IONBF, 0);
  bool thrown = false;
  try {
    fmt::print(out, "{}\n", "a line nobody reads");
  } catch (const std::exception& e) {
    thrown = true;
    CHECK(cc::util::is_broken_pipe(e));
  }
  CHECK(thrown);
  std::fclose(out);
  std::signal(SIGPIPE, old);
  CHECK_FALSE(cc::util::is_broken_pipe(std::runtime_error("cannot write")));
  CHECK_FALSE(cc::util::is_broken_pipe(std::system_error(ENOSPC, std::generic_category())));
}
