#include "launch/output.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "util/atomic_file.h"
#include "util/term.h"

namespace cc::launch {

std::string rank_prefix(int rank, std::string_view host) {
  return fmt::format("[{} {}] ", rank, host);
}

OutputMux::OutputMux(std::filesystem::path dir, std::vector<std::string> labels, OutputOptions opts)
    : dir_(std::move(dir)),
      labels_(std::move(labels)),
      opts_(std::move(opts)),
      streams_(labels_.size() * 2),
      last_(labels_.size(), std::chrono::steady_clock::now()),
      last_error_(labels_.size()) {}

OutputMux::~OutputMux() {
  for (auto& s : streams_) {
    if (s.log != nullptr) std::fclose(s.log);
  }
}

std::filesystem::path OutputMux::log_path(int rank, int fd) const {
  return dir_ / fmt::format("rank-{}.{}", rank, fd == 1 ? "out" : "err");
}

util::Result<std::unique_ptr<OutputMux>> OutputMux::open(const std::filesystem::path& log_dir,
                                                         std::vector<std::string> labels,
                                                         OutputOptions opts) {
  std::error_code ec;
  // The parents that are not there yet, deepest first: discard() removes only those.
  std::vector<std::filesystem::path> made;
  for (auto p = log_dir.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0 || errno != ENOENT) break;
    made.push_back(p);
  }
  if (log_dir.has_parent_path()) std::filesystem::create_directories(log_dir.parent_path(), ec);
  if (ec) {
    return util::error(util::ExitCode::kUsage,
                       fmt::format("cannot create the log directory {}: {}; set `logs:` in the "
                                   "job file to a writable directory",
                                   log_dir.parent_path().string(), ec.message()));
  }
  if (::mkdir(log_dir.c_str(), 0755) != 0) {
    return util::error(util::ExitCode::kUsage,
                       fmt::format("cannot create this run's log directory {}: {}; set `logs:` "
                                   "in the job file to a writable directory",
                                   log_dir.string(),
                                   errno == EEXIST ? "it already exists" : std::strerror(errno)));
  }
  std::unique_ptr<OutputMux> mux(new OutputMux(log_dir, std::move(labels), std::move(opts)));
  mux->made_parents_ = std::move(made);
  for (size_t r = 0; r < mux->labels_.size(); ++r) {
    for (int fd = 1; fd <= 2; ++fd) {
      // A log that cannot be made leaves nothing of this run behind (discard).
      auto file = util::create_new_file(mux->log_path(static_cast<int>(r), fd), 0644);
      if (!file) {
        mux->discard();
        return file.error();
      }
      std::FILE* f = ::fdopen(file->get(), "w");
      if (f == nullptr) {
        const int err = errno;
        ::unlink(mux->log_path(static_cast<int>(r), fd).c_str());
        mux->discard();
        return util::error(util::ExitCode::kUsage,
                           fmt::format("cannot write the log file {}: {}",
                                       mux->log_path(static_cast<int>(r), fd).string(),
                                       std::strerror(err)));
      }
      file->release();
      mux->streams_[r * 2 + static_cast<size_t>(fd - 1)].log = f;
    }
  }
  return mux;
}

void OutputMux::discard() {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < streams_.size(); ++i) {
    Stream& s = streams_[i];
    if (s.log == nullptr) continue;  // never created (open failed there) or discarded already
    std::fclose(s.log);
    s.log = nullptr;
    ::unlink(log_path(static_cast<int>(i / 2), static_cast<int>(i % 2) + 1).c_str());
  }
  // rmdir(2) removes only an empty directory and follows no link: what another process put
  // there stays, and with it every directory above it.
  if (::rmdir(dir_.c_str()) != 0) return;
  for (const auto& p : made_parents_) {
    if (::rmdir(p.c_str()) != 0) return;
  }
}

