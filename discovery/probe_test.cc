#include "discovery/probe.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "discovery/linux_system.h"
#include "discovery/machine_id.h"
#include "remote/local_executor.h"
#include "remote/replay_executor.h"
#include "util/atomic_file.h"

using namespace cc::discovery;
using namespace std::chrono_literals;

namespace {

const std::string kBundle = std::string(CLUSTERCTL_TEST_DATA) + "/bundles/mac-pair";

std::string section(const std::string& nonce, const std::string& key, const std::string& out,
                    const std::string& err, int status) {
  std::string m = "@@clusterctl-" + nonce + "@@";
  return m + " out " + key + "\n" + out + "\n" + m + " err " + key + "\n" + err + "\n" + m +
         " exit " + key + " " + std::to_string(status) + "\n";
}

}  // namespace

TEST_CASE("probe: sections split back into stdout, stderr and exit status, byte for byte") {
  std::string nonce = "0123456789abcdef";
  std::string text = section(nonce, "uname_-s", "Linux\n", "", 0) +
                     section(nonce, "printf", "no final newline", "warn\nwarn2", 3) +
                     // A forged marker with another nonce is just output.
                     section(nonce, "cat", "@@clusterctl-ffffffffffffffff@@ out x\n", "", 0);
  auto r = split_probe_output("h1", text, nonce);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  REQUIRE(r->by_key.size() == 3);
  CHECK(r->by_key.at("uname_-s").out == "Linux\n");
  CHECK(r->by_key.at("printf").out == "no final newline");
  CHECK(r->by_key.at("printf").err == "warn\nwarn2");
  CHECK(r->by_key.at("printf").exit_status == 3);
  CHECK(r->by_key.at("cat").out == "@@clusterctl-ffffffffffffffff@@ out x\n");

  auto cut = split_probe_output("h1", text.substr(0, text.size() - 30), nonce);
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.error().message ==
        "h1: the output of `cat` is cut short (the probe was killed or timed out)");
  CHECK(split_probe_output("h1", "", nonce)->by_key.empty());
}

TEST_CASE("probe: the nonce is 16 hex digits and differs between runs") {
  std::string a = make_nonce(), b = make_nonce();
  CHECK(a.size() == 16);
  CHECK(a.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(a != b);
}

TEST_CASE("probe: the Linux probe runs as one sh script on this machine") {
  cc::remote::LocalExecutor local("this-machine");
  auto outputs = run_host_probe(local, ProbeMode::kScript, 30s);
  REQUIRE_MESSAGE(outputs.ok(), (outputs.ok() ? "" : outputs.error().message));
  for (const auto& c : probe_commands(ProbeOs::kLinux)) {
    CHECK_MESSAGE(outputs->find(c) != nullptr, c.line);
  }
  CHECK(outputs->find(uname_command())->out == "Linux\n");
  auto os_release = cc::util::read_file("/etc/os-release");
  REQUIRE(os_release.ok());
  CHECK(outputs->find(probe_commands(ProbeOs::kLinux)[2])->out == *os_release);

  auto facts = facts_from_probe("this-machine", *outputs, "127.0.0.1");
  REQUIRE_MESSAGE(facts.ok(), (facts.ok() ? "" : facts.error().message));
  CHECK(facts->host == "this-machine");
  CHECK(facts->os.name == parse_os_release(*os_release)->name);
  CHECK(facts->memory_bytes > 0);
  CHECK(facts->management_address == "127.0.0.1");  // no SSH_CONNECTION locally
  bool has_lo = false;
  for (const auto& i : facts->interfaces) has_lo |= i.name == "lo" && i.kind == "loopback";
  CHECK(has_lo);
  for (const auto& p : facts->ports) CHECK(p.interface->name != "lo");
  // This machine's own /etc/machine-id (as `cat` prints it), and no SSH connection.
  if (auto id = cc::util::read_file("/etc/machine-id"); id && parse_machine_id(*id)) {
    CHECK(facts->machine_id == *parse_machine_id(*id));
  }
  CHECK(!facts->ssh_host_key);
}

TEST_CASE("probe: parallel commands keep their own outputs, a missing one exits 127") {
  cc::remote::LocalExecutor local;
  std::vector<ProbeCommand> cmds{{"printf one", {"printf", "one"}},
                                 {"sh -c 'printf two >&2; exit 4'",
                                  {"sh", "-c", "printf two >&2; exit 4"}},
                                 {"no-such-tool-xyz", {"no-such-tool-xyz"}}};
  auto r = run_commands(local, cmds, ProbeMode::kScript, 10s);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  CHECK(r->find(cmds[0])->out == "one");
  CHECK(r->find(cmds[0])->exit_status == 0);
  CHECK(r->find(cmds[1])->err == "two");
  CHECK(r->find(cmds[1])->exit_status == 4);
  CHECK(r->find(cmds[2])->exit_status == 127);
  CHECK(classify_command(r->find(cmds[2])->exit_status, r->find(cmds[2])->err) ==
        CommandOutcome::kMissing);
}

TEST_CASE("probe: a probe cut short by its timeout leaves no directory in TMPDIR") {
  // The executor ends the script's process group on timeout, as on Ctrl-C: the script's own
  // trap removes its clusterctl-probe.XXXXXX (it was left behind, one per host, when the
  // group got SIGKILL at once), its background commands still running and writing there.
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("cc-probe-test-" + make_nonce());
  std::filesystem::create_directory(tmp);
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);
  cc::remote::LocalExecutor local("this-machine");
  std::vector<ProbeCommand> cmds{
      {"sleep 30", {"sleep", "30"}},
      {"sh -c 'echo started; sleep 30'", {"sh", "-c", "echo started; sleep 30"}}};
  auto r = run_commands(local, cmds, ProbeMode::kScript, 1s);
  if (old != nullptr) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "this-machine: the probe did not finish within 1 s (raise --timeout, "
        "or check the host)");
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(tmp)) {
    left.push_back(e.path().filename().string());
  }
  std::filesystem::remove_all(tmp);
  CHECK(left.empty());
  if (!left.empty()) MESSAGE("left in TMPDIR: " << left.front());
}

