#include "lab/files.h"

#include <string>

#include <doctest/doctest.h>

#include "lab/plan.h"
#include "lab/record.h"

using namespace cc::lab;

namespace {

LabRecord two_hosts() {
  auto plan = make_plan("t", Topology{2, "mesh", mesh_cables(2)}, {});
  REQUIRE(plan.ok());
  return record_from_plan(*plan, "/state/labs/t", 64ull << 20);
}

}  // namespace

TEST_CASE("files: the record of a plan") {
  LabRecord r = two_hosts();
  CHECK(r.state == "creating");
  CHECK(r.namespaces == std::vector<std::string>{"cc-t-h1", "cc-t-h2"});
  REQUIRE(r.hosts.size() == 2);
  CHECK(r.hosts[0].mgmt_interface == "en0");
  CHECK(r.hosts[0].ports == std::vector<std::string>{"tb1"});
  REQUIRE(r.cables.size() == 1);
  CHECK(r.cables[0].a.host == "h1");
  CHECK(r.cables[0].a.port == "tb1");
  CHECK(r.cables[0].b.host == "h2");
  CHECK(r.cables[0].b.mac == lab_mac(r.tag, 2, 1));
  CHECK(r.data_dir == "/run/clusterctl/labs/t/data");
  CHECK(r.data_size == 64ull << 20);
  CHECK(r.hosts[1].data_dir == "/run/clusterctl/labs/t/hosts/h2/data");
}

TEST_CASE("files: lab.json round-trips and names its file on errors") {
  LabRecord r = two_hosts();
  r.hosts[1].sshd_pid = 4242;
  r.hosts[1].machine_id = "4c0e2b6f9a1d4e3f8b7a6c5d4e3f2a1b";
  std::string text = lab_json_text(r);
  CHECK(text.rfind("{\n  \"version\": 1,\n  \"name\": \"t\",", 0) == 0);
  auto back = parse_lab_json(text, "lab.json");
  REQUIRE(back.ok());
  CHECK(back->hosts[1].sshd_pid == 4242);
  CHECK(back->hosts[1].machine_id == "4c0e2b6f9a1d4e3f8b7a6c5d4e3f2a1b");
  CHECK(back->hosts[0].machine_id.empty());
  CHECK(back->cables[0].b.port == "tb1");
  CHECK(back->data_dir == "/run/clusterctl/labs/t/data");
  CHECK(back->data_size == 64ull << 20);
  CHECK(back->hosts[0].data_dir == "/run/clusterctl/labs/t/hosts/h1/data");
  CHECK(lab_json_text(*back) == text);
  auto bad = parse_lab_json("{\"version\": 1}", "/x/lab.json");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.rfind("/x/lab.json: ", 0) == 0);
}

TEST_CASE("files: a lab.json from before the data directories still reads") {
  const std::string old_text = R"({"version": 1, "name": "t", "tag": "cc000001", "state": "up",
    "dir": "/state/labs/t", "topology": "mesh", "subnet": "10.7.9.0/24", "bridge": "cc000001br",
    "bridge_address": "10.7.9.254", "namespaces": ["cc-t-h1"],
    "hosts": [{"name": "h1", "namespace": "cc-t-h1", "address": "10.7.9.1",
               "mgmt_interface": "en0", "mgmt_mac": "02:00:00:00:00:01",
               "mgmt_link": "cc000001m1", "sshd_pid": 7, "ports": [], "free_ports": [],
               "machine_id": ""}],
    "cables": []})";
  auto old = parse_lab_json(old_text, "lab.json");
  REQUIRE(old.ok());
  CHECK(old->data_dir.empty());
  CHECK(old->data_size == 0);
  REQUIRE(old->hosts.size() == 1);
  CHECK(old->hosts[0].data_dir.empty());
  CHECK(old->hosts[0].sshd_pid == 7);
}

TEST_CASE("files: ssh_config, known_hosts, sshd_config, inventory") {
  LabRecord r = two_hosts();
  LabFiles files{"/state/labs/t"};
  std::string ssh = render_ssh_config(r, files);
  CHECK(ssh.find("\nHost h2\n  HostName " + r.hosts[1].address +
                 "\n  User root\n  Port 22\n  IdentityFile /state/labs/t/id_ed25519\n"
                 "  IdentitiesOnly yes\n  UserKnownHostsFile /state/labs/t/known_hosts\n"
                 "  StrictHostKeyChecking yes\n") != std::string::npos);

  auto known = render_known_hosts(
      r, {{"h1", "ssh-ed25519 AAAA1 h1@x\n"}, {"h2", "ssh-ed25519 AAAA2 h2@x\n"}});
  REQUIRE(known.ok());
  CHECK(*known ==
        r.hosts[0].address + " ssh-ed25519 AAAA1\n" + r.hosts[1].address + " ssh-ed25519 AAAA2\n");
  CHECK_FALSE(render_known_hosts(r, {{"h1", "ssh-ed25519 AAAA1"}}).ok());

  std::string sshd = render_sshd_config(r, r.hosts[0], files);
  for (std::string line :
       {"ListenAddress " + r.hosts[0].address + ":22\n",
        std::string("HostKey /state/labs/t/hosts/h1/ssh_host_ed25519_key\n"),
        std::string("PidFile /state/labs/t/hosts/h1/sshd.pid\n"),
        std::string("AuthorizedKeysFile /state/labs/t/id_ed25519.pub\n"),
        std::string("PermitRootLogin prohibit-password\n"), std::string("UsePAM no\n"),
        std::string("StrictModes no\n"), std::string("PasswordAuthentication no\n"),
        std::string("Subsystem sftp internal-sftp\n"), std::string("MaxSessions 128\n")}) {
    CHECK_MESSAGE(sshd.find(line) != std::string::npos, line);
  }

  auto inv = lab_inventory(r, files);
  CHECK(inv.path == "/state/labs/t/inventory.yaml");
  REQUIRE(inv.hosts.size() == 2);
  CHECK(inv.hosts[1].name == "h2");
  CHECK(inv.hosts[1].address == r.hosts[1].address);
}

TEST_CASE("files: paths with spaces are quoted, unusable paths are refused") {
  LabRecord r = two_hosts();
  LabFiles files{"/my labs/t"};
  CHECK(render_ssh_config(r, files).find("IdentityFile \"/my labs/t/id_ed25519\"") !=
        std::string::npos);
  CHECK(check_lab_dir_path("/my labs/t").ok());
  CHECK_FALSE(check_lab_dir_path("/a\"b").ok());
  CHECK_FALSE(check_lab_dir_path("/a%b").ok());
  CHECK_FALSE(check_lab_dir_path("relative/dir").ok());
}

TEST_CASE("files: each host's own machine ID, in the file ip netns exec bind-mounts") {
  CHECK(netns_etc_dir("cc-t-h1") == fs::path("/etc/netns/cc-t-h1"));
  const std::string a = random_machine_id(), b = random_machine_id();
  CHECK(a != b);
  for (const std::string& id : {a, b}) {
    REQUIRE(id.size() == 32);
    CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(id[12] == '4');                                          // version 4
    CHECK(std::string("89ab").find(id[16]) != std::string::npos);  // variant 10xx
  }
}
