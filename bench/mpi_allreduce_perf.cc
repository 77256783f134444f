// Open MPI's MPI_Allreduce (float, sum) over the same sizes as clustercomm-perf, for
// bench/compare-tcp. Prints "size time_us busbw" per size from rank 0 (time = max over ranks).
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "sizes.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const bench::Sweep sw = bench::parse_sweep_or_exit(argc, argv, "mpi-allreduce-perf");
  std::vector<float> in(sw.max_bytes / 4 + 1, 1.0f), out(sw.max_bytes / 4 + 1);
  // bench::kSettleMs of small all-reduces before anything is timed (sizes.h says why).
  const double settle_from = MPI_Wtime();
  for (int go = 1; go != 0;) {
    const int mine = rank == 0 && (MPI_Wtime() - settle_from) * 1e3 < bench::kSettleMs;
    MPI_Allreduce(&mine, &go, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  }
  for (size_t bytes : sw.sizes()) {
    const int count = static_cast<int>(bytes / 4);
    for (int w = 0; w < sw.warmup_for(bytes); ++w) {
      MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const int iters = sw.iters_for(bytes);
    const double t0 = MPI_Wtime();
    for (int it = 0; it < iters; ++it) {
      MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    double us = (MPI_Wtime() - t0) * 1e6 / iters, max_us = 0;
    MPI_Reduce(&us, &max_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      const double busbw = static_cast<double>(bytes) / max_us / 1e3 * 2.0 * (n - 1) / n;
      std::printf("%zu %.2f %.3f\n", bytes, max_us, busbw);
      std::fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
