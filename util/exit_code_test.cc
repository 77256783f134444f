#include "util/exit_code.h"

#include <doctest/doctest.h>

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
