#include "provision/fix_command.h"

#include <doctest/doctest.h>

using cc::provision::FixCommand;

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
