#include "remote/resolve.h"

#include <chrono>
#include <thread>

#include <doctest/doctest.h>

using cc::remote::resolve_host;
using cc::util::ExitCode;
using namespace std::chrono_literals;

namespace {

// A lookup that hangs for 3 s (a DNS server that does not answer), then answers.
int slow_lookup(const char* name, const char* service, const addrinfo* hints, addrinfo** res) {
  std::this_thread::sleep_for(3s);
  return ::getaddrinfo(name, service, hints, res);
}

addrinfo stream_hints() {
  addrinfo h{};
  h.ai_socktype = SOCK_STREAM;
  return h;
}

}  // namespace

TEST_CASE("resolve_host: a lookup that does not answer is given up at the deadline, naming it") {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = resolve_host("studio1.example", "22", stream_hints(), 300ms, slow_lookup);
  const auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUnreachable);
  CHECK(r.error().message.starts_with(
      "no answer from the name lookup of 'studio1.example' within 0.3 s"));
  CHECK(took >= 300ms);
  CHECK(took < 2s);  // not the lookup's 3 s
}

TEST_CASE("resolve_host: an answer comes back as getaddrinfo gave it") {
  auto r = resolve_host("127.0.0.1", "22", stream_hints());
  REQUIRE(r.ok());
  CHECK(r->status == 0);
  REQUIRE(r->addresses != nullptr);
  CHECK(r->addresses->ai_family == AF_INET);
  auto none = resolve_host("nowhere.invalid", "", stream_hints());
  REQUIRE(none.ok());  // an answer: "no such name" is the caller's to judge
  CHECK(none->status != 0);
  CHECK(none->addresses == nullptr);
}
