#include "push/rank.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
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
constexpr size_t kDigestChars = 32;    // a file's XXH3-128 digest in hex

void event(const Json& j) {
  std::string line = "@push " + json_text(j) + "\n";
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

// Rank 0's reading of one file from `start`: the digest of what comes before `start` first,
// then chunk by chunk. A file that is not the manifest's any more (changed since the walk, or
// while being read) is a problem: its chunks go out marked bad and its digest as dashes, so
// no target renames it into place.
class SourceFile {
 public:
  SourceFile(const std::string& local, const Entry& e, std::uint64_t start) : local_(local), e_(e) {
    fd_ = ::open(local.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd_ < 0) {
      problem_ = local + ": cannot read it: " + std::strerror(errno);
      return;
    }
    check_unchanged("since the push began");
    if (problem_.empty() && !digest_fd(fd_, start, d_)) {
      problem_ = local + ": cannot read it: " + std::strerror(errno);
    }
  }
  ~SourceFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  SourceFile(const SourceFile&) = delete;
  SourceFile& operator=(const SourceFile&) = delete;

  /// Reads bytes [off, off + len) into `ch` and seals it (marked bad after any problem).
  void read(Chunk& ch, std::uint64_t off, size_t len) {
    size_t got = 0;
    while (problem_.empty() && got < len) {
      const ssize_t n = ::pread(fd_, ch.buf.data() + got, len - got, static_cast<off_t>(off + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        problem_ = local_ + (n == 0 ? ": it became shorter while being pushed: push again"
                                    : std::string(": cannot read it: ") + std::strerror(errno));
        break;
      }
      got += static_cast<size_t>(n);
    }
    if (problem_.empty()) d_.update(ch.buf.data(), len);
    ch.seal(len, problem_.empty() ? kChunkOk : 0);
  }

  /// After the last chunk: the digest to send (dashes after a problem).
  std::string finish() {
    if (problem_.empty()) check_unchanged("while being pushed");
    return problem_.empty() ? d_.hex() : std::string(kDigestChars, '-');
  }
  const std::string& problem() const { return problem_; }

 private:
  void check_unchanged(const char* when) {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      problem_ = local_ + ": cannot read it: " + std::strerror(errno);
    } else if (static_cast<std::uint64_t>(st.st_size) != e_.size || mtime_ns_of(st) != e_.mtime_ns) {
      problem_ = local_ + ": it was modified " + when + " (its size or modification time changed: " +
                 std::to_string(e_.size) + " bytes then, " + std::to_string(st.st_size) +
                 " now): push again once it is written";
    }
  }

  std::string local_;
  const Entry& e_;
  int fd_ = -1;
  FileDigest d_;
  std::string problem_;
};

// A target's writing of one file from `start` into its part (`fd`; -1: what arrives is
// discarded). The digest covers the part's first `start` bytes, then every chunk written.
class TargetFile {
 public:
  TargetFile(DestTree& tree, const Entry& e, std::uint64_t start, int fd, std::string problem)
      : tree_(tree), e_(e), fd_(fd), problem_(std::move(problem)) {
    if (fd_ >= 0 && problem_.empty() && !digest_fd(fd_, start, d_)) {
      problem_ = e.path + ": cannot read back its part: " + std::strerror(errno);
    }
  }
  ~TargetFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  TargetFile(const TargetFile&) = delete;
  TargetFile& operator=(const TargetFile&) = delete;

  bool writing() const { return fd_ >= 0 && problem_.empty(); }

  /// Checks the chunk in `ch` (bytes [off, off + len) of the file) and writes it.
  void write(const Chunk& ch, std::uint64_t off, size_t len) {
    if (!writing()) return;
    if (!ch.intact(len)) {
      problem_ = e_.path + ": a chunk at byte " + std::to_string(off) +
                 " arrived damaged or the source could not read it";
      return;
    }
    d_.update(ch.buf.data(), len);
    size_t put = 0;
    while (put < len) {
      const ssize_t n = ::pwrite(fd_, ch.buf.data() + put, len - put, static_cast<off_t>(off + put));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        problem_ = e_.path + ": cannot write it: " + std::strerror(errno);
        return;
      }
      put += static_cast<size_t>(n);
    }
  }

  /// With the source's digest: renames the part into place when all is well (DestTree::
  /// finish_file). Returns "" or the problem.
  std::string finish(const std::string& expected) {
    if (fd_ < 0 || !problem_.empty()) return problem_;
    const int fd = fd_;
    fd_ = -1;
    return tree_.finish_file(e_, fd, d_.hex(), expected);
  }

 private:
  DestTree& tree_;
  const Entry& e_;
  int fd_;
  FileDigest d_;
  std::string problem_;
};

