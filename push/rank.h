// The ranks of a push: rank 0 on the source host reads, every other rank writes at its host's
// destination. One job of launch/ (one rank per host, libclustercomm between them) runs
// `clusterctl-push-rank` (rank_main.cc) on every host; this is its logic.
//
// Protocol, every step collective over the communicator:
//   1. rank 0 walks the sources (manifest.h) and broadcasts the manifest (JSON);
//   2. each target examines its destination (target.h, nothing written) and sends its plan to
//      rank 0, which broadcasts the decision: stop (any source or target problem: nothing is
//      written anywhere, exit 2) or the files to send, each from the first chunk some target
//      lacks;
//   3. the files every target gets (the common files), per file, per chunk
//      (RankOptions::chunk bytes): a broadcast of the chunk with its XXH3-64 and a status word
//      (comm's scatter + all-gather broadcast for n >= 3: the source sends each target 1/(n-1)
//      of the chunk and the targets forward it to each other, so every cable is busy and the
//      time tends to size / ((n-1) x cable bandwidth)), then the file's XXH3-128 digest, which
//      each target compares with what it wrote before renaming. Up to 4 chunks are read
//      ahead at the source, and written behind at each target, on a thread of their own;
//   3b. the files of a share (--manifest: for some targets only), sent to each of their targets
//      alone (send/recv), the targets' files interleaved chunk by chunk: each chunk with its
//      checksum and status word, then the digest (32 hex digits);
//   4. each target sends its result to rank 0, which prints the report.
// Ranks talk to clusterctl through stdout lines "@push {JSON}" (events: error, progress,
// result); everything else on stderr is a message for the operator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "push/manifest.h"

namespace cc::comm {
class Communicator;
}

namespace cc::push {

struct RankOptions {
  std::string dest;                  // destination directory on every target
  std::vector<std::string> sources;  // on the source host (rank 0)
  bool checksum = false;             // skip only files whose digest matches (digests computed)
  std::uint64_t chunk = 8u << 20;    // bytes per broadcast
  int progress_ms = 500;             // a progress event this often (0: never)
  std::vector<Share> shares;         // --manifest's shares (rank 0; manifest.h)
  std::vector<std::string> names;    // each rank's host, for messages (index: rank)
};

/// Runs this rank's part. Returns its exit code: rank 0 the push's (0 done, 2 preflight failed:
/// nothing written, 4 a file failed); the others 0 once the protocol ended. Throws
/// cc::comm::Error when the communicator fails (a rank died, a timeout).
int run_rank(comm::Communicator& c, const RankOptions& o);

}  // namespace cc::push
