#include "util/address.h"

#include <string>

#include <doctest/doctest.h>

#include "util/host_name.h"

namespace cc::util {
namespace {

std::string problem(std::string_view text) {
  auto p = address_problem(text);
  return p ? *p : std::string("ok");
}

TEST_CASE("address_problem: IPv4 and IPv6 literals pass, scoped IPv6 too") {
  for (const char* ok :
       {"10.0.0.1", "0.0.0.0", "255.255.255.255", "2001:db8::1", "::1", "::", "fe80::1%en0",
        "fe80::1%eth0", "fe80::aede:48ff:fe00:1122%bridge0", "fe80::1%4", "::ffff:10.0.0.1"}) {
    CAPTURE(ok);
    CHECK(problem(ok) == "ok");
  }
}

TEST_CASE("address_problem: what cannot be an address, and why") {
  CHECK(problem("10.0.0.300") == "is not an IPv4 address: 300 is not a number from 0 to 255");
  CHECK(problem("1.2.3") ==
        "is not an IPv4 address: it has 3 parts, and an address is four numbers from 0 to 255 "
        "separated by dots");
  CHECK(problem("10..0.1") ==
        "is not an IPv4 address: it has an empty part, and an address is four numbers from 0 to "
        "255 separated by dots");
  CHECK(problem("10.0.0.01") ==
        "is not an IPv4 address: 01 has a leading zero (some tools read it as octal): write 1");
  CHECK(problem("10.0.0.1:5000") == "has a port (':5000'): give the address alone, 10.0.0.1");
  CHECK(problem("[2001:db8::1]:5000") ==
        "has a port (':5000'): give the address alone, 2001:db8::1");
  CHECK(problem("[2001:db8::1]") ==
        "is in brackets: write the address alone, 2001:db8::1 (brackets only set an IPv6 address "
        "apart from a port)");
  CHECK(problem("host name") ==
        "has a space or a control character in it: give an IPv4 address (10.0.0.1) or an IPv6 "
        "one (2001:db8::1)");
  CHECK(problem(" 10.0.0.1") ==
        "has a space or a control character in it: give an IPv4 address (10.0.0.1) or an IPv6 "
        "one (2001:db8::1)");
  CHECK(problem("") == "is empty: give an IPv4 address (10.0.0.1) or an IPv6 one (2001:db8::1)");
  CHECK(problem("studio1") ==
        "is a host name, not an IP address: give an IPv4 address (10.0.0.1) or an IPv6 one "
        "(2001:db8::1)");
  CHECK(problem("2001:db8::1::2").starts_with("is not an IPv6 address"));
  CHECK(problem("2001:db8:::5000").starts_with("is not an IPv6 address"));
  CHECK(problem("fe80::1%") ==
        "has nothing after '%', which is not an interface name: write the interface the address "
        "is reached through (fe80::1%en0)");
  CHECK(problem("fe80::1%en 0").starts_with("has a space"));
  CHECK(problem("10.0.0.1%en0") ==
        "is not an IP address: only an IPv6 address takes a %scope (fe80::1%en0), and 10.0.0.1 "
        "is not one");
}

TEST_CASE("local_only_problem: unspecified and loopback addresses, not others") {
  for (const char* ok : {"10.0.0.1", "192.168.1.1", "2001:db8::1", "fe80::1%en0", "128.0.0.1"}) {
    CAPTURE(ok);
    CHECK_FALSE(local_only_problem(ok));
  }
  for (const char* unspecified : {"0.0.0.0", "::", "0:0::0"}) {
    CAPTURE(unspecified);
    REQUIRE(local_only_problem(unspecified));
    CHECK(local_only_problem(unspecified)->starts_with("is the unspecified address"));
  }
  for (const char* loopback : {"127.0.0.1", "127.0.1.1", "127.255.255.254", "::1"}) {
    CAPTURE(loopback);
    REQUIRE(local_only_problem(loopback));
    CHECK(*local_only_problem(loopback) ==
          "is a loopback address: on every host it names that host itself");
  }
}

TEST_CASE("self_assigned_ipv4 and link_local_ipv6: 169.254/16 and fe80::/10 alone") {
  for (const char* yes : {"169.254.0.1", "169.254.205.255", "169.254.255.255"}) {
    CAPTURE(yes);
    CHECK(self_assigned_ipv4(yes));
  }
  for (const char* no : {"169.253.1.1", "169.255.0.1", "10.169.254.1", "169.254", "fe80::1",
                         "169.254.1.300", ""}) {
    CAPTURE(no);
    CHECK_FALSE(self_assigned_ipv4(no));
  }
  for (const char* yes : {"fe80::1", "fe80::1%en0", "FE80::1021:1bac:fe1:b5e3", "febf::1"}) {
    CAPTURE(yes);
    CHECK(link_local_ipv6(yes));
  }
  for (const char* no : {"fec0::1", "2001:db8::1", "::1", "169.254.1.1", "fe80", "", "%en0"}) {
    CAPTURE(no);
    CHECK_FALSE(link_local_ipv6(no));
  }
}

TEST_CASE("rank_address_problem: local-only, self-assigned and link-local addresses") {
  for (const char* ok : {"10.0.0.1", "192.168.1.1", "2001:db8::1", "169.253.1.1", "fec0::1"}) {
    CAPTURE(ok);
    CHECK_FALSE(rank_address_problem(ok));
  }
  CHECK(rank_address_problem("127.0.0.1") == local_only_problem("127.0.0.1"));
  CHECK(rank_address_problem("0.0.0.0") == local_only_problem("0.0.0.0"));
  for (const char* self : {"169.254.0.1", "169.254.12.2"}) {
    CAPTURE(self);
    REQUIRE(rank_address_problem(self));
    CHECK(rank_address_problem(self)->starts_with(
        "is a self-assigned IPv4 address (169.254/16): a host routes all of 169.254/16"));
  }
  for (const char* ll : {"fe80::1", "fe80::1%en0", "FE80::aa:bb"}) {
    CAPTURE(ll);
    REQUIRE(rank_address_problem(ll));
    CHECK(rank_address_problem(ll)->starts_with("is a link-local IPv6 address (fe80::/10)"));
  }
}

TEST_CASE("host_port: IPv6 literals in brackets, with or without a scope") {
  CHECK(host_port("10.0.0.1", 5000) == "10.0.0.1:5000");
  CHECK(host_port("studio1", 32323) == "studio1:32323");
  CHECK(host_port("2001:db8::1", 5000) == "[2001:db8::1]:5000");
  CHECK(host_port("fe80::1%eth0", 5000) == "[fe80::1%eth0]:5000");
  CHECK(host_port("[2001:db8::1]", 5000) == "[2001:db8::1]:5000");
}

TEST_CASE("host_key and same_host: names that differ in case or a final dot are one host") {
  CHECK(host_key("Studio1") == "studio1");
  CHECK(host_key("studio1.") == "studio1");
  CHECK(host_key("STUDIO1.LOCAL.") == "studio1.local");
  CHECK(host_key("10.0.0.1") == "10.0.0.1");
  CHECK(host_key(".") == ".");
  CHECK(!same_host({"studio1", "studio2", "mac1"}));
  CHECK(same_host({"a", "Studio1", "b", "studio1"}) ==
        std::make_pair(std::size_t{1}, std::size_t{3}));
  CHECK(same_host({"studio1", "b", "studio1."}) == std::make_pair(std::size_t{0}, std::size_t{2}));
  CHECK(same_host_note("a", "a").empty());
  CHECK(same_host_note("A", "a") == " (host names ignore case and a final dot)");
  CHECK(same_host_name("H1", "h1"));
  CHECK(same_host_name("h1.", "H1"));
  CHECK(!same_host_name("h1", "h10"));
}

}  // namespace
}  // namespace cc::util

