// What the SSH integration tests share: the running lab (fixture "lab8": `clusterctl lab up
// --hosts 8 --name ct8` with XDG_STATE_HOME under the build tree), read from its directory.
// CLUSTERCTL_TEST_LAB overrides the lab name (to develop against a lab of one's own).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "remote/inventory.h"
#include "remote/local_executor.h"
#include "remote/ssh_executor.h"
#include "tests/temp_dir.h"  // TempDir

namespace cc::test {

namespace fs = std::filesystem;

inline std::string lab_name() {
  const char* name = std::getenv("CLUSTERCTL_TEST_LAB");
  return name != nullptr && name[0] != '\0' ? name : "ct8";
}

/// The lab's directory and inventory; fails the test when the lab is not up.
struct Lab {
  Lab() : name(lab_name()), dir(remote::lab_dir(name)) {
    auto loaded = remote::load_inventory(dir / "inventory.yaml");
    REQUIRE_MESSAGE(loaded.ok(),
                    "lab '" << name << "' is not up (run `clusterctl lab up "
                            << "--hosts 8 --name " << name << "` with the same "
                            << "XDG_STATE_HOME): " << (loaded.ok() ? "" : loaded.error().message));
    inventory = std::move(*loaded);
    REQUIRE(inventory.hosts.size() == 8);
    REQUIRE(inventory.ssh_config.has_value());
    REQUIRE(inventory.known_hosts.has_value());
  }

  remote::SshOptions options() const {
    remote::SshOptions o;
    o.config_file = inventory.ssh_config;
    o.known_hosts = inventory.known_hosts;
    o.connect_timeout = std::chrono::seconds(10);
    return o;
  }

  /// An executor for host `i` (0-based) with the lab's config, or with `o`.
  std::unique_ptr<remote::SshExecutor> host(size_t i) const { return host(i, options()); }
  std::unique_ptr<remote::SshExecutor> host(size_t i, const remote::SshOptions& o) const {
    const auto& h = inventory.hosts.at(i);
    return std::make_unique<remote::SshExecutor>(h.name, h.ssh, o);
  }

  /// The network namespace of host `i` (lab/plan.h: "cc-NAME-hN").
  std::string netns(size_t i) const { return "cc-" + name + "-" + inventory.hosts.at(i).name; }

  std::string name;
  fs::path dir;
  remote::Inventory inventory;
};

/// Runs a local command and requires it to exit 0; returns its stdout.
inline std::string local_ok(const std::vector<std::string>& argv) {
  remote::LocalExecutor local;
  auto r = local.run({argv}, {});
  REQUIRE(r.ok());
  INFO("command: " << argv[0] << " stderr: " << r->err);
  REQUIRE(r->exit_status == 0);
  return r->out;
}

}  // namespace cc::test
