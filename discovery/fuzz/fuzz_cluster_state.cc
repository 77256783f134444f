// libFuzzer target: reading a cluster state file (parse_json_output + cluster_state_from_json,
// what load_cluster_state does after reading the file). Properties: a syntax error names the
// file, a state error reads "cluster state: ...", nothing throws; and a state that was read
// survives a round trip (to JSON and back gives the same JSON).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "discovery/cluster_state.h"
#include "discovery/fuzz/fuzz_check.h"
#include "discovery/json_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cc::discovery;
  using fuzz::fail;
  constexpr std::string_view kFile = "cluster.json";
  auto j = parse_json_output(kFile, fuzz::text(data, size));
  fuzz::check(j, kFile);
  if (!j.ok()) return 0;
  auto state = cluster_state_from_json(*j);
  if (!state.ok()) {
    if (!std::string_view(state.error().message).starts_with("cluster state: ")) {
      fail("error does not start with \"cluster state: \"", state.error().message);
    }
    return 0;
  }
  nlohmann::json once = *state;
  auto again = cluster_state_from_json(once);
  if (!again.ok()) fail("a written state does not read back", again.error().message);
  nlohmann::json twice = *again;
  if (once != twice) {
    fail("round trip changed the state",
         once.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return 0;
}
