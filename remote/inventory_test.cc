#include "remote/inventory.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "tests/temp_dir.h"
#include "util/address.h"
#include "util/atomic_file.h"

namespace fs = std::filesystem;
using cc::remote::Inventory;
using cc::remote::load_inventory;
using cc::remote::select_hosts;
using cc::test::TempDir;

namespace {

// Loads `text` as DIR/inventory.yaml; returns the error message, or "" when it loaded.
std::string load_error(const TempDir& d, const std::string& text) {
  fs::path p = d.path / "inventory.yaml";
  REQUIRE(cc::util::write_file_atomic(p, text).ok());
  auto r = load_inventory(p);
  if (r.ok()) return "";
  CHECK(r.error().code == cc::util::ExitCode::kUsage);
  return r.error().message;
}

}  // namespace

TEST_CASE("inventory: a full file loads, with paths resolved against its directory") {
  TempDir d{"cc-inv"};
  fs::path p = d.path / "inventory.yaml";
  REQUIRE(cc::util::write_file_atomic(p,
                                      "# lab\n"
                                      "ssh_config: ssh_config\n"
                                      "known_hosts: /etc/ssh/ssh_known_hosts\n"
                                      "hosts:\n"
                                      "  - name: h1\n"
                                      "    address: 10.0.0.1\n"
                                      "  - name: studio2\n"
                                      "    ssh: admin@studio2.local\n")
              .ok());
  auto inv = load_inventory(p);
  REQUIRE(inv.ok());
  CHECK(inv->path == p);
  REQUIRE(inv->ssh_config.has_value());
  CHECK(*inv->ssh_config == d.path / "ssh_config");
  CHECK(*inv->known_hosts == "/etc/ssh/ssh_known_hosts");
  REQUIRE(inv->hosts.size() == 2);
  CHECK(inv->hosts[0].name == "h1");
  CHECK(inv->hosts[0].ssh == "h1");
  CHECK(inv->hosts[0].address == "10.0.0.1");
  CHECK(inv->hosts[1].ssh == "admin@studio2.local");
  CHECK(inv->hosts[1].address == "");
  CHECK(inv->find("studio2") == &inv->hosts[1]);
  CHECK(inv->find("h2") == nullptr);
}

TEST_CASE("inventory: errors name file, line, column and the problem") {
  TempDir d{"cc-inv"};
  std::string file = (d.path / "inventory.yaml").string();
  CHECK(load_error(d, "hosts:\n  - name: h1\n  - nmae: h2\n") ==
        file + ":3:5: unknown key 'nmae' in 'hosts[1]' (did you mean 'name'?)");
  CHECK(load_error(d, "hosts:\n  - name: h1\n  - user: h2\n") ==
        file + ":3:5: unknown key 'user' in 'hosts[1]'; known keys: name, ssh, address");
  CHECK(load_error(d, "hosts:\n  - name: h1\n  - name: h1\n") ==
        file + ":3:11: host 'h1' appears twice (first at line 2)");
  CHECK(load_error(d, "hosts:\n  - address: 10.0.0.1\n") ==
        file + ":2:5: 'hosts[0]' has no 'name': give each host one, like '- name: h1'");
  CHECK(load_error(d, "host:\n  - name: h1\n")
            .find(":1:1: unknown key 'host' in the inventory "
                  "(did you mean 'hosts'?)") != std::string::npos);
  CHECK(load_error(d, "ssh_config: x\n") == file +
                                                ":1:1: missing 'hosts:', the list of the "
                                                "cluster's hosts");
  CHECK(load_error(d, "hosts: []\n") == file + ":1:8: 'hosts' lists no host");
  CHECK(load_error(d, "hosts:\n  - name: [a, b]\n") ==
        file + ":2:11: 'hosts[0].name': expected a single value (a string), got a list");
  CHECK(load_error(d, "hosts:\n  - name: 'h 1'\n").find(":2:11: host name 'h 1' is not valid") !=
        std::string::npos);
  CHECK(load_error(d, "hosts:\n  - name: h1\n    name: h2\n") ==
        file + ":3:5: 'hosts[0].name' appears twice (first at line 2)");
  CHECK(load_error(d, "hosts:\n  - name: all\n") ==
        file + ":2:11: host name 'all' is reserved: --hosts all means every host");
  CHECK(load_error(d, "hosts:\n  - name: h1\n    ssh: ''\n") ==
        file + ":3:10: 'hosts[0].ssh' is empty");
  // Every mistake of the file at once, in file order.
  CHECK(load_error(d, "known_hosts: ''\nhosts:\n  - name: a b\n  - nmae: h2\n  - name: h3\n") ==
        file + ":1:14: 'known_hosts' is empty\n" + file +
            ":3:11: host name 'a b' is not valid: use letters, digits, '.', '_' and '-', "
            "starting with a letter or digit, at most 64 characters (it has a space)\n" +
            file + ":4:5: unknown key 'nmae' in 'hosts[1]' (did you mean 'name'?)");
  std::string syntax = load_error(d, "hosts:\n  - name: h1\n   - name: [\n");
  CHECK(syntax.rfind(file + ":", 0) == 0);
  CHECK(load_error(d, "- h1\n- h2\n").find(":1:1: expected a mapping") != std::string::npos);
  auto missing = load_inventory(d.path / "nope.yaml");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find((d.path / "nope.yaml").string()) != std::string::npos);
}

