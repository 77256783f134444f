// `clusterctl lab` where there are no Linux network namespaces (macOS, ...): it explains and
// exits 2. The real one is cmd_lab.cc (Linux).
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/context.h"
#include "cli/hosts.h"

namespace cc::cli {

// No network namespaces here, so no lab of any user: the name is free.
util::Error missing_lab_error(const std::string& name, const std::filesystem::path& inventory,
                              const std::string& chosen) {
  return no_lab_error(name, inventory, chosen);
}

void add_lab_command(CLI::App& app, Context& ctx) {
  CLI::App* lab = app.add_subcommand(
      "lab", "An emulated cluster of network-namespace hosts (Linux only; not available here)");
  // Accept `lab up --hosts 4 ...` and answer the same way: keep every argument here.
  lab->fallthrough(false);
  lab->prefix_command();
  lab->callback([&ctx] {
    ctx.action = [] {
      fmt::print(stderr,
                 "clusterctl lab: the lab needs Linux network namespaces; run it on a Linux "
                 "machine\n");
      return util::ExitCode::kUsage;
    };
  });
}

}  // namespace cc::cli
