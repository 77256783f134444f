#include "push/rank.h"

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "comm/clustercomm.h"
#include "push/hash.h"
#include "push/manifest.h"
#include "push/target.h"

namespace cc::push {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kChunkOk = 1;  // the chunk's status word: the source read it whole

void event(const Json& j) {
  std::string line = "@push " + j.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

void bcast_text(comm::Communicator& c, std::string& text) {
  std::uint64_t n = text.size();
  c.broadcast(&n, &n, 1, comm::DataType::kU64, 0);
  text.resize(static_cast<size_t>(n));
  if (n > 0) c.broadcast(text.data(), text.data(), n, comm::DataType::kU8, 0);
}

// Every target's text, on rank 0 (index = rank; rank 0's own is empty).
std::vector<std::string> gather_text(comm::Communicator& c, const std::string& mine) {
  std::vector<std::string> all(static_cast<size_t>(c.size()));
  if (c.rank() != 0) {
    std::uint64_t n = mine.size();
    c.send(&n, sizeof n, 0);
    if (n > 0) c.send(mine.data(), n, 0);
    return all;
  }
  for (int r = 1; r < c.size(); ++r) {
    std::uint64_t n = 0;
    c.recv(&n, sizeof n, r);
    if (n > (std::uint64_t{1} << 32)) throw std::runtime_error("rank sent an oversized reply");
    all[static_cast<size_t>(r)].resize(static_cast<size_t>(n));
    if (n > 0) c.recv(all[static_cast<size_t>(r)].data(), n, r);
  }
  return all;
}

struct Progress {
  int rank = 0;
  int every_ms = 500;
  std::uint64_t total = 0, done = 0;
  Clock::time_point start = Clock::now(), last = start;
  void add(std::uint64_t bytes, bool force = false) {
    done += bytes;
    const auto now = Clock::now();
    if (every_ms <= 0) return;
    if (!force && now - last < std::chrono::milliseconds(every_ms)) return;
    last = now;
    event({{"event", "progress"}, {"rank", rank}, {"bytes", done}, {"total", total},
           {"seconds", std::chrono::duration<double>(now - start).count()}});
  }
};

// The transfer buffer: a chunk, then its hash and status word.
struct Chunk {
  std::vector<unsigned char> buf;
  explicit Chunk(std::uint64_t size) : buf(static_cast<size_t>(size) + 16) {}
  void seal(size_t len, std::uint64_t status) {
    const std::uint64_t h = chunk_hash(buf.data(), len);
    std::memcpy(buf.data() + len, &h, 8);
    std::memcpy(buf.data() + len + 8, &status, 8);
  }
  bool intact(size_t len) const {
    std::uint64_t h = 0, status = 0;
    std::memcpy(&h, buf.data() + len, 8);
    std::memcpy(&status, buf.data() + len + 8, 8);
    return status == kChunkOk && h == chunk_hash(buf.data(), len);
  }
};

// Rank 0's side of one file: reads from `start`, broadcasts every chunk, then the digest.
std::string send_file(comm::Communicator& c, const std::string& local, const Entry& e,
                      std::uint64_t start, Chunk& ch, std::uint64_t C, Progress& pr) {
  std::string problem;
  const int fd = ::open(local.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) problem = local + ": cannot read it: " + std::strerror(errno);
  FileDigest d;
  if (fd >= 0 && !digest_fd(fd, start, d)) problem = local + ": cannot read it: " + std::strerror(errno);
  for (std::uint64_t off = start; off < e.size; off += C) {
    const size_t len = static_cast<size_t>(std::min(C, e.size - off));
    size_t got = 0;
    while (problem.empty() && got < len) {
      const ssize_t n = ::pread(fd, ch.buf.data() + got, len - got, static_cast<off_t>(off + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        problem = local + (n == 0 ? ": it became shorter while being pushed"
                                  : std::string(": cannot read it: ") + std::strerror(errno));
        break;
      }
      got += static_cast<size_t>(n);
    }
    if (problem.empty()) d.update(ch.buf.data(), len);
    ch.seal(len, problem.empty() ? kChunkOk : 0);
    c.broadcast(ch.buf.data(), ch.buf.data(), len + 16, comm::DataType::kU8, 0);
    pr.add(len);
  }
  if (fd >= 0) ::close(fd);
  std::string digest = problem.empty() ? d.hex() : std::string(32, '-');
  bcast_text(c, digest);
  return problem;
}

// A target's side of one file: `fd` the part (-1: discard what arrives).
std::string receive_file(comm::Communicator& c, DestTree& tree, const Entry& e, std::uint64_t start,
                         int fd, std::string problem, Chunk& ch, std::uint64_t C, Progress& pr) {
  FileDigest d;
  if (fd >= 0 && !digest_fd(fd, start, d)) {
    problem = e.path + ": cannot read back its part: " + std::strerror(errno);
  }
  for (std::uint64_t off = start; off < e.size; off += C) {
    const size_t len = static_cast<size_t>(std::min(C, e.size - off));
    c.broadcast(ch.buf.data(), ch.buf.data(), len + 16, comm::DataType::kU8, 0);
    if (fd < 0 || !problem.empty()) continue;
    if (!ch.intact(len)) {
      problem = e.path + ": a chunk at byte " + std::to_string(off) +
                " arrived damaged or the source could not read it";
      continue;
    }
    d.update(ch.buf.data(), len);
    size_t put = 0;
    while (put < len) {
      const ssize_t n = ::pwrite(fd, ch.buf.data() + put, len - put, static_cast<off_t>(off + put));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        problem = e.path + ": cannot write it: " + std::strerror(errno);
        break;
      }
      put += static_cast<size_t>(n);
    }
    pr.add(len);
  }
  std::string digest;
  bcast_text(c, digest);
  if (fd < 0) return problem;
  if (!problem.empty()) {
    ::close(fd);
    return problem;
  }
  return tree.finish_file(e, fd, d.hex(), digest);
}

Json plan_json(const TargetPlan& p) {
  Json files = Json::array();
  for (const auto& [i, have] : p.files) files.push_back({i, have});
  return {{"errors", p.errors}, {"free", p.free_bytes}, {"need", p.need_bytes},
          {"files", files}, {"skipped", p.skipped}};
}

// Rank 0: the decision from every target's plan: the files to send, each from the smallest
// offset a target needs; errors (per rank) when anything stops the push.
Json decide(const Manifest& m, const std::vector<std::string>& plans) {
  Json errors = Json::array();
  if (!m.errors.empty()) errors.push_back({{"rank", 0}, {"messages", m.errors}});
  std::vector<std::uint64_t> start(m.entries.size(), ~std::uint64_t{0});
  for (size_t r = 1; r < plans.size(); ++r) {
    const Json p = Json::parse(plans[r]);
    std::vector<std::string> msgs = p.at("errors").get<std::vector<std::string>>();
    const auto need = p.at("need").get<std::uint64_t>(), free = p.at("free").get<std::uint64_t>();
    if (msgs.empty() && need > free) {
      msgs.push_back("needs " + std::to_string(need) + " bytes at the destination and " +
                     std::to_string(free) + " are free: free space there or push less");
    }
    if (!msgs.empty()) errors.push_back({{"rank", r}, {"messages", msgs}});
    for (const auto& f : p.at("files")) {
      const auto i = f.at(0).get<size_t>();
      if (i < start.size()) start[i] = std::min(start[i], f.at(1).get<std::uint64_t>());
    }
  }
  Json files = Json::array();
  for (size_t i = 0; i < start.size(); ++i) {
    if (start[i] != ~std::uint64_t{0}) files.push_back({i, start[i]});
  }
  return {{"go", errors.empty()}, {"errors", errors}, {"files", files}};
}

}  // namespace

int run_rank(comm::Communicator& c, const RankOptions& o) {
  const bool source = c.rank() == 0;
  const auto t0 = Clock::now();
  Manifest m;
  std::string text;
  if (source) {
    m = build_manifest(o.sources, o.checksum);
    text = to_json(m);
  }
  bcast_text(c, text);
  if (!source) m = manifest_from_json(text);

  TargetPlan plan;
  if (!source) plan = examine(o.dest, m, o.checksum, o.chunk);
  const auto plans = gather_text(c, source ? std::string() : plan_json(plan).dump());
  std::string decision = source ? decide(m, plans).dump() : std::string();
  bcast_text(c, decision);
  const Json d = Json::parse(decision);
  if (!d.at("go").get<bool>()) {
    if (source) event({{"event", "error"}, {"code", 2}, {"errors", d.at("errors")}});
    return source ? 2 : 0;
  }

  Progress pr{c.rank(), o.progress_ms};
  for (const auto& f : d.at("files")) {
    const Entry& e = m.entries.at(f.at(0).get<size_t>());
    pr.total += e.size - f.at(1).get<std::uint64_t>();
  }
  Chunk ch(o.chunk);
  std::vector<std::string> problems;
  std::unique_ptr<DestTree> tree;
  if (!source) {
    tree = std::make_unique<DestTree>(o.dest);
    if (!tree->ok()) problems.push_back(tree->error());
    if (tree->ok()) {
      for (auto& p : tree->make_directories(m)) problems.push_back(std::move(p));
    }
  }
  std::map<size_t, std::uint64_t> mine;  // target: entry -> what its part holds
  for (const auto& [i, have] : plan.files) mine[i] = have;
  size_t sent = 0;
  for (const auto& f : d.at("files")) {
    const size_t i = f.at(0).get<size_t>();
    const std::uint64_t start = f.at(1).get<std::uint64_t>();
    const Entry& e = m.entries.at(i);
    std::string problem;
    if (source) {
      problem = send_file(c, m.local.at(i), e, start, ch, o.chunk, pr);
    } else {
      int fd = -1;
      if (mine.count(i) != 0 && tree->ok()) fd = tree->open_part(e, start, problem);
      problem = receive_file(c, *tree, e, start, fd, problem, ch, o.chunk, pr);
      if (mine.count(i) != 0 && problem.empty()) ++sent;
    }
    if (!problem.empty()) problems.push_back(problem);
  }
  if (!source && tree->ok()) {
    for (const auto& e : m.entries) {
      if (e.kind != EntryKind::kSymlink) continue;
      if (auto p = tree->make_link(e); !p.empty()) problems.push_back(p);
    }
    for (auto& p : tree->finish_directories(m)) problems.push_back(std::move(p));
  }
  pr.add(0, true);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const Json result = {{"rank", c.rank()},      {"files_sent", sent},
                       {"files_skipped", plan.skipped}, {"bytes", pr.done},
                       {"seconds", secs},       {"errors", problems}};
  const auto results = gather_text(c, source ? std::string() : result.dump());
  if (!source) return 0;
  Json targets = Json::array();
  bool failed = !problems.empty();
  for (size_t r = 1; r < results.size(); ++r) {
    Json t = Json::parse(results[r]);
    failed = failed || !t.at("errors").empty();
    targets.push_back(std::move(t));
  }
  event({{"event", "result"},
         {"code", failed ? 4 : 0},
         {"transport", c.transport_name()},
         {"files", m.file_count()},
         {"bytes", m.file_bytes()},
         {"sent_bytes", pr.done},
         {"seconds", secs},
         {"source_errors", problems},
         {"targets", targets}});
  return failed ? 4 : 0;
}

}  // namespace cc::push