TEST_CASE("probe: a replayed Mac bundle gives the Mac's facts, command by command") {
  cc::remote::ReplayExecutor a(kBundle, "a");
  auto outputs = run_host_probe(a, ProbeMode::kEach, 5s);
  REQUIRE_MESSAGE(outputs.ok(), (outputs.ok() ? "" : outputs.error().message));
  CHECK(outputs->find(ssh_connection_command()) == nullptr);  // not recorded: left out
  auto facts = facts_from_probe("a", *outputs, "10.0.0.5");
  REQUIRE_MESSAGE(facts.ok(), (facts.ok() ? "" : facts.error().message));
  CHECK(facts->os.name == "macOS");
  CHECK(facts->os.version == "27.0");
  CHECK(facts->management_address == "10.0.0.5");
  CHECK(facts->rdma.state == RdmaState::kDisabled);
  REQUIRE(facts->ports.size() == 3);
  CHECK(facts->ports[1].receptacle == 2);
  CHECK(facts->ports[1].interface->name == "en6");
  CHECK(facts->ports[1].interface->ipv6 == std::vector<std::string>{"fe80::a:1"});

  cc::remote::ReplayExecutor missing(kBundle, "c");
  auto none = run_host_probe(missing, ProbeMode::kEach, 5s);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == cc::util::ExitCode::kUnreachable);
}