util::Status link_latest(const std::filesystem::path& log_dir) {
  const std::filesystem::path base = log_dir.parent_path();
  const std::filesystem::path link = base / "latest";
  struct stat st {};
  if (::lstat(link.c_str(), &st) == 0 && !S_ISLNK(st.st_mode)) {
    return util::error(util::ExitCode::kUsage,
                       fmt::format("{} is not a symbolic link: left as it is (the newest run's "
                                   "logs are in {})",
                                   link.string(), log_dir.string()));
  }
  // A new link beside it, renamed over the old one: `latest` always names a whole run.
  const std::filesystem::path tmp = base / fmt::format(".latest.{}", util::random_hex(6));
  if (::symlink(log_dir.filename().c_str(), tmp.c_str()) != 0 ||
      ::rename(tmp.c_str(), link.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return util::error(util::ExitCode::kUsage, fmt::format("cannot point {} at {}: {}",
                                                           link.string(), log_dir.string(),
                                                           std::strerror(err)));
  }
  return {};
}

void OutputMux::emit(int rank, int fd, std::string_view line, bool ends_line) {
  Stream& s = streams_[static_cast<size_t>(rank) * 2 + static_cast<size_t>(fd - 1)];
  if (s.log != nullptr) {  // none after discard()
    std::fwrite(line.data(), 1, line.size(), s.log);
    if (ends_line) std::fputc('\n', s.log);
    std::fflush(s.log);
  }
  if (fd == 2 && line.find_first_not_of(" \t\r") != std::string_view::npos) {
    last_error_[static_cast<size_t>(rank)] = std::string(line.substr(0, 4096));
  }
  if (opts_.filter && !opts_.filter(rank, fd, line)) return;
  std::FILE* term = fd == 1 ? opts_.out : opts_.err;
  if (term == nullptr) return;
  if (!opts_.shown.empty() && opts_.shown.count(rank) == 0) return;
  std::string text = opts_.prefix ? rank_prefix(rank, labels_[static_cast<size_t>(rank)]) : "";
  text.append(line);
  text += '\n';
  clear_status();
  std::fwrite(text.data(), 1, text.size(), term);
  util::flush_output(term);
  draw_status();
}

void OutputMux::clear_status() {
  if (status_.empty() || opts_.err == nullptr) return;
  // Each line of a status of several lines: clear it, then up to the one before.
  std::string erase = "\r\x1b[K";
  for (char ch : status_) {
    if (ch == '\n') erase += "\x1b[1A\x1b[K";
  }
  std::fputs(erase.c_str(), opts_.err);
  std::fflush(opts_.err);
}

void OutputMux::draw_status() {
  if (status_.empty() || opts_.err == nullptr) return;
  std::fputs(status_.c_str(), opts_.err);
  std::fflush(opts_.err);
}

void OutputMux::status(std::string_view text) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!opts_.status_line) return;
  clear_status();
  status_ = text;
  draw_status();
}

void LineCutter::feed(std::string_view bytes, const Sink& out) {
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    const size_t len = nl == std::string_view::npos ? bytes.size() : nl;
    if (partial_.size() + len <= kMaxLinePiece) {  // the line (so far) fits in one piece
      if (nl == std::string_view::npos) {
        partial_.append(bytes);
        return;
      }
      if (partial_.empty()) {
        out(bytes.substr(0, nl), true);
      } else {
        partial_.append(bytes.substr(0, nl));
        out(partial_, true);
        partial_.clear();
      }
      bytes.remove_prefix(nl + 1);
      continue;
    }
    // The line goes on past kMaxLinePiece (a binary or progress output of 100 MB without a
    // newline; held whole, it took its size in memory, twice): a piece of it now. One byte
    // past the piece is held, so the cut can look at what follows it.
    const size_t take = kMaxLinePiece + 1 - partial_.size();
    partial_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    size_t cut = kMaxLinePiece;
    // Not inside a UTF-8 character: back over up to 3 continuation bytes.
    for (int i = 0; i < 3 && (static_cast<unsigned char>(partial_[cut]) & 0xC0) == 0x80; ++i) {
      --cut;
    }
    out(std::string_view(partial_).substr(0, cut), false);
    partial_.erase(0, cut);
  }
}

void LineCutter::finish(const Sink& out) {
  if (partial_.empty()) return;
  out(partial_, true);
  partial_.clear();
}

void OutputMux::feed(int rank, int fd, std::string_view bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  last_[static_cast<size_t>(rank)] = std::chrono::steady_clock::now();
  streams_[static_cast<size_t>(rank) * 2 + static_cast<size_t>(fd - 1)].lines.feed(
      bytes, [&](std::string_view piece, bool ends_line) { emit(rank, fd, piece, ends_line); });
}

std::string OutputMux::last_error_line(int rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_.at(static_cast<size_t>(rank));
}

std::vector<std::string> OutputMux::last_error_lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

void OutputMux::finish(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int fd = 1; fd <= 2; ++fd) {
    streams_[static_cast<size_t>(rank) * 2 + static_cast<size_t>(fd - 1)].lines.finish(
        [&](std::string_view line, bool) { emit(rank, fd, line); });
  }
}

void OutputMux::note(std::string_view line) {
  std::lock_guard<std::mutex> lock(mu_);
  if (opts_.err == nullptr) return;
  std::string text = fmt::format("clusterctl: {}\n", line);
  clear_status();
  std::fwrite(text.data(), 1, text.size(), opts_.err);
  std::fflush(opts_.err);
  draw_status();
}

void OutputMux::mark_logs(std::string_view line) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  for (size_t r = 0; r < labels_.size(); ++r) {
    for (int fd = 1; fd <= 2; ++fd) {
      Stream& s = streams_[r * 2 + static_cast<size_t>(fd - 1)];
      s.lines.finish([&](std::string_view rest, bool) { emit(static_cast<int>(r), fd, rest); });
      if (s.log == nullptr) continue;  // none after discard()
      std::fwrite(line.data(), 1, line.size(), s.log);
      std::fputc('\n', s.log);
      std::fflush(s.log);
    }
    last_error_[r].clear();
    last_[r] = now;
  }
}

void OutputMux::job_note(std::string_view line) {
  if (opts_.job_notes) {
    note(line);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  held_.emplace_back(line);
}

std::vector<std::string> OutputMux::held_job_notes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

std::chrono::steady_clock::time_point OutputMux::last_output(int rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_[static_cast<size_t>(rank)];
}

}  // namespace cc::launch
