#include "healthcheck/quick_checks.h"

#include <algorithm>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "provision/network_plan.h"
#include "topology/test_states.h"

namespace cc::healthcheck {
namespace {

using discovery::ClusterState;
namespace tt = topology::testing;

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// A planned 4-host lab mesh and, per host, a healthy sample of it with the addresses applied.
struct Fixture {
  ClusterState expected = tt::lab_mesh(4);
  std::vector<HostOutcome> outcomes;
  Thresholds t;
  Fixture() {
    auto plan = provision::plan_network(expected, {});
    REQUIRE_MESSAGE(plan.ok(), (plan.ok() ? "" : plan.error().message));
    expected.network = *plan;
    for (const auto& h : expected.hosts) {
      HostSample s;
      s.facts = h;
      for (const auto& l : expected.network) {
        for (auto [end, addr] : {std::pair{&l.a, &l.a_address}, std::pair{&l.b, &l.b_address}}) {
          if (end->host != h.host) continue;
          for (auto& p : s.facts.ports) {
            if (p.interface && p.interface->name == end->interface) {
              p.interface->ipv4.push_back(*addr);
            }
          }
        }
      }
      s.clock_offset_s = 0.01;
      s.clock_uncertainty_s = 0.05;
      s.memory_available_bytes = 8 * kGiB;
      s.disk_free_bytes = 50 * kGiB;
      s.disk_path = "/";
      s.clusterctl_version = "0.1.0";
      s.probe_s = 0.2;
      outcomes.push_back({h.host, s, std::nullopt});
    }
  }
  Report run() const {
    Report r;
    quick_checks(expected, outcomes, t, "0.1.0", r);
    return r;
  }
  HostSample& sample(const std::string& host) {
    for (auto& o : outcomes) {
      if (o.host == host) return *o.sample;
    }
    throw std::out_of_range(host);
  }
};

const CheckResult& find(const Report& r, const std::string& subject, const std::string& check) {
  for (const auto& c : r.results) {
    if (c.subject == subject && c.check == check) return c;
  }
  FAIL("no result " << subject << " " << check);
  throw std::logic_error("unreachable");
}

std::vector<std::string> non_passing(const Report& r) {
  std::vector<std::string> out;
  for (const auto& c : r.results) {
    if (c.status != Status::kPass) {
      out.push_back(fmt::format("{} {} {}", to_string(c.status), c.subject, c.check));
    }
  }
  return out;
}

TEST_CASE("quick checks: a healthy planned lab passes every check") {
  Fixture f;
  Report r = f.run();
  // 4 hosts x 7 checks + 6 cables x 3 (no Thunderbolt speed on veths).
  CHECK(r.results.size() == 4 * 7 + 6 * 3);
  CHECK(non_passing(r).empty());
  CHECK(exit_code(r) == util::ExitCode::kOk);
  // No RDMA device on a Linux host: TCP, which passes unless RDMA is required.
  CHECK(find(r, "h2", "rdma").measured == "no-device (TCP)");
  CHECK(find(r, "h1:tb1-h2:tb1", "rdma").measured == "TCP only");
  CHECK(find(r, "h1:tb1-h2:tb1", "addresses").status == Status::kPass);
  CHECK(r.versions.size() == 4);
  CHECK(r.versions[0].os == "Debian GNU/Linux 12");
  // With RDMA required, the same lab FAILs on RDMA.
  f.t.rdma_required = true;
  CHECK(find(f.run(), "h3", "rdma").status == Status::kFail);
}

TEST_CASE("quick checks: another machine answering under a host's name FAILs identity") {
  Fixture f;
  Report plain = f.run();
  for (const auto& c : plain.results) CHECK(c.check != "identity");  // nothing recorded
  for (auto& h : f.expected.hosts) {
    h.machine_id = "id-" + h.host;
    h.ssh_host_key = "SHA256:key-" + h.host;
  }
  for (auto& o : f.outcomes) {
    o.sample->facts.machine_id = "id-" + o.host;
    o.sample->facts.ssh_host_key = "SHA256:key-" + o.host;
  }
  f.sample("h3").facts.machine_id = "id-new";
  f.sample("h4").facts.ssh_host_key.reset();  // not known now: only the machine ID compared
  Report r = f.run();
  CHECK(r.results.size() == plain.results.size() + 4);
  CHECK(find(r, "h1", "identity").status == Status::kPass);
  CHECK(find(r, "h1", "identity").detail ==
        "h1: the same machine ID and SSH host key as discovered");
  CHECK(find(r, "h4", "identity").detail == "h4: the same machine ID as discovered");
  const CheckResult& id = find(r, "h3", "identity");
  CHECK(id.status == Status::kFail);
  CHECK(id.measured == "another machine");
  CHECK(id.detail ==
        "h3 is not the machine discovered under that name: machine ID id-new, "
        "discovered id-h3");
  CHECK(id.fix.find("run `clusterctl discover` again") != std::string::npos);
  CHECK(non_passing(r) == std::vector<std::string>{"FAIL h3 identity"});
  CHECK(exit_code(r) == util::ExitCode::kCheckFailed);
}

TEST_CASE("quick checks: one cable end down FAILs that cable, naming both ends") {
  Fixture f;
  for (auto& p : f.sample("h3").facts.ports) {
    if (p.interface->name == "tb2") p.interface->running = false;  // h2-h3 at h3's end
  }
  Report r = f.run();
  const CheckResult& link = find(r, "h2:tb2-h3:tb2", "link-up");
  CHECK(link.status == Status::kFail);
  CHECK(link.detail == "cable h2 tb2 - h3 tb2 is down: h3 tb2: no carrier");
  int link_fails = 0;
  for (const auto& c : r.results) link_fails += c.check == "link-up" && c.status == Status::kFail;
  CHECK(link_fails == 1);
  CHECK(exit_code(r) == util::ExitCode::kCheckFailed);
}

TEST_CASE("quick checks: a cable end administratively down gets the command that brings it up") {
  // The trial: `ip link set tb3 down` on h2; h4's end of that cable then has no carrier.
  Fixture f;
  for (auto& p : f.sample("h2").facts.ports) {
    if (p.interface->name == "tb3") p.interface->up = p.interface->running = false;
  }
  for (auto& p : f.sample("h4").facts.ports) {
    if (p.interface->name == "tb2") p.interface->running = false;
  }
  Report r = f.run();
  const CheckResult& link = find(r, "h2:tb3-h4:tb2", "link-up");
  CHECK(link.status == Status::kFail);
  CHECK(link.detail ==
        "cable h2 tb3 - h4 tb2 is down: h2 tb3: administratively down; h4 tb2: no carrier");
  CHECK(link.fix ==
        "bring the port that is down up: on h2 `sudo ip link set dev tb3 up`; if the cable still "
        "has no carrier then, reseat the cable between h2 tb3 and h4 tb2");

  // On a Mac it is ifconfig, and a name as the host reported it is shell-quoted.
  Fixture m;
  m.sample("h2").facts.os.name = "macOS";
  for (auto& p : m.sample("h2").facts.ports) {
    if (p.interface->name == "tb3") p.interface->up = p.interface->running = false;
  }
  for (auto& p : m.sample("h4").facts.ports) {
    if (p.interface->name == "tb2") p.interface->up = p.interface->running = false;
  }
  CHECK(find(m.run(), "h2:tb3-h4:tb2", "link-up").fix ==
        "bring the ports that are down up: on h2 `sudo ifconfig tb3 up`, on h4 `sudo ip link set "
        "dev tb2 up`; if the cable still has no carrier then, reseat the cable between h2 tb3 and "
        "h4 tb2");

  // No carrier on an end that is up: nothing to bring up, the cable is the suspect.
  Fixture c;
  for (auto& p : c.sample("h4").facts.ports) {
    if (p.interface->name == "tb2") p.interface->running = false;
  }
  CHECK(find(c.run(), "h2:tb3-h4:tb2", "link-up").fix ==
        "reseat the cable between h2 tb3 and h4 tb2 and bring both interfaces up");
}

TEST_CASE("quick checks: the fixes' commands name the cluster as given, runnable as printed") {
  Fixture f;
  f.sample("h2").facts.ports[0].interface->ipv4.clear();  // h1-h2 at h2 tb1
  Report r;
  quick_checks(f.expected, f.outcomes, f.t, "0.1.0", r,
               cc::discovery::FixCommand{"--lab t3a", "my lab.json", ""});
  CHECK(find(r, "h1:tb1-h2:tb1", "addresses").fix ==
        "run `clusterctl network apply --lab t3a 'my lab.json'`");
  f.expected.network.clear();  // no plan at all
  Report none;
  quick_checks(f.expected, f.outcomes, f.t, "0.1.0", none,
               cc::discovery::FixCommand{"", "cluster.json", ""});
  CHECK(find(none, "h1:tb1-h2:tb1", "addresses").fix ==
        "run `clusterctl network plan cluster.json`, then `clusterctl network apply "
        "cluster.json`");
}

TEST_CASE("quick checks: a missing planned address, versions, clock, memory, disk") {
  Fixture f;
  f.sample("h2").facts.ports[0].interface->ipv4.clear();  // h1-h2 at h2 tb1
  f.sample("h4").facts.os.version = "11";
  f.sample("h3").clusterctl_version = "0.0.9";
  f.sample("h1").clusterctl_version.reset();
  f.sample("h1").clusterctl_problem = "`clusterctl --version` exited 127";
  f.sample("h2").clock_offset_s = 3.0;
  f.sample("h3").memory_available_bytes = kGiB / 2;
  f.sample("h4").disk_free_bytes.reset();
  Report r = f.run();
  const auto& addr = find(r, "h1:tb1-h2:tb1", "addresses");
  CHECK(addr.status == Status::kFail);
  CHECK(addr.detail.find("planned address missing on h2 tb1 10.231.") != std::string::npos);
  const auto& os = find(r, "h4", "os-version");
  CHECK(os.status == Status::kFail);
  CHECK(os.detail == "h4 runs Debian GNU/Linux 11, while h1, h2, h3 run Debian GNU/Linux 12");
  CHECK(find(r, "h1", "os-version").status == Status::kPass);
  CHECK(find(r, "h3", "clusterctl-version").status == Status::kFail);
  CHECK(find(r, "h1", "clusterctl-version").status == Status::kWarn);
  const auto& clock = find(r, "h2", "clock-skew");
  CHECK(clock.status == Status::kFail);
  CHECK(*clock.value == doctest::Approx(2.99));
  CHECK(find(r, "h1", "clock-skew").status == Status::kPass);
  CHECK(find(r, "h3", "free-memory").status == Status::kFail);
  CHECK(find(r, "h3", "free-memory").measured == "0.5 GiB");
  CHECK(find(r, "h4", "disk-space").status == Status::kWarn);
  CHECK(r.versions[0].clusterctl == "missing");
}

TEST_CASE("quick checks: an unreachable host gives exit 3 and its one FAIL, its cables SKIP") {
  Fixture f;
  f.outcomes[3].sample.reset();
  f.outcomes[3].problem = discovery::HostProblem{"h4", 3, "h4: connection refused"};
  Report r = f.run();
  CHECK(r.unreachable == std::vector<std::string>{"h4"});
  CHECK(exit_code(r) == util::ExitCode::kUnreachable);
  CHECK(find(r, "h4", "reachable").status == Status::kFail);
  CHECK(find(r, "h4", "reachable").fix == "check that h4 is up and that `ssh h4` works");
  // One dead host is one FAIL: its 3 cables could not be checked, which is no failure of theirs.
  CHECK(r.count(Status::kFail) == 1);
  CHECK(r.count(Status::kSkipped) == 3);
  const CheckResult& cable = find(r, "h1:tb3-h4:tb1", "link-up");
  CHECK(cable.status == Status::kSkipped);
  CHECK(cable.measured == "not checked");
  CHECK(cable.fix == "");
  CHECK(cable.detail ==
        "cable h1 tb3 - h4 tb1 not checked: h4 not probed (see its reachable check)");
  // The cables of h4 get only that result; the others all their checks.
  CHECK(r.results.size() == 3 * 7 + 1 + 3 * 1 + 3 * 3);
  CHECK(find(r, "h1:tb1-h2:tb1", "link-up").status == Status::kPass);
}

TEST_CASE("quick checks: an unreachable lab host's fix is the ssh that reaches a lab host") {
  Fixture f;
  f.outcomes[3].sample.reset();
  f.outcomes[3].problem = discovery::HostProblem{"h4", 3, "h4: connection refused"};
  cc::discovery::FixCommand fix{"--lab t3a", "my lab.json", ""};
  fix.ssh_options = "-F '/state/labs/t3a/ssh_config'";  // as cli's fix_command fills it for a lab
  Report r;
  quick_checks(f.expected, f.outcomes, f.t, "0.1.0", r, fix);
  CHECK(find(r, "h4", "reachable").fix ==
        "check that h4 is up and that `ssh -F '/state/labs/t3a/ssh_config' h4` works");
}

TEST_CASE("quick checks: a host name that does not resolve: fix the name, not `ssh NAME`") {
  Fixture f;
  f.outcomes[3].sample.reset();
  f.outcomes[3].problem = discovery::HostProblem{
      "h4", 3,
      "h4: cannot connect to h4: could not resolve host name 'h4' (Temporary failure in name "
      "resolution). Check the host name, or give it a Host entry with HostName in the SSH "
      "config (-F); if it is a host of a lab, add --lab default"};
  Report r = f.run();
  CHECK(find(r, "h4", "reachable").fix ==
        "check the host name h4: it does not resolve here; give it a Host entry with HostName "
        "in the SSH config (-F); if it is a host of a lab, add --lab default");
  f.outcomes[3].problem->message =
      "h4: cannot connect to h4: could not resolve host name 'h4' (Name or service not known). "
      "Check the host name, or give it a Host entry with HostName in the SSH config (-F)";
  Report plain = f.run();
  CHECK(find(plain, "h4", "reachable").fix ==
        "check the host name h4: it does not resolve here; give it a Host entry with HostName "
        "in the SSH config (-F)");
}

TEST_CASE("quick checks: Macs get the macOS, bridge and sleep checks") {
  ClusterState expected = tt::mac_mesh(2, 2);
  std::vector<HostOutcome> outcomes;
  for (const auto& h : expected.hosts) {
    HostSample s;
    s.facts = h;
    s.clusterctl_version = "0.1.0";
    s.sleep = provision::HygieneItem{"sleep", provision::HygieneItem::Status::kOk, "sleep 0", ""};
    outcomes.push_back({h.host, s, std::nullopt});
  }
  outcomes[1].sample->facts.os.version = "26.1";
  outcomes[1].sample->sleep = provision::HygieneItem{"sleep", provision::HygieneItem::Status::kFix,
                                                     "sleep 10 (minutes)", "sudo pmset -a sleep 0"};
  Report r;
  quick_checks(expected, outcomes, Thresholds{}, "0.1.0", r);
  CHECK(find(r, "m1", "macos-version").status == Status::kPass);
  CHECK(find(r, "m2", "macos-version").status == Status::kFail);
  CHECK(find(r, "m1", "thunderbolt-bridge").status == Status::kPass);
  CHECK(find(r, "m2", "sleep").status == Status::kFail);
  CHECK(find(r, "m2", "sleep").fix == "sudo pmset -a sleep 0");
  const auto& speed = find(r, "m1:en2-m2:en2", "link-speed");
  CHECK(speed.status == Status::kPass);
  CHECK(speed.measured == "80 Gb/s");
}

}  // namespace
}  // namespace cc::healthcheck