std::uint64_t chunk_count(const Entry& e, std::uint64_t start, std::uint64_t C) {
  return start >= e.size ? 0 : (e.size - start + C - 1) / C;
}

// One thread that runs tasks in the order given: the source's reads ahead of the broadcasts,
// the targets' writes behind them. Tasks must not throw (they keep their problems).
class InOrder {
 public:
  InOrder() : thread_([this] { run(); }) {}
  ~InOrder() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();  // after the tasks still queued: they use buffers their caller owns
  }
  InOrder(const InOrder&) = delete;
  InOrder& operator=(const InOrder&) = delete;

  void submit(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(task));
      ++submitted_;
    }
    cv_.notify_all();
  }
  /// Waits until the first `n` tasks ever submitted have run.
  void wait_done(std::uint64_t n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_ >= n; });
  }
  /// Waits until every task submitted so far has run.
  void drain() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_ >= submitted_; });
  }
  std::uint64_t submitted() {
    std::lock_guard lock(mu_);
    return submitted_;
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      lock.lock();
      ++done_;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::uint64_t submitted_ = 0, done_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

// The chunk buffers of the files every target gets, used in turn: up to kDepth chunks read
// ahead at the source, or waiting to be written at a target, while another is on the wire
// (a slow disk write or a rank that lost its core for a moment does not stop every rank's
// next broadcast at once).
constexpr size_t kDepth = 4;
struct Pipeline {
  std::vector<Chunk> ring;
  InOrder worker;
  explicit Pipeline(std::uint64_t chunk) : ring(kDepth, Chunk(chunk)) {}
};

// Waits for the pipeline's queued tasks when a file ends, also by an exception: they use the
// file's state.
struct DrainOnExit {
  InOrder& w;
  ~DrainOnExit() { w.drain(); }
};

// Rank 0's side of a file every target gets: one broadcast per chunk, then the digest.
std::string send_file(comm::Communicator& c, const std::string& local, const Entry& e,
                      std::uint64_t start, Pipeline& pl, std::uint64_t C, Progress& pr) {
  SourceFile sf(local, e, start);
  DrainOnExit drain{pl.worker};
  const std::uint64_t n = chunk_count(e, start, C);
  auto len_of = [&](std::uint64_t k) {
    return static_cast<size_t>(std::min(C, e.size - (start + k * C)));
  };
  const std::uint64_t base = pl.worker.submitted();  // read k is task base + k
  auto read = [&](std::uint64_t k) {
    Chunk* buf = &pl.ring[static_cast<size_t>(k % kDepth)];
    const std::uint64_t off = start + k * C;
    const size_t len = len_of(k);
    pl.worker.submit([&sf, buf, off, len] { sf.read(*buf, off, len); });
  };
  for (std::uint64_t k = 0; k < std::min<std::uint64_t>(n, kDepth); ++k) read(k);
  for (std::uint64_t k = 0; k < n; ++k) {
    pl.worker.wait_done(base + k + 1);
    Chunk& buf = pl.ring[static_cast<size_t>(k % kDepth)];
    c.broadcast(buf.buf.data(), buf.buf.data(), len_of(k) + 16, comm::DataType::kU8, 0);
    pr.add(len_of(k));
    if (k + kDepth < n) read(k + kDepth);  // into the buffer just sent
  }
  pl.worker.drain();
  std::string digest = sf.finish();
  bcast_text(c, digest);
  return sf.problem();
}

// A target's side of a file every target gets: chunks are written behind the broadcasts.
std::string receive_file(comm::Communicator& c, TargetFile& tf, const Entry& e, std::uint64_t start,
                         Pipeline& pl, std::uint64_t C, Progress& pr) {
  DrainOnExit drain{pl.worker};
  const std::uint64_t n = chunk_count(e, start, C);
  const bool writes = tf.writing();
  const std::uint64_t base = pl.worker.submitted();  // write k is task base + k
  for (std::uint64_t k = 0; k < n; ++k) {
    const std::uint64_t off = start + k * C;
    const size_t len = static_cast<size_t>(std::min(C, e.size - off));
    Chunk* buf = &pl.ring[static_cast<size_t>(k % kDepth)];
    if (k >= kDepth) pl.worker.wait_done(base + k - kDepth + 1);  // its last write is done
    c.broadcast(buf->buf.data(), buf->buf.data(), len + 16, comm::DataType::kU8, 0);
    pl.worker.submit([&tf, buf, off, len] { tf.write(*buf, off, len); });
    if (writes) pr.add(len);
  }
  pl.worker.drain();
  std::string digest;
  bcast_text(c, digest);
  return tf.finish(digest);
}

// A file for some targets only (--manifest): rank 0 sends it to each of them on its own, the
// files of different targets interleaved chunk by chunk so that each target's cable is busy.
struct Stream {
  int rank = 0;
  std::vector<std::pair<size_t, std::uint64_t>> files;  // (entry, start)
  size_t next = 0;
  std::unique_ptr<SourceFile> file;
  std::uint64_t off = 0;
};

std::vector<std::string> send_streams(comm::Communicator& c, const Manifest& m,
                                      std::vector<Stream>& streams, Chunk& ch, std::uint64_t C,
                                      Progress& pr) {
  std::vector<std::string> problems;
  for (bool more = true; more;) {
    more = false;
    for (auto& s : streams) {
      if (s.next >= s.files.size()) continue;
      more = true;
      const auto [i, start] = s.files[s.next];
      const Entry& e = m.entries.at(i);
      if (!s.file) {
        s.file = std::make_unique<SourceFile>(m.local.at(i), e, start);
        s.off = start;
      }
      if (s.off < e.size) {
        const size_t len = static_cast<size_t>(std::min(C, e.size - s.off));
        s.file->read(ch, s.off, len);
        c.send(ch.buf.data(), len + 16, s.rank);
        s.off += len;
        pr.add(len);
        continue;
      }
      const std::string digest = s.file->finish();
      c.send(digest.data(), kDigestChars, s.rank);
      if (!s.file->problem().empty() &&
          std::find(problems.begin(), problems.end(), s.file->problem()) == problems.end()) {
        problems.push_back(s.file->problem());
      }
      s.file.reset();
      ++s.next;
    }
  }
  return problems;
}

std::string receive_stream_file(comm::Communicator& c, TargetFile& tf, const Entry& e,
                                std::uint64_t start, Chunk& ch, std::uint64_t C, Progress& pr) {
  for (std::uint64_t off = start; off < e.size; off += C) {
    const size_t len = static_cast<size_t>(std::min(C, e.size - off));
    c.recv(ch.buf.data(), len + 16, 0);
    tf.write(ch, off, len);
    pr.add(len);
  }
  std::string digest(kDigestChars, '\0');
  c.recv(digest.data(), kDigestChars, 0);
  return tf.finish(digest);
}

Json plan_json(const TargetPlan& p) {
  Json files = Json::array();
  for (const auto& [i, have] : p.files) files.push_back({i, have});
  return {{"errors", p.errors}, {"free", p.free_bytes}, {"need", p.need_bytes},
          {"files", files},     {"skipped", p.skipped},   {"identity", p.identity}};
}

std::string name_of(const RankOptions& o, size_t rank) {
  return rank < o.names.size() ? o.names[rank] : "rank " + std::to_string(rank);
}

// Rank 0: the decision from every target's plan: the files every target gets ("files": each
// from the smallest offset a target needs) and each target's own ("streams"); errors (per
// rank) when anything stops the push.
Json decide(const Manifest& m, const std::vector<std::string>& plans, const RankOptions& o) {
  Json errors = Json::array();
  if (!m.errors.empty()) errors.push_back({{"rank", 0}, {"messages", m.errors}});
  const size_t targets = plans.size() - 1;
  auto for_all = [&](const Entry& e) { return e.to.empty() || e.to.size() == targets; };
  std::vector<std::uint64_t> start(m.entries.size(), ~std::uint64_t{0});
  Json streams = Json::array();
  std::map<std::string, size_t> places;  // destination identity -> the first rank with it
  for (size_t r = 1; r < plans.size(); ++r) {
    const Json p = Json::parse(plans[r]);
    std::vector<std::string> msgs = p.at("errors").get<std::vector<std::string>>();
    const auto need = p.at("need").get<std::uint64_t>(), free = p.at("free").get<std::uint64_t>();
    if (msgs.empty() && need > free) {
      msgs.push_back("needs " + std::to_string(need) + " bytes at the destination and " +
                     std::to_string(free) + " are free: free space there or push less");
    }
    const std::string place = p.value("identity", std::string());
    if (!place.empty() && msgs.empty() && m.errors.empty()) {
      const auto [it, fresh] = places.emplace(place, r);
      if (!fresh) {
        msgs.push_back("its destination is the very directory " + name_of(o, it->second) +
                       " writes (one machine named twice, or hosts that share this file "
                       "system): push to one of them only");
      }
    }
    if (!msgs.empty()) errors.push_back({{"rank", r}, {"messages", msgs}});
    Json own = Json::array();
    for (const auto& f : p.at("files")) {
      const auto i = f.at(0).get<size_t>();
      if (i >= start.size()) continue;
      if (for_all(m.entries[i])) {
        start[i] = std::min(start[i], f.at(1).get<std::uint64_t>());
      } else {
        own.push_back(f);
      }
    }
    if (!own.empty()) streams.push_back({r, own});
  }
  Json files = Json::array();
  for (size_t i = 0; i < start.size(); ++i) {
    if (start[i] != ~std::uint64_t{0}) files.push_back({i, start[i]});
  }
  return {{"go", errors.empty()}, {"errors", errors}, {"files", files}, {"streams", streams}};
}

}  // namespace

