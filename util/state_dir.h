// Where clusterctl keeps its private state (job records, labs, resume files):
// ${XDG_STATE_HOME:-$HOME/.local/state}/clusterctl (XDG Base Directory Specification 0.8).
#pragma once

#include <filesystem>

#include "util/result.h"

namespace cc::util {

/// ${XDG_STATE_HOME:-$HOME/.local/state}/clusterctl. XDG_STATE_HOME counts only when absolute
/// (as the specification says); without HOME, the user's home from the password database.
std::filesystem::path state_dir();

/// state_dir() / `sub`, created mode 0700 if missing and checked as util::ensure_private_dir
/// does (owned by this user, no group/world write, on it and its parents below $HOME).
/// Errors: kUsage naming the path, its owner and mode, and the fix.
Result<std::filesystem::path> private_state_dir(const std::filesystem::path& sub);

}  // namespace cc::util
