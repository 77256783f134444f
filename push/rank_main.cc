// clusterctl-push-rank: one rank of `clusterctl push` (rank.h), started by clusterctl on every
// host with the clustercomm runtime's environment (CLUSTERCOMM_RANK, _SIZE, _COORDINATOR, ...).
//   clusterctl-push-rank --dest DIR [--checksum] [--chunk BYTES] [--progress-ms MS]
//                        [--shares JSON] [--names HOST,HOST,...] -- SRC...
// --shares: rank 0's shares of the files (manifest.h, shares_to_json); --names: each rank's
// host, for messages.
// Exit: as run_rank; 4 when the communicator fails (the message names the rank), 2 for bad
// arguments.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "comm/clustercomm.h"
#include "push/rank.h"

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "clusterctl-push-rank: %s\nusage: clusterctl-push-rank --dest DIR [--checksum] "
               "[--chunk BYTES] [--progress-ms MS] [--shares JSON] [--names HOSTS] -- SRC...\n(started by `clusterctl push`)\n",
               why);
  return 2;
}

bool number(const char* text, unsigned long long& out) {
  char* end = nullptr;
  errno = 0;
  out = std::strtoull(text, &end, 10);
  return errno == 0 && end != text && *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  cc::push::RankOptions o;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    unsigned long long v = 0;
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--checksum") {
      o.checksum = true;
    } else if (a == "--dest" && i + 1 < argc) {
      o.dest = argv[++i];
    } else if (a == "--shares" && i + 1 < argc) {
      try {
        o.shares = cc::push::shares_from_json(argv[++i]);
      } catch (const std::exception& e) {
        return usage(e.what());
      }
    } else if (a == "--names" && i + 1 < argc) {
      const std::string list = argv[++i];
      for (size_t start = 0;;) {
        const size_t comma = list.find(',', start);
        o.names.push_back(list.substr(start, comma == std::string::npos ? comma : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (a == "--chunk" && i + 1 < argc && number(argv[i + 1], v) && v >= 4096 &&
               v <= (1ull << 30)) {
      o.chunk = v;
      ++i;
    } else if (a == "--progress-ms" && i + 1 < argc && number(argv[i + 1], v) && v <= 3600000) {
      o.progress_ms = static_cast<int>(v);
      ++i;
    } else {
      return usage(("bad argument '" + a + "'").c_str());
    }
  }
  for (; i < argc; ++i) o.sources.emplace_back(argv[i]);
  if (o.dest.empty()) return usage("--dest is required");
  try {
    cc::comm::Communicator c = cc::comm::Communicator::from_env();
    return cc::push::run_rank(c, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "clusterctl-push-rank: %s\n", e.what());
    return 4;
  }
}
