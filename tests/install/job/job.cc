// A user's job against the installed libclustercomm: the world from CLUSTERCOMM_* variables,
// an f32 sum all_reduce, an i32 all_gather and a broadcast, each result checked against what
// it must be. Prints "rank R of N: ok sum=S" (S: the sum of 1..N), or what was wrong; exit 1.
#include <cstdio>
#include <vector>

#include "comm/clustercomm.h"

int main() {
  using namespace cc::comm;
  try {
    Communicator comm = Communicator::from_env();
    const int r = comm.rank(), n = comm.size();
    constexpr size_t kCount = 1000;
    std::vector<float> v(kCount, static_cast<float>(r + 1));
    comm.all_reduce(v.data(), v.data(), kCount, DataType::kF32, ReduceOp::kSum);
    const float want = static_cast<float>(n * (n + 1) / 2);
    for (size_t i = 0; i < kCount; ++i) {
      if (v[i] != want) {
        std::printf("rank %d of %d: all_reduce element %zu is %g, not %g\n", r, n, i,
                    static_cast<double>(v[i]), static_cast<double>(want));
        return 1;
      }
    }
    std::vector<int> mine(3, r * 10), all(3 * static_cast<size_t>(n));
    comm.all_gather(mine.data(), all.data(), 3, DataType::kI32);
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i] != static_cast<int>(i / 3) * 10) {
        std::printf("rank %d of %d: all_gather element %zu is %d, not %d\n", r, n, i, all[i],
                    static_cast<int>(i / 3) * 10);
        return 1;
      }
    }
    int token = r == 0 ? 4242 : 0;
    comm.broadcast(&token, &token, 1, DataType::kI32, 0);
    if (token != 4242) {
      std::printf("rank %d of %d: broadcast gave %d, not 4242\n", r, n, token);
      return 1;
    }
    comm.barrier();
    std::printf("rank %d of %d: ok sum=%g transport=%s\n", r, n, static_cast<double>(v[0]),
                comm.transport_name().c_str());
    return 0;
  } catch (const Error& e) {
    std::printf("clustercomm error: %s\n", e.what());
    return 1;
  }
}
