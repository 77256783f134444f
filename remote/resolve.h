// Host-name lookups with a deadline. getaddrinfo has no timeout: a DNS server that does not
// answer holds it for the resolver's own retries (5 s per attempt and server), an mDNS name
// (host.local) on a link that is down for seconds, a broken NSS module for ever. So the lookup
// runs on a helper thread and the caller waits at most until its deadline; a lookup given up
// on finishes on its own thread and frees what it found. Portable (std::thread, POSIX
// getaddrinfo): glibc's getaddrinfo_a has no macOS counterpart.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <netdb.h>

#include "util/result.h"

namespace cc::remote {

/// The longest one host-name lookup may take.
inline constexpr std::chrono::milliseconds kResolveTimeout{5'000};

/// getaddrinfo's signature: tests stand in a slow lookup (remote/resolve_test.cc).
using LookupFn = int (*)(const char*, const char*, const addrinfo*, addrinfo**);

/// What a lookup that answered gave: getaddrinfo's status and, when 0, its addresses (freed
/// with freeaddrinfo when the last copy goes).
struct Resolved {
  int status = 0;  // 0, or EAI_NONAME, EAI_AGAIN, ... (gai_strerror)
  std::shared_ptr<const addrinfo> addresses;
};

/// getaddrinfo(host, service or nullptr when "", &hints) on a helper thread, waited on for at
/// most `timeout` (polling util::interrupted()). A lookup that answered is returned as it is,
/// a failed one too (Resolved::status: the caller judges it). Errors: kUnreachable when no
/// answer came within `timeout` (the message names the host name and the timeout: "no answer
/// from the name lookup of 'h1.example' within 5 s ..."), or no thread could be started;
/// kInterrupted on Ctrl-C.
util::Result<Resolved> resolve_host(const std::string& host, const std::string& service,
                                    const addrinfo& hints,
                                    std::chrono::milliseconds timeout = kResolveTimeout,
                                    LookupFn lookup = ::getaddrinfo);

}  // namespace cc::remote
