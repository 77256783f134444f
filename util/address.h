// IP addresses and host names as operators write them (inventories, hostfiles, cluster states),
// and as ranks are given them: the one checker of an address, the one formatter of host:port,
// and the one rule for when two host names name the same host.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cc::util {

/// What is wrong with `text` as an IP address, or nullopt when it is one: an IPv4 dotted quad
/// ("10.0.0.1") or an IPv6 literal ("2001:db8::1"), as inet_pton(3) reads them, the IPv6 one
/// optionally with its scope ("fe80::1%en0", as ssh(1) and getaddrinfo(3) take it). Not a host
/// name, nor an address with a port or in brackets. The problem is a phrase that follows the
/// quoted text in a message: "'10.0.0.300' <problem>", e.g. "is not an IPv4 address: 300 is
/// not a number from 0 to 255"; "is empty: ...", "has a port (':5000'): ...".
std::optional<std::string> address_problem(std::string_view text);

/// Why `address` (one address_problem accepts) names no machine another host can reach, or
/// nullopt: an unspecified address (0.0.0.0, ::: "every address" to a listener, this very
/// host to a connecting program) or a loopback one (127.0.0.0/8, ::1: on every host, that host
/// itself). A phrase that follows the quoted text, as address_problem's.
std::optional<std::string> local_only_problem(std::string_view address);

/// Whether `address` is a self-assigned IPv4 link-local address, 169.254.0.0/16 (RFC 3927):
/// unique on its link only, and a host keeps one route for the whole block, so traffic to such an
/// address leaves by whichever interface holds that route, not necessarily the cable it was
/// seen on (docs/platform.md#self-assigned-addresses). False for anything else, IPv6 included.
bool self_assigned_ipv4(std::string_view address);

/// Whether `address` (one address_problem accepts, with or without its %scope) is an IPv6
/// link-local address, fe80::/10: every interface has one, so it names a host only together
/// with the interface it is reached through, which is each connecting host's own.
bool link_local_ipv6(std::string_view address);

/// Why the other hosts cannot reach a rank at `address` (one address_problem accepts): the
/// one check of an address a hostfile, a cluster state or an inventory hands to ranks to
/// connect to (a coordinator, a ring neighbour's), by every reader of one. local_only_problem's
/// (unspecified, loopback), a self-assigned IPv4 one (169.254/16: the connection leaves by
/// whichever interface holds the host's one route for the block) and a link-local IPv6 one
/// (fe80::/10, scoped or not: a scope names an interface of one machine only); else nullopt.
/// A phrase that follows the quoted text, as address_problem's.
std::optional<std::string> rank_address_problem(std::string_view address);

/// "HOST:PORT" for a connection or a listener: an IPv6 literal (any host with a ':') in
/// brackets, "[2001:db8::1]:5000", "[fe80::1%eth0]:5000"; others as they are,
/// "10.0.0.1:5000", "studio1:5000". A host already in brackets is not bracketed again.
std::string host_port(std::string_view host, int port);

/// The form under which host names are compared: DNS names are case-insensitive (RFC 4343)
/// and a final dot only marks a name as fully qualified, so "Studio1", "studio1" and
/// "studio1." are one host ("studio1"). ASCII lower case, one final dot dropped.
std::string host_key(std::string_view name);

/// Whether `a` and `b` name one host (equal host_key): the one comparison of a host name the
/// operator gives (--hosts, --from/--to, a job's `hosts:`) with the names clusterctl knows (an
/// inventory's, a replay bundle's, a cluster's); for many lookups, index by host_key instead.
bool same_host_name(std::string_view a, std::string_view b);

/// The first pair (i, j), i < j, of `names` that name one host (equal host_key), or nullopt.
/// Linear time (a hash map): inventories of tens of thousands of hosts load at once.
std::optional<std::pair<std::size_t, std::size_t>> same_host(const std::vector<std::string>& names);

/// The note that says why two names are one host when they are not written alike: "" when
/// `a` and `b` are the same text, else " (host names ignore case and a final dot)".
std::string same_host_note(std::string_view a, std::string_view b);

}  // namespace cc::util
