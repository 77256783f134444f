// Where an OpenSSH client config uses what libssh (0.10, which clusterctl connects with) reads
// differently from ssh(1), so that clusterctl could reach another address, user or port than
// `ssh HOST`, without a word from libssh (it logs only at debug level, naming no file):
//  - `Match` lines. libssh applies a Match block's `host`, `user`, `localuser`, `exec` and
//    `all` criteria once, where it reads the line (ssh re-reads the config after HostName for
//    `canonical` and `final` blocks, and matches those against the final name); it skips
//    `canonical` and `final` themselves, and never applies an `originalhost` block.
//  - `Host` lines after a HostName. libssh's HostName replaces the session's host name, and
//    it matches every later `Host` line against it; ssh matches each against the name given.
//    `Host studio1` / `HostName 10.0.0.1` / `Host studio*` / `User admin`: ssh logs in as
//    admin, libssh skips that block; a later `Host 10.0.0.*` applies in libssh alone.
//  - A negated pattern after another one on a `Host` line: libssh takes the first pattern
//    that matches, so `Host * !studio2` applies to studio2 (ssh: any negated match excludes).
//  - `Include` of several paths: libssh reads the first alone (ssh all).
// Checked against libssh 0.10.6 (Debian 12) with ssh_options_parse_config, beside `ssh -G`.
// Read alike, so not noted: HostName's %h (the name given, in both: the first HostName that
// applies wins), relative Include paths (~/.ssh for the user's config and -F, /etc/ssh for
// the global one), ProxyJump (libssh runs ssh -W, given this config: ssh_session.h).
// libssh has no call that lists a config's blocks, so this reads the keyword lines alone:
// the first word of each line, and the files each `Include` names, read as libssh reads them.
// What the keywords mean stays libssh's.
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

/// The lines libssh reads otherwise than ssh whichever host it connects to.
struct ConfigScan {
  std::vector<ConfigLine> match;                   // `Match` lines
  std::vector<ConfigLine> negation_after_pattern;  // `Host * !studio2`
  std::vector<ConfigLine> several_includes;        // `Include a.conf b.conf`
};

/// Those lines (each keyword in any case, followed by blanks or '=') of the SSH config `file`
/// and of the files its `Include` lines name, in reading order: an Include's first argument
/// (libssh reads no other) is a path or glob (glob(3)), `~/` is `home`, and a relative path is
/// relative to `include_base` (~/.ssh for a user's config or one given with -F, /etc/ssh for
/// /etc/ssh/ssh_config, as libssh takes them); Includes nest at most 16 deep, as in libssh. A
/// file that cannot be read (missing, not a regular file) is skipped, as libssh skips it.
ConfigScan scan_ssh_config(const std::filesystem::path& file,
                           const std::filesystem::path& include_base,
                           const std::filesystem::path& home);
/// Those of the files libssh reads under `options`: its config_file alone when set, else
/// ~/.ssh/config and /etc/ssh/ssh_config (home as libssh finds it: the password database,
/// else $HOME).
ConfigScan scan_ssh_config(const SshOptions& options);

/// scan_ssh_config's Match lines alone.
std::vector<ConfigLine> ssh_config_match_lines(const std::filesystem::path& file,
                                               const std::filesystem::path& include_base,
                                               const std::filesystem::path& home);
std::vector<ConfigLine> ssh_config_match_lines(const SshOptions& options);

/// A `Host` line that libssh and ssh decide differently for one destination: libssh matches
/// it against the HostName it applied before, ssh against the name given.
struct HostLineDifference {
  ConfigLine host;      // the Host line
  ConfigLine hostname;  // the HostName line libssh applied
  std::string matched;  // its value (lowercase, %h filled in), what libssh matched
  bool libssh_applies;  // libssh applies the block and ssh does not; false: the reverse
};

/// The Host lines that libssh and ssh decide differently for `destination` ("host" or
/// "user@host"), reading as libssh does: Host blocks and the first HostName that applies (a
/// `Match` block is taken not to apply: match_note covers it), an Include only where it
/// applies, the files as scan_ssh_config reads them; with the default files, a HostName of
/// ~/.ssh/config is in force in /etc/ssh/ssh_config, as in libssh.
std::vector<HostLineDifference> host_lines_after_hostname(
    const std::filesystem::path& file, const std::filesystem::path& include_base,
    const std::filesystem::path& home, const std::string& destination);
std::vector<HostLineDifference> host_lines_after_hostname(const SshOptions& options,
                                                          const std::string& destination);

/// The note for stderr about `lines` (none: ""): each FILE:LINE with its text, what libssh
/// does with Match instead of what ssh does, and what to write instead (a `Host` block, or
/// the inventory's `ssh:` and `address:`). Several lines: at most the first 5, then how many
/// more. Ends without a newline.
std::string match_note(const std::vector<ConfigLine>& lines);

/// The notes for stderr about a scan (none: ""): match_note's, then one for the negated
/// patterns (put them first: `Host !studio2 *`) and one for the Includes of several paths
/// (one Include line per path), each naming FILE:LINE as match_note does. Ends without a
/// newline.
std::string scan_notes(const ConfigScan& scan);

/// The note for stderr about `lines` for `destination` (none: ""): each Host line with what
/// libssh matched it against, which HostName set that (FILE:LINE) and which of the two
/// applies its block, then what to do: put what the host needs in the block that sets its
/// HostName or before it, or in an inventory. Ends without a newline.
std::string host_after_hostname_note(const std::string& destination,
                                     const std::vector<HostLineDifference>& lines);

}  // namespace cc::remote
