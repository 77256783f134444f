// Host names and the characters of a name in messages: the one rule a host name follows
// wherever it enters (an inventory, a replay bundle, a cluster state, a hostfile), and how a
// message shows a name that breaks it (whole characters, never a lone byte of one).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace cc::util {

/// `s` quoted for a message: 's' when it is printable ASCII, else in fmt's debug form, which
/// keeps whole printable characters ("stüdio2") and escapes a control character or a byte that
/// is no UTF-8 ("h\t1", "\x{c3}"): a message never prints a lone byte of a character or a raw
/// control character.
std::string quote(std::string_view s);

/// The length in bytes of the first UTF-8 character of `s` (1 for a byte that does not start
/// a well-formed one, 0 for ""): to name a whole character of a name, never a byte of it.
std::size_t utf8_char_length(std::string_view s);

/// The longest host name clusterctl takes (host_name_problem).
inline constexpr std::size_t kMaxHostNameLength = 64;
/// The longest DNS name an SSH destination may be (ssh_destination_problem; RFC 1035, 2.3.4).
inline constexpr std::size_t kMaxDnsNameLength = 253;

/// Why `name` cannot name a host, or nullopt: the one rule for a host name wherever one enters
/// (an inventory's `name:`, a replay bundle's host directory, a cluster state's host, a
/// hostfile's `ssh`): letters, digits, '.', '_' and '-', starting with a letter or digit, at
/// most kMaxHostNameLength characters. ssh, the SSH config's `Host` and every hostfile take
/// such a name; a space, a quote or a non-ASCII letter breaks one of them. The message starts
/// "host name 'NAME' is not valid: " and says what a name may hold, and the name meant when
/// only blanks around it break the rule ("h1 ": did you mean 'h1'?).
std::optional<std::string> host_name_problem(std::string_view name);

/// host_name_problem for an SSH destination a host is reached by: `NAME`, `USER@NAME` (the
/// name checked as above, the user being letters, digits, '.', '_', '-' and '@': ssh takes
/// all before the last '@' as the user, a directory service's "jdoe@corp"); a longer DNS name,
/// up to kMaxDnsNameLength characters, when each of its labels is a valid name of at most 63)
/// or an IP address (`10.0.0.1`, `2001:db8::1`, `USER@[2001:db8::1]`).
std::optional<std::string> ssh_destination_problem(std::string_view destination);

}  // namespace cc::util
