// A rank for the process tests (tests/process_test.cc): configured by the environment
// (CLUSTERCOMM_* or MLX_*), it runs one scenario and exits 0 on success, 1 when a result is
// wrong, 3 when the library threw (the message on stderr).
//   collectives   a subset of the collective matrix, checked against references
//   join          form the world, barrier, one small all_reduce
//   loop          all_reduce 4 MiB f32 (CLUSTERCOMM_TEST_LOOP_BYTES) until something fails; prints
//   "looping" once going digest        all_reduce/reduce_scatter/all_gather of seeded random floats
//   (sums depend on
//                 the fold order), prints "digest <hex>" of all results: equal digests over
//                 TCP and verbs = bitwise identical results
//   dry           rank 0 sends rank 1 (and only it) 300 messages of 64 KiB + odd sizes while
//                 rank 1 posts no receive for 2 s: its receive queue runs dry (on verbs the
//                 sender must stall on credits, not lose frames); every payload is checked
// Rank 0 prints "coordinator port N" once its coordinator listens.
// Before anything else, for the flood tests: CLUSTERCOMM_TEST_NOFILE = the soft RLIMIT_NOFILE
// to set (setrlimit), CLUSTERCOMM_TEST_FREE_FDS = open /dev/null until only that many
// descriptors are left (the rank starts at its descriptor limit).
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/clustercomm.h"
#include "comm/tests/pattern.h"

using namespace cc::comm;

namespace {

// Cached zero-copy's contract (CLUSTERCOMM_IBV_ZERO_COPY=1): a buffer's registration is dropped
// before the buffer is freed, else memory later allocated at its address would be sent stale.
template <class V>
void release(Communicator& c, const V& v) {
  c.release_buffer(v.data(), v.size() * sizeof(v[0]));
}

int collectives(Communicator& c) {
  const int n = c.size(), r = c.rank();
  const size_t un = static_cast<size_t>(n);
  int bad = 0;
  auto check = [&](const std::string& what, const std::string& why) {
    if (why.empty()) return;
    std::fprintf(stderr, "rank %d: %s: %s\n", r, what.c_str(), why.c_str());
    ++bad;
  };
  for (DataType t : {DataType::kF32, DataType::kBF16, DataType::kI8, DataType::kU64}) {
    const size_t e = size_of(t);
    for (ReduceOp op : kAllReduceOps) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{1001}, (size_t{1} << 20) / e + 7}) {
        std::vector<unsigned char> in(count * e + 1), want(count * e + 1);
        test::fill(t, op, r, in.data(), count);
        test::expected(t, op, n, want.data(), count);
        c.all_reduce(in.data(), in.data(), count, t, op);
        check("all_reduce " + std::string(to_string(t)) + " " + std::string(to_string(op)) +
                  " count=" + std::to_string(count),
              test::compare(t, in.data(), want.data(), count));
        release(c, in);
      }
    }
    const size_t count = (size_t{1} << 20) / e / un + 3;
    std::vector<unsigned char> in(un * count * e), out(count * e), want(un * count * e);
    test::fill(t, ReduceOp::kSum, r, in.data(), un * count);
    test::expected(t, ReduceOp::kSum, n, want.data(), count, static_cast<size_t>(r) * count);
    c.reduce_scatter(in.data(), out.data(), count, t, ReduceOp::kSum);
    check("reduce_scatter", test::compare(t, out.data(), want.data(), count));
    for (int q = 0; q < n; ++q) {
      test::fill(t, ReduceOp::kSum, q, want.data() + static_cast<size_t>(q) * count * e, count);
    }
    test::fill(t, ReduceOp::kSum, r, out.data(), count);
    c.all_gather(out.data(), in.data(), count, t);
    check("all_gather", test::compare(t, in.data(), want.data(), un * count));
    const int root = n - 1;
    test::fill(t, ReduceOp::kSum, r, in.data(), un * count);
    test::fill(t, ReduceOp::kSum, root, want.data(), un * count);
    c.broadcast(in.data(), in.data(), un * count, t, root);
    check("broadcast", test::compare(t, in.data(), want.data(), un * count));
    release(c, in);
    release(c, out);
  }
  if (n > 1) {
    std::vector<int> token(1000, r);
    const int right = (r + 1) % n, left = (r + n - 1) % n;
    if (r % 2 == 0) {
      c.send(token.data(), token.size() * sizeof(int), right);
      c.recv(token.data(), token.size() * sizeof(int), left);
    } else {
      std::vector<int> got(1000);
      c.recv(got.data(), got.size() * sizeof(int), left);
      c.send(token.data(), token.size() * sizeof(int), right);
      token = got;
    }
    if (token[999] != left) check("send/recv", "wrong payload");
  }
  c.barrier();
  return bad == 0 ? 0 : 1;
}

