#include "comm/transport/transport.h"

namespace cc::comm {

void wait_all(Transport& t, std::vector<Request>& reqs, Deadline deadline) {
  for (Request& r : reqs) {
    if (!r.done()) t.wait(r, deadline);
  }
}

}  // namespace cc::comm
