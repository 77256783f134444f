// Turning an argv into one command line for a POSIX shell, so that a remote login shell (sshd
// runs every command as `$SHELL -c LINE`) hands the program exactly these arguments: no word
// splitting, no globbing, no expansion of $, `, \, ! or newlines.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cc::remote {

/// One argument: returned as is when every byte is in [A-Za-z0-9_@%+=:,./-] (and it is not
/// empty); otherwise wrapped in single quotes, each ' written as '\'' . The empty string is ''.
/// Any byte sequence round-trips (newlines, non-ASCII, NUL excepted: argv cannot hold NUL).
/// Valid for sh, dash, bash, ksh and zsh; not for csh/tcsh or fish login shells.
std::string shell_quote_arg(std::string_view arg);

/// shell_quote_arg of each element, joined with single spaces. {} gives "".
/// Example: {"printf", "%s\n", "it's"} -> printf '%s\n' 'it'\''s'
std::string shell_quote(const std::vector<std::string>& argv);

}  // namespace cc::remote