// Applies CLUSTERCOMM_TEST_NOFILE and CLUSTERCOMM_TEST_FREE_FDS; false (and a message) when
// it cannot.
bool limit_descriptors() {
  if (const char* v = std::getenv("CLUSTERCOMM_TEST_NOFILE")) {
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = static_cast<rlim_t>(std::strtoull(v, nullptr, 10));
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
      std::fprintf(stderr, "setrlimit(RLIMIT_NOFILE, %s): %s\n", v, std::strerror(errno));
      return false;
    }
  }
  if (const char* v = std::getenv("CLUSTERCOMM_TEST_FREE_FDS")) {
    std::vector<int> fds;
    for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) fds.push_back(fd);
    if (errno != EMFILE) {
      std::fprintf(stderr, "filling descriptors: %s\n", std::strerror(errno));
      return false;
    }
    for (size_t k = std::strtoull(v, nullptr, 10); k > 0 && !fds.empty(); --k) {
      close(fds.back());
      fds.pop_back();
    }
    std::fprintf(stderr, "descriptors taken: %zu\n", fds.size());  // the rest stay open
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "join";
  if (mode != "join" && mode != "collectives" && mode != "digest" && mode != "dry" &&
      mode != "loop") {
    std::fprintf(stderr,
                 "clustercomm_test_rank: unknown mode '%s' (join, collectives, digest, dry or "
                 "loop)\n",
                 mode.c_str());
    return 2;
  }
  if (!limit_descriptors()) return 2;
  try {
    // Rank 0 prints the port its coordinator listens on: started with port 0
    // (CLUSTERCOMM_COORDINATOR=127.0.0.1:0), that is the port the kernel picked, which
    // process_test.cc reads from this log to start the other ranks.
    Config config = config_from_env();
    config.on_coordinator_listening = [](int port) {
      std::fprintf(stderr, "coordinator port %d\n", port);
    };
    Communicator c(config);
    // Tests and the guest suite read which transport each rank runs on.
    std::fprintf(stderr, "rank %d transport: %s\n", c.rank(), c.transport_name().c_str());
    if (mode == "collectives") return collectives(c);
    if (mode == "digest") {
      uint64_t h = 1469598103934665603ull;  // FNV-1a over every result byte
      auto mix = [&](const void* p, size_t bytes) {
        const auto* b = static_cast<const unsigned char*>(p);
        for (size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 1099511628211ull;
      };
      const size_t un = static_cast<size_t>(c.size());
      for (size_t count : {size_t{1}, size_t{1000}, size_t{70000}, size_t{300000}}) {
        std::vector<float> in(count * un), out(count * un);
        uint32_t x = 12345u + static_cast<uint32_t>(c.rank()) * 7919u + static_cast<uint32_t>(count);
        for (float& f : in) {
          x = x * 1664525u + 1013904223u;
          f = static_cast<float>(x >> 8) / 16777216.0f - 0.5f;
        }
        c.all_reduce(in.data(), out.data(), count, DataType::kF32, ReduceOp::kSum);
        mix(out.data(), count * 4);
        c.reduce_scatter(in.data(), out.data(), count, DataType::kF32, ReduceOp::kSum);
        mix(out.data(), count * 4);
        c.all_gather(in.data(), out.data(), count, DataType::kF32);
        mix(out.data(), count * un * 4);
        release(c, in);
        release(c, out);
      }
      std::printf("digest %016llx\n", static_cast<unsigned long long>(h));
      return 0;
    }
    if (mode == "dry") {
      if (c.rank() > 1) return 0;
      int bad = 0;
      for (int i = 0; i < 300; ++i) {
        const size_t bytes = (size_t{64} << 10) + static_cast<size_t>(i * 13);
        std::vector<unsigned char> m(bytes);
        for (size_t k = 0; k < bytes; ++k) m[k] = static_cast<unsigned char>(k * 31 + static_cast<size_t>(i));
        if (c.rank() == 0) {
          c.send(m.data(), bytes, 1);
          release(c, m);
        } else {
          if (i == 0) std::this_thread::sleep_for(std::chrono::seconds(2));
          std::vector<unsigned char> got(bytes);
          c.recv(got.data(), bytes, 0);
          bad += got != m;
        }
      }
      if (bad != 0) std::fprintf(stderr, "rank %d: %d payloads differ\n", c.rank(), bad);
      return bad == 0 ? 0 : 1;
    }
    if (mode == "loop") {
      const char* lb = std::getenv("CLUSTERCOMM_TEST_LOOP_BYTES");
      const size_t loop_bytes = lb != nullptr ? std::strtoull(lb, nullptr, 10) : size_t{4} << 20;
      std::vector<float> v(loop_bytes / 4, 1.0f);
      for (long i = 0;; ++i) {
        c.all_reduce(v.data(), v.data(), v.size(), DataType::kF32, ReduceOp::kMax);
        if (i == 0) {
          std::fprintf(stderr, "looping\n");
          std::fflush(stderr);
        }
      }
    }
    c.barrier();
    int64_t x = c.rank(), sum = 0;
    c.all_reduce(&x, &sum, 1, DataType::kI64, ReduceOp::kSum);
    const int64_t n = c.size();
    if (sum != n * (n - 1) / 2) {
      std::fprintf(stderr, "rank %d: wrong sum %lld\n", c.rank(), static_cast<long long>(sum));
      return 1;
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  }
}