int run_rank(comm::Communicator& c, const RankOptions& o) {
  const bool source = c.rank() == 0;
  const auto t0 = Clock::now();
  Manifest m;
  std::string text;
  if (source) {
    m = build_manifest(o.sources, o.checksum);
    for (const auto& s : o.shares) {
      if (s.rank >= c.size()) {
        m.errors.push_back(s.at + ": names rank " + std::to_string(s.rank) + " of a world of " +
                           std::to_string(c.size()));
      }
    }
    for (auto& p : apply_shares(m, o.shares)) m.errors.push_back(std::move(p));
    text = to_json(m);
  }
  bcast_text(c, text);
  if (!source) m = manifest_from_json(text);

  TargetPlan plan;
  if (!source) plan = examine(o.dest, m, o.checksum, o.chunk, c.rank());
  const auto plans = gather_text(c, source ? std::string() : json_text(plan_json(plan)));
  std::string decision = source ? json_text(decide(m, plans, o)) : std::string();
  bcast_text(c, decision);
  const Json d = Json::parse(decision);
  if (!d.at("go").get<bool>()) {
    if (source) event({{"event", "error"}, {"code", 2}, {"errors", d.at("errors")}});
    return source ? 2 : 0;
  }

  // This rank's files from the decision: every target's, then each target's own.
  std::vector<Stream> streams;
  for (const auto& s : d.at("streams")) {
    Stream st;
    st.rank = s.at(0).get<int>();
    for (const auto& f : s.at(1)) st.files.emplace_back(f.at(0).get<size_t>(), f.at(1).get<std::uint64_t>());
    if (source || st.rank == c.rank()) streams.push_back(std::move(st));
  }
  std::map<size_t, std::uint64_t> mine;  // target: entry -> what its part holds
  for (const auto& [i, have] : plan.files) mine[i] = have;
  Progress pr{c.rank(), o.progress_ms};
  for (const auto& f : d.at("files")) {
    const size_t i = f.at(0).get<size_t>();
    if (source || mine.count(i) != 0) pr.total += m.entries.at(i).size - f.at(1).get<std::uint64_t>();
  }
  for (const auto& s : streams) {
    for (const auto& [i, start] : s.files) pr.total += m.entries.at(i).size - start;
  }

  Pipeline pl(o.chunk);
  std::vector<std::string> problems;
  std::unique_ptr<DestTree> tree;
  if (!source) {
    tree = std::make_unique<DestTree>(o.dest);
    if (!tree->ok()) problems.push_back(tree->error());
    if (tree->ok()) {
      for (auto& p : tree->make_directories(m)) problems.push_back(std::move(p));
    }
  }
  // A target's part of entry i from `start` (or a discarding one when it is not this
  // target's to write, or the destination is unusable).
  auto target_file = [&](size_t i, std::uint64_t start) {
    const Entry& e = m.entries.at(i);
    std::string problem;
    int fd = -1;
    if (mine.count(i) != 0 && tree->ok()) fd = tree->open_part(e, start, problem);
    return std::make_unique<TargetFile>(*tree, e, start, fd, problem);
  };
  size_t sent = 0;
  auto done = [&](size_t i, const std::string& problem) {
    if (!problem.empty()) {
      problems.push_back(problem);
    } else if (!source && mine.count(i) != 0 && tree->ok()) {
      ++sent;
    }
  };
  for (const auto& f : d.at("files")) {
    const size_t i = f.at(0).get<size_t>();
    const std::uint64_t start = f.at(1).get<std::uint64_t>();
    if (source) {
      done(i, send_file(c, m.local.at(i), m.entries.at(i), start, pl, o.chunk, pr));
    } else {
      auto tf = target_file(i, start);
      done(i, receive_file(c, *tf, m.entries.at(i), start, pl, o.chunk, pr));
    }
  }
  if (source) {
    for (auto& p : send_streams(c, m, streams, pl.ring[0], o.chunk, pr)) problems.push_back(std::move(p));
  } else {
    for (const auto& s : streams) {
      for (const auto& [i, start] : s.files) {
        auto tf = target_file(i, start);
        done(i, receive_stream_file(c, *tf, m.entries.at(i), start, pl.ring[0], o.chunk, pr));
      }
    }
  }
  if (!source && tree->ok()) {
    for (const auto& e : m.entries) {
      if (e.kind != EntryKind::kSymlink || !goes_to(e, c.rank())) continue;
      if (auto p = tree->make_link(e); !p.empty()) problems.push_back(p);
    }
    for (auto& p : tree->finish_directories(m)) problems.push_back(std::move(p));
  }
  pr.add(0, true);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const Json result = {{"rank", c.rank()},      {"files_sent", sent},
                       {"files_skipped", plan.skipped}, {"bytes", pr.done},
                       {"seconds", secs},       {"errors", problems}};
  const auto results = gather_text(c, source ? std::string() : json_text(result));
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
         // Until every target's result is in: the push's own time, from the manifest's walk.
         {"seconds", std::chrono::duration<double>(Clock::now() - t0).count()},
         {"source_errors", problems},
         {"targets", targets}});
  return failed ? 4 : 0;
}

}  // namespace cc::push
