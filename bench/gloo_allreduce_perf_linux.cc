// Gloo's allreduce (float, sum) over the same sizes as clustercomm-perf, for
// bench/compare-tcp: AllreduceRing and AllreduceHalvingDoubling (the two measured in
// docs/platform.md#reference-figures; the newer gloo::allreduce stalls on loopback from 16 KiB,
// docs/platform.md#open-mpi-and-gloo), reporting the faster per size. Ranks come from RANK/SIZE,
// rendezvous through a FileStore in GLOO_STORE_DIR. Prints "size time_us busbw" from rank 0 (time =
// max over ranks). With GLOO_IBV_DEVICE (bench/compare-rdma) it uses Gloo's ibverbs transport on
// that device (port 1, GID index GLOO_IBV_GID, default 1) and AllreduceRing only: the only
// algorithm that works over Gloo's ibverbs (docs/platform.md#open-mpi-and-gloo). Gloo's ibverbs
// buffers abort in their destructor ("Destructing buffer expecting completions") when a send's
// completion is still unhandled, which a rank that finished first hits: every algorithm object is
// kept until a final barrier, and the process then exits without running destructors.
#include <gloo/algorithm.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/ibverbs/device.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "sizes.h"

namespace {

// Algorithm objects live until the end of the process (see above).
std::vector<std::unique_ptr<gloo::Algorithm>> keep;
std::vector<std::unique_ptr<double>> keep_us;

template <class Algo>
double time_us(const std::shared_ptr<gloo::Context>& ctx, float* buf, size_t bytes,
               const bench::Sweep& sw) {
  auto& algo = keep.emplace_back(
      std::make_unique<Algo>(ctx, std::vector<float*>{buf}, static_cast<int>(bytes / 4)));
  for (int w = 0; w < sw.warmup_for(bytes); ++w) algo->run();
  const int iters = sw.iters_for(bytes);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) algo->run();
  double* us = keep_us.emplace_back(std::make_unique<double>(
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
      iters)).get();
  auto& mx = keep.emplace_back(std::make_unique<gloo::AllreduceRing<double>>(
      ctx, std::vector<double*>{us}, 1, gloo::ReductionFunction<double>::max));
  mx->run();
  return *us;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Sweep sw = bench::parse_sweep_or_exit(argc, argv, "gloo-allreduce-perf");
  const char* rank_env = std::getenv("RANK");
  const char* size_env = std::getenv("SIZE");
  int rank = -1, n = 0;
  try {
    if (rank_env != nullptr && size_env != nullptr) {
      n = static_cast<int>(bench::parse_int("SIZE", size_env, 1, 1024));
      rank = static_cast<int>(bench::parse_int("RANK", rank_env, 0, n - 1));
    }
  } catch (const bench::UsageError& e) {
    std::fprintf(stderr, "gloo-allreduce-perf: error: %s\n", e.what());
    return 2;
  }
  if (rank < 0 || std::getenv("GLOO_STORE_DIR") == nullptr) {
    std::fprintf(stderr, "gloo-allreduce-perf: error: set RANK (0..SIZE-1) and SIZE (ranks), and "
                         "GLOO_STORE_DIR (a directory every rank shares)\n");
    return 2;
  }
  const char* ibv = std::getenv("GLOO_IBV_DEVICE");
  std::shared_ptr<gloo::transport::Device> dev;
  if (ibv != nullptr) {
    const char* gid = std::getenv("GLOO_IBV_GID");
    dev = gloo::transport::ibverbs::CreateDevice(
        gloo::transport::ibverbs::attr{ibv, 1, gid != nullptr ? std::atoi(gid) : 1});
  } else {
    gloo::transport::tcp::attr attr("127.0.0.1");
    dev = gloo::transport::tcp::CreateDevice(attr);
  }
  gloo::rendezvous::FileStore store(std::getenv("GLOO_STORE_DIR"));
  gloo::rendezvous::PrefixStore prefix("bench", store);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, n);
  ctx->setTimeout(std::chrono::seconds(120));
  ctx->connectFullMesh(prefix, dev);
  std::vector<float> buf(sw.max_bytes / 4 + 1, 1.0f);
  {
    // bench::kSettleMs of small all-reduces before anything is timed (sizes.h says why): rank
    // 0's "go on" flag, the others' 0, max-reduced.
    float go = 1;
    auto& settle = keep.emplace_back(std::make_unique<gloo::AllreduceRing<float>>(
        ctx, std::vector<float*>{&go}, 1, gloo::ReductionFunction<float>::max));
    const auto t0 = std::chrono::steady_clock::now();
    while (go != 0) {
      go = rank == 0 && std::chrono::steady_clock::now() - t0 <
                            std::chrono::milliseconds(bench::kSettleMs);
      settle->run();
    }
  }
  for (size_t bytes : sw.sizes()) {
    const double ring = time_us<gloo::AllreduceRing<float>>(ctx, buf.data(), bytes, sw);
    const double hd = ibv != nullptr
                          ? ring
                          : time_us<gloo::AllreduceHalvingDoubling<float>>(ctx, buf.data(), bytes, sw);
    const double best = ring < hd ? ring : hd;
    if (rank == 0) {
      const double busbw = static_cast<double>(bytes) / best / 1e3 * 2.0 * (n - 1) / n;
      std::printf("%zu %.2f %.3f ring=%.2f hd=%.2f\n", bytes, best, busbw, ring, hd);
      std::fflush(stdout);
    }
  }
  keep.emplace_back(std::make_unique<gloo::BarrierAllToAll>(ctx))->run();
  std::fflush(stdout);
  std::_Exit(0);
}