TEST_CASE("inventory: an address that cannot be an address is refused at FILE:LINE:COLUMN") {
  TempDir d{"cc-inv"};
  const std::string file = (d.path / "inventory.yaml").string();
  auto with = [&](const std::string& address) {
    return load_error(d, "hosts:\n  - name: h1\n    address: " + address + "\n");
  };
  CHECK(with("10.0.0.300") == file +
                                  ":3:14: 'hosts[0].address': '10.0.0.300' is not an IPv4 address: "
                                  "300 is not a number from 0 to 255");
  CHECK(with("10.0.0.1:5000") == file +
                                     ":3:14: 'hosts[0].address': '10.0.0.1:5000' has a port "
                                     "(':5000'): give the address alone, 10.0.0.1");
  CHECK(with("1.2.3").starts_with(file + ":3:14: 'hosts[0].address': '1.2.3' is not an IPv4 "
                                         "address: it has 3 parts"));
  CHECK(with("host name").starts_with(file + ":3:14: 'hosts[0].address': 'host name' has a space"));
  CHECK(with("\"\"").starts_with(file + ":3:14: 'hosts[0].address': '' is empty"));
  CHECK(with("studio1").starts_with(file + ":3:14: 'hosts[0].address': 'studio1' is a host name"));
  // IPv6, and a scoped one as the SSH destination, as ssh takes it.
  CHECK(with("2001:db8::1") == "");
  CHECK(load_error(d, "hosts:\n  - name: h1\n    ssh: fe80::1%en0\n    address: 2001:db8::11\n") ==
        "");
  fs::path p = d.path / "inventory.yaml";
  auto inv = load_inventory(p);
  REQUIRE(inv.ok());
  CHECK(inv->hosts[0].ssh == "fe80::1%en0");
  CHECK(inv->hosts[0].address == "2001:db8::11");
}

TEST_CASE("inventory: a management address the other hosts cannot reach is refused, as hostfiles do") {
  // It became the coordinator address (rank 0's), which no other host reaches: a link-local
  // IPv6 one without a scope names no link, and a scope an interface of one machine only; a
  // self-assigned IPv4 one leaves by whichever port holds each host's one 169.254/16 route; a
  // loopback one is each host itself. The inventory said it in words of its own (and let
  // loopback through), where the hostfile readers say util::rank_address_problem's.
  TempDir d{"cc-inv"};
  const std::string file = (d.path / "inventory.yaml").string();
  const std::string why =
      ": in an inventory of 2 hosts the management address is where the other hosts reach this "
      "one (rank 0's is the coordinator): give an address they reach it on ('ssh' may still "
      "name this one, as ssh takes it)";
  const auto two = [&](const std::string& address) {
    return load_error(d, "hosts:\n  - name: h1\n    address: 10.0.0.1\n  - name: h2\n"
                         "    ssh: " + address + "\n    address: " + address + "\n");
  };
  for (const std::string& address : {std::string("fe80::1"), std::string("fe80::1%en0"),
                                     std::string("169.254.3.1"), std::string("127.0.0.1"),
                                     std::string("::1"), std::string("0.0.0.0")}) {
    CAPTURE(address);
    CHECK(two(address) == file + ":6:14: 'hosts[1].address': '" + address + "' of host 'h2' " +
                              *cc::util::rank_address_problem(address) + why);
  }
  // The address before the name, and every other mistake of the file in the same run.
  CHECK(load_error(d, "hosts:\n  - address: FEBF::2\n    name: h1\n  - name: h1\n") ==
        file + ":2:14: 'hosts[0].address': 'FEBF::2' of host 'h1' " +
            *cc::util::rank_address_problem("FEBF::2") + why + "\n" + file +
            ":4:11: host 'h1' appears twice (first at line 3)");
  // Not link-local: fec0::/10 (site-local, deprecated but routable), 169.253, a global address.
  CHECK(two("fec0::1") == "");
  CHECK(two("169.253.3.1") == "");
  CHECK(two("2001:db8::2") == "");
  // One host alone, as a hostfile of one: its ranks reach it on its own machine.
  CHECK(load_error(d, "hosts:\n  - name: h1\n    ssh: fe80::1%en0\n    address: fe80::1%en0\n") ==
        "");
  CHECK(load_error(d, "hosts:\n  - name: h1\n    address: 127.0.0.1\n") == "");
}

