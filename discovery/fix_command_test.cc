#include "discovery/fix_command.h"

#include <doctest/doctest.h>

using cc::discovery::FixCommand;

TEST_CASE("fix commands name the cluster as the operator did, quoted for the shell") {
  FixCommand state{"", "my cluster.json", ""};
  CHECK(state.command("network apply") == "clusterctl network apply 'my cluster.json'");
  CHECK(state.command("rdma enable", "--soft-roce") ==
        "clusterctl rdma enable 'my cluster.json' --soft-roce");
  CHECK(state.rediscover() == "clusterctl discover -o 'my cluster.json'");
  FixCommand lab{"--lab t3a", "cluster.json", ""};
  CHECK(lab.command("health", "--quick") == "clusterctl health --lab t3a cluster.json --quick");
  FixCommand live{"--lab t3a", "", "h1,h2"};
  CHECK(live.command("network apply") == "clusterctl network apply --lab t3a --hosts h1,h2");
  CHECK(live.rediscover() == "clusterctl --lab t3a discover --hosts h1,h2");
  CHECK(live.collect("h2") == "clusterctl --lab t3a collect --hosts h2 -o h2-bundle");
  CHECK(FixCommand{}.command("rdma status") == "clusterctl rdma status");
}

TEST_CASE("fix commands: ssh reaches a host as clusterctl does") {
  CHECK(FixCommand{}.ssh("h4") == "ssh h4");
  FixCommand lab{"--lab t3a", "cluster.json", ""};
  lab.ssh_options = "-F '/state/labs/t3a/ssh_config'";
  CHECK(lab.ssh("h4") == "ssh -F '/state/labs/t3a/ssh_config' h4");
  FixCommand inv{"--inventory 'my inv.yaml'", "", "s1,s2"};
  inv.ssh_options = "-F /etc/cluster/ssh_config -o UserKnownHostsFile=/etc/cluster/known_hosts";
  inv.ssh_destinations = {{"s2", "admin@fe80::1%en0"}};
  CHECK(inv.ssh("s1") ==
        "ssh -F /etc/cluster/ssh_config -o UserKnownHostsFile=/etc/cluster/known_hosts s1");
  CHECK(inv.ssh("s2") ==
        "ssh -F /etc/cluster/ssh_config -o UserKnownHostsFile=/etc/cluster/known_hosts "
        "admin@fe80::1%en0");
  inv.ssh_destinations = {{"s2", "admin@host with space"}};  // quoted for the shell
  CHECK(inv.ssh("s2").ends_with(" 'admin@host with space'"));
}