TEST_CASE("probe: collected outputs are written in the replay layout and read back the same") {
  auto dir = std::filesystem::temp_directory_path() / ("cc-probe-test-" + make_nonce());
  ProbeOutputs o;
  o.by_key["uname_-s"] = RawOutput{"Linux\n", "", 0};
  o.by_key["rdma_-j_link"] = RawOutput{"", "Failed to open NETLINK_RDMA socket\n", 1};
  REQUIRE(save_probe_outputs(dir / "h1", o).ok());
  cc::remote::ReplayExecutor h1(dir, "h1");
  auto back = h1.run({{"rdma", "-j", "link"}, false}, {});
  REQUIRE(back.ok());
  CHECK(back->exit_status == 1);
  CHECK(back->err == "Failed to open NETLINK_RDMA socket\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("probe: the machine's identity from a replayed Mac and Linux host") {
  cc::remote::ReplayExecutor a(kBundle, "a");
  auto outputs = run_host_probe(a, ProbeMode::kEach, 5s);
  REQUIRE_MESSAGE(outputs.ok(), (outputs.ok() ? "" : outputs.error().message));
  auto mac = facts_from_probe("a", *outputs, "10.0.0.5");
  REQUIRE_MESSAGE(mac.ok(), (mac.ok() ? "" : mac.error().message));
  CHECK(mac->machine_id == "A1B2C3D4-0000-4A00-8000-00000000000A");  // IOPlatformUUID
  CHECK(!mac->ssh_host_key);                                         // the bundle kept none

  const std::string linux_bundle = std::string(CLUSTERCTL_TEST_DATA) + "/bundles/linux-two-names";
  cc::remote::ReplayExecutor gpu1(linux_bundle, "gpu1-ts");
  outputs = run_host_probe(gpu1, ProbeMode::kEach, 5s);
  REQUIRE_MESSAGE(outputs.ok(), (outputs.ok() ? "" : outputs.error().message));
  CHECK(outputs->ssh_host_key == "SHA256:Zk3r8pQwVh2mB9xTn4LsYc7uJd1eGf6aHk0oPi5vRtE");
  auto facts = facts_from_probe("gpu1-ts", *outputs, "");
  REQUIRE_MESSAGE(facts.ok(), (facts.ok() ? "" : facts.error().message));
  CHECK(facts->management_address == "100.64.0.5");
  CHECK(facts->machine_id == "4c0e2b6f9a1d4e3f8b7a6c5d4e3f2a1b");
  CHECK(facts->ssh_host_key == "SHA256:Zk3r8pQwVh2mB9xTn4LsYc7uJd1eGf6aHk0oPi5vRtE");
}

TEST_CASE("probe: /var/lib/dbus/machine-id stands in for a missing or unusable /etc/machine-id") {
  ProbeOutputs o;
  o.by_key["uname_-s"] = RawOutput{"Linux\n", "", 0};
  o.by_key["cat_etc_os-release"] =
      RawOutput{"NAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\n", "", 0};
  o.by_key["cat_proc_meminfo"] = RawOutput{"MemTotal:       16384 kB\n", "", 0};
  o.by_key["ip_-j_-d_addr_show"] = RawOutput{"[]\n", "", 0};
  o.by_key["cat_var_lib_dbus_machine-id"] = RawOutput{"9d8c7b6a5f4e4d3c8b2a19f8e7d6c5b4\n", "", 0};
  o.by_key["cat_etc_machine-id"] =
      RawOutput{"", "cat: /etc/machine-id: No such file or directory\n", 1};
  auto f = facts_from_probe("c1", o, "10.0.0.9");
  REQUIRE_MESSAGE(f.ok(), (f.ok() ? "" : f.error().message));
  CHECK(f->machine_id == "9d8c7b6a5f4e4d3c8b2a19f8e7d6c5b4");
  o.by_key["cat_etc_machine-id"] = RawOutput{"uninitialized\n", "", 0};  // first boot
  f = facts_from_probe("c1", o, "10.0.0.9");
  REQUIRE(f.ok());
  CHECK(f->machine_id == "9d8c7b6a5f4e4d3c8b2a19f8e7d6c5b4");
  o.by_key["cat_etc_machine-id"] = RawOutput{"4c0e2b6f9a1d4e3f8b7a6c5d4e3f2a1b\n", "", 0};
  f = facts_from_probe("c1", o, "10.0.0.9");
  REQUIRE(f.ok());
  CHECK(f->machine_id == "4c0e2b6f9a1d4e3f8b7a6c5d4e3f2a1b");  // /etc/machine-id first
  o.by_key.erase("cat_etc_machine-id");
  o.by_key.erase("cat_var_lib_dbus_machine-id");
  f = facts_from_probe("c1", o, "10.0.0.9");  // neither (a container): unknown, no error
  REQUIRE(f.ok());
  CHECK(!f->machine_id);
}

TEST_CASE("probe: the host key fingerprint is saved beside the outputs and replayed") {
  auto dir = std::filesystem::temp_directory_path() / ("cc-probe-test-" + make_nonce());
  ProbeOutputs o;
  o.by_key["uname_-s"] = RawOutput{"Linux\n", "", 0};
  o.ssh_host_key = "SHA256:Qm7tX2wLp9sVb4nHc8rKz1yJf6uDg3eAo5iWq0xNvPk";
  REQUIRE(save_probe_outputs(dir / "h1", o).ok());
  auto text = cc::util::read_file(dir / "h1" / "ssh-host-key");
  REQUIRE(text.ok());
  CHECK(*text == "SHA256:Qm7tX2wLp9sVb4nHc8rKz1yJf6uDg3eAo5iWq0xNvPk\n");
  cc::remote::ReplayExecutor h1(dir, "h1");
  auto back = run_host_probe(h1, ProbeMode::kEach, 5s);
  REQUIRE_MESSAGE(back.ok(), (back.ok() ? "" : back.error().message));
  CHECK(back->ssh_host_key == "SHA256:Qm7tX2wLp9sVb4nHc8rKz1yJf6uDg3eAo5iWq0xNvPk");
  o.ssh_host_key.clear();  // none (a local host): no file
  REQUIRE(save_probe_outputs(dir / "h2", o).ok());
  CHECK(!std::filesystem::exists(dir / "h2" / "ssh-host-key"));
  std::filesystem::remove_all(dir);
}
