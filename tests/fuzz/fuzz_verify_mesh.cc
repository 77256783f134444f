// libFuzzer target: a cluster state file through everything that reads one after loading
// (verify-mesh's analysis and its three renderings, then every hostfile format), as
// `clusterctl verify-mesh cluster.json` and `clusterctl hostfile cluster.json --format F` do.
// Property: a state the loader accepts never makes them throw, crash or trip a sanitizer;
// the states it refuses stop at the loader (fuzz_cluster_state checks its messages).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "discovery/cluster_state.h"
#include "discovery/fuzz/fuzz_check.h"
#include "discovery/json_util.h"
#include "provision/hostfile.h"
#include "topology/report.h"
#include "util/term.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cc;
  const std::string_view text = discovery::fuzz::text(data, size);
  try {
    auto j = discovery::parse_json_output("cluster.json", text);
    if (!j.ok()) return 0;
    auto state = discovery::cluster_state_from_json(*j);
    if (!state.ok()) return 0;
    const topology::VerifyReport report = topology::verify_mesh(*state);
    (void)topology::render_text(report, util::OutputStyle{});
    (void)topology::render_json(report);
    (void)topology::render_dot(report);
    (void)topology::exit_code(report);
    for (const std::string& name : provision::hostfile_format_names()) {
      provision::HostfileOptions opts;
      opts.format = *provision::hostfile_format(name);
      (void)provision::render_hostfile(*state, opts);
    }
  } catch (const std::exception& e) {
    discovery::fuzz::fail("exception", e.what());
  }
  return 0;
}