TEST_CASE("inventory: names that differ only in case or a final dot are one host") {
  TempDir d{"cc-inv"};
  const std::string file = (d.path / "inventory.yaml").string();
  CHECK(load_error(d, "hosts:\n  - name: Studio1\n  - name: studio2\n  - name: studio1\n") ==
        file +
            ":4:11: host 'studio1' appears twice: it is 'Studio1' of line 2 (host names "
            "ignore case and a final dot); list each host once");
  CHECK(load_error(d, "hosts:\n  - name: studio1\n  - name: studio1.\n") ==
        file +
            ":3:11: host 'studio1.' appears twice: it is 'studio1' of line 2 (host names "
            "ignore case and a final dot); list each host once");
  Inventory inv;
  for (const char* n : {"studio1", "studio2"}) inv.hosts.push_back({n, n, ""});
  auto both = select_hosts(inv, "studio1,STUDIO1");
  REQUIRE_FALSE(both.ok());
  CHECK(both.error().message ==
        "--hosts names one host twice, as 'studio1' and 'STUDIO1' (host names ignore case and a "
        "final dot): give it once");
  // Found ignoring case and a final dot, under the inventory's own name.
  for (const char* given : {"STUDIO2", "studio2.", "Studio2."}) {
    CAPTURE(given);
    auto one = select_hosts(inv, given);
    REQUIRE(one.ok());
    REQUIRE(one->size() == 1);
    CHECK(one->front().name == "studio2");
    CHECK(inv.find(given) == &inv.hosts[1]);
    CHECK(inv.by_name().find(given) == &inv.hosts[1]);
  }
  CHECK(inv.by_name().find("studio3") == nullptr);
  CHECK(cc::remote::check_distinct_hosts({"a", "b"}, "--hosts").ok());
  CHECK(cc::remote::check_distinct_hosts({"mac1", "Mac1."}, "--hosts").error().message ==
        "--hosts names one host twice, as 'mac1' and 'Mac1.' (host names ignore case and a final "
        "dot): give it once");
}

TEST_CASE("inventory: one machine under two names (same ssh destination or address) is refused") {
  TempDir d{"cc-inv"};
  const std::string file = (d.path / "inventory.yaml").string();
  CHECK(load_error(d,
                   "hosts:\n"
                   "  - name: studio1\n"
                   "    address: 10.0.0.1\n"
                   "  - name: studio2\n"
                   "    address: 10.0.0.2\n"
                   "  - name: gpu\n"
                   "    address: 10.0.0.1\n") ==
        file +
            ":7:14: hosts 'gpu' and 'studio1' (line 3) are one machine: both have the address "
            "10.0.0.1; list each machine once (for more ranks on it, set ranks_per_host in the "
            "job)");
  // An ssh alias of another entry's name (host names compared as util::host_key does).
  CHECK(load_error(d,
                   "hosts:\n"
                   "  - name: studio1\n"
                   "  - name: big\n"
                   "    ssh: Studio1\n") ==
        file +
            ":4:10: hosts 'big' and 'studio1' (line 2) are one machine: both are reached as ssh "
            "Studio1; list each machine once (for more ranks on it, set ranks_per_host in the "
            "job)");
  // Distinct destinations and addresses load.
  CHECK(load_error(d,
                   "hosts:\n"
                   "  - name: a\n"
                   "    ssh: admin@a\n"
                   "    address: 10.0.0.1\n"
                   "  - name: b\n"
                   "    address: 10.0.0.2\n") == "");
}