TEST_CASE("host_name_problem: one rule for a host name, naming the whole character at fault") {
  using cc::util::host_name_problem;
  using cc::util::ssh_destination_problem;
  CHECK(host_name_problem("studio1") == std::nullopt);
  CHECK(host_name_problem("mac_studio-2.local") == std::nullopt);
  CHECK(host_name_problem("studio 1") ==
        "host name 'studio 1' is not valid: use letters, digits, '.', '_' and '-', starting "
        "with a letter or digit, at most 64 characters (it has a space)");
  // A bundle directory `stüdio2`: the whole 'ü', never its lone first byte.
  CHECK(host_name_problem("st\xc3\xbc" "dio2")->starts_with("host name \"st\xc3\xbc" "dio2\" is"));
  CHECK(host_name_problem("st\xc3\xbc" "dio2")->ends_with("(it has \"\xc3\xbc\")"));
  CHECK(host_name_problem("h\t1")->starts_with("host name \"h\\t1\" is not valid"));
  CHECK(host_name_problem("-h1")->ends_with("(it starts with '-')"));
  // A blank pasted around a name: the name it was meant to be.
  CHECK(host_name_problem("h1 ")->ends_with("(it has a space) (did you mean 'h1'?)"));
  CHECK(host_name_problem("h 1")->ends_with("(it has a space)"));
  CHECK(host_name_problem("")->ends_with("(it is empty)"));
  CHECK(host_name_problem(std::string(65, 'a'))->ends_with("(it has 65 characters)"));
  CHECK(ssh_destination_problem("admin@studio1") == std::nullopt);
  CHECK(ssh_destination_problem("10.0.0.1") == std::nullopt);
  CHECK(ssh_destination_problem("fe80::1%en0") == std::nullopt);
  CHECK(ssh_destination_problem("root@[2001:db8::1]") == std::nullopt);
  CHECK(ssh_destination_problem("root@studio 1")->ends_with("(it has a space)"));
  // A fully qualified DNS name longer than a host's own name: labels of at most 63, 253 in all.
  const std::string fqdn = "gpu-node-01.cluster.ml-research-group.department.university.example.edu";
  REQUIRE(fqdn.size() > 64);
  CHECK(ssh_destination_problem(fqdn) == std::nullopt);
  CHECK(ssh_destination_problem("admin@" + fqdn) == std::nullopt);
  CHECK(ssh_destination_problem(std::string(64, 'a') + ".example.com")->ends_with(
      "(it has 76 characters)"));  // a label of 64
  CHECK(ssh_destination_problem(fqdn + ". .edu").has_value());
  std::string long_name;
  while (long_name.size() <= 253) long_name += "abcdefghij.";
  long_name += "com";
  CHECK(ssh_destination_problem(long_name).has_value());
  // A directory service's user holds an '@' (ssh takes all before the last one as the user).
  CHECK(ssh_destination_problem("jdoe@corp.example.com@studio1") == std::nullopt);
  CHECK(ssh_destination_problem("a b@studio1")->starts_with(
      "SSH destination 'a b@studio1' is not valid: its user 'a b'"));
}
