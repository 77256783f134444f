// Built without infiniband/verbs.h: the verbs transport is never available.
#include "comm/transport/verbs/verbs_setup.h"

namespace cc::comm::verbs {

std::unique_ptr<VerbsSetup> prepare_verbs(const Config&, std::string& why_not,
                                          bool& matrix_wrong, const std::vector<bool>&) {
  matrix_wrong = false;
  why_not = "this clustercomm was built without the verbs transport (no infiniband/verbs.h)";
  return nullptr;
}

}  // namespace cc::comm::verbs
