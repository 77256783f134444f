// Where an OpenSSH client config uses what libssh (0.10, which clusterctl connects with) reads
// differently from ssh(1): its `Match` lines. libssh applies a Match block's `host`, `user`,
// `localuser`, `exec` and `all` criteria once, where it reads the line (ssh re-reads the
// config after HostName for `canonical` and `final` blocks, and matches those against the
// final name); it skips `canonical` and `final` themselves, and never applies an
// `originalhost` block. So a config with Match can send clusterctl to another address, user or
// port than `ssh HOST`, without a word from libssh (it logs only at debug level, naming no
// file). libssh has no call that lists a config's blocks, so this finds the keyword lines
// alone: the first word of each line, and the files each `Include` names, read as libssh reads
// them. What the keywords mean stays libssh's.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "remote/ssh_executor.h"

namespace cc::remote {

/// One `Match` line of an SSH config file.
struct ConfigLine {
  std::filesystem::path file;
  std::size_t line = 0;  // 1-based
  std::string text;      // the line as written, trimmed
};

/// Every `Match` line (the keyword in any case, followed by blanks or '=') of the SSH config
/// `file` and of the files its `Include` lines name, in reading order: an Include's argument
/// is one or more paths or globs (glob(3)), `~/` is `home`, and a relative path is relative to
/// `include_base` (~/.ssh for a user's config or one given with -F, /etc/ssh for
/// /etc/ssh/ssh_config, as libssh takes them); Includes nest at most 16 deep, as in libssh. A
/// file that cannot be read (missing, not a regular file) is skipped, as libssh skips it.
std::vector<ConfigLine> ssh_config_match_lines(const std::filesystem::path& file,
                                               const std::filesystem::path& include_base,
                                               const std::filesystem::path& home);

/// The Match lines of the files libssh reads under `options`: its config_file alone when set,
/// else ~/.ssh/config and /etc/ssh/ssh_config (home as libssh finds it: the password database,
/// else $HOME).
std::vector<ConfigLine> ssh_config_match_lines(const SshOptions& options);

/// The note for stderr about `lines` (none: ""): each FILE:LINE with its text, what libssh
/// does with Match instead of what ssh does, and what to write instead (a `Host` block, or
/// the inventory's `ssh:` and `address:`). Several lines: at most the first 5, then how many
/// more. Ends without a newline.
std::string match_note(const std::vector<ConfigLine>& lines);

}  // namespace cc::remote