TEST_CASE("inventory: bad addresses, a name repeated in another case and a bad key, all at once") {
  TempDir d{"cc-inv"};
  const std::string file = (d.path / "inventory.yaml").string();
  // Each entry is read whole: its address being wrong hides neither its name nor its keys.
  CHECK(load_error(d,
                   "hosts:\n"
                   "  - name: Studio1\n"
                   "    address: 10.0.0.300\n"
                   "  - name: studio1\n"
                   "    address: 1.2.3\n"
                   "    user: admin\n") ==
        file +
            ":3:14: 'hosts[0].address': '10.0.0.300' is not an IPv4 address: 300 is not a "
            "number from 0 to 255\n" +
            file +
            ":4:11: host 'studio1' appears twice: it is 'Studio1' of line 2 (host names ignore "
            "case and a final dot); list each host once\n" +
            file +
            ":5:14: 'hosts[1].address': '1.2.3' is not an IPv4 address: it has 3 parts, and an "
            "address is four numbers from 0 to 255 separated by dots\n" +
            file + ":6:5: unknown key 'user' in 'hosts[1]'; known keys: name, ssh, address");
}

TEST_CASE("inventory: save then load gives the same inventory") {
  TempDir d{"cc-inv"};
  Inventory inv;
  inv.ssh_config = d.path / "ssh_config";
  inv.known_hosts = d.path / "known_hosts";
  for (int i = 1; i <= 3; ++i) {
    inv.hosts.push_back(
        {"h" + std::to_string(i), "h" + std::to_string(i), "10.77.0." + std::to_string(10 + i)});
  }
  inv.hosts[2].ssh = "root@10.77.0.13";
  fs::path p = d.path / "inventory.yaml";
  REQUIRE(cc::remote::save_inventory(p, inv).ok());
  auto text = cc::util::read_file(p);
  REQUIRE(text.ok());
  CHECK(text->find("ssh_config: ssh_config\n") != std::string::npos);  // relative, portable
  CHECK(text->find("known_hosts: known_hosts\n") != std::string::npos);
  auto back = load_inventory(p);
  REQUIRE(back.ok());
  CHECK(*back->ssh_config == *inv.ssh_config);
  CHECK(*back->known_hosts == *inv.known_hosts);
  REQUIRE(back->hosts.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(back->hosts[i].name == inv.hosts[i].name);
    CHECK(back->hosts[i].ssh == inv.hosts[i].ssh);
    CHECK(back->hosts[i].address == inv.hosts[i].address);
  }
}

TEST_CASE("select_hosts: all, lists, and unknown names") {
  Inventory inv;
  inv.path = "/lab/inventory.yaml";
  for (const char* n : {"h1", "h2", "h3", "studio1"}) inv.hosts.push_back({n, n, ""});
  auto all = select_hosts(inv, "all");
  REQUIRE(all.ok());
  CHECK(all->size() == 4);
  auto some = select_hosts(inv, "h3, h1,");
  REQUIRE(some.ok());
  REQUIRE(some->size() == 2);
  CHECK((*some)[0].name == "h3");
  CHECK((*some)[1].name == "h1");
  // A host listed twice is refused, as the README says, never run once in silence.
  auto twice = select_hosts(inv, "h3, h1,h3,");
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().message == "--hosts names host 'h3' twice: give it once");
  CHECK(cc::remote::split_host_list(" h1,,h1 ,h2") == std::vector<std::string>{"h1", "h1", "h2"});
  auto bad = select_hosts(inv, "h1,studoi1");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message ==
        "no host 'studoi1' in /lab/inventory.yaml (did you mean 'studio1'?); its hosts: h1, h2, "
        "h3, studio1");
  // A name with a control character or a byte that is no UTF-8 is shown escaped, on one line:
  // a newline in a job's `hosts:` split the message in two.
  CHECK(cc::remote::unknown_host_error("h\nx", {"alpha"}, "/lab/inventory.yaml").message ==
        "no host \"h\\nx\" in /lab/inventory.yaml; its hosts: alpha");
  CHECK(cc::remote::unknown_host_error("st\xc3\xbc\xff", {"alpha"}, "/lab/inventory.yaml")
            .message == "no host \"st\xc3\xbc\\xff\" in /lab/inventory.yaml; its hosts: alpha");
  auto empty = select_hosts(inv, " , ");
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().code == cc::util::ExitCode::kUsage);
}

TEST_CASE("lab_dir follows XDG_STATE_HOME, else HOME") {
  const char* old_xdg = std::getenv("XDG_STATE_HOME");
  std::string saved = old_xdg != nullptr ? old_xdg : "";
  ::setenv("XDG_STATE_HOME", "/var/tmp/state", 1);
  CHECK(cc::remote::lab_dir("ct8") == fs::path("/var/tmp/state/clusterctl/labs/ct8"));
  ::unsetenv("XDG_STATE_HOME");
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') {
    CHECK(cc::remote::lab_dir("x") == fs::path(home) / ".local/state/clusterctl/labs/x");
  }
  if (old_xdg != nullptr) ::setenv("XDG_STATE_HOME", saved.c_str(), 1);
}
