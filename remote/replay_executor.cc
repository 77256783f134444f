#include "remote/replay_executor.h"

#include <charconv>
#include <cstdint>
#include <system_error>

#include <fmt/format.h>

#include "remote/quote.h"
#include "util/atomic_file.h"

namespace cc::remote {
namespace {

using util::ExitCode;

constexpr size_t kMaxKey = 120;
constexpr size_t kKeptPrefix = 100;

bool keep(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 14695981039346656037ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::string command_line(const Command& cmd) {
  if (cmd.shell && !cmd.argv.empty()) return shell_quote({"sh", "-c", cmd.argv[0]});
  return shell_quote(cmd.argv);
}

// Strips surrounding whitespace.
std::string_view trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\n' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

std::string replay_key(const Command& cmd) {
  std::string line = command_line(cmd);
  std::string key;
  for (char c : line) {
    char k = keep(c) ? c : '_';
    if (k == '_' && !key.empty() && key.back() == '_') continue;
    key += k;
  }
  while (!key.empty() && key.front() == '_') key.erase(key.begin());
  while (!key.empty() && key.back() == '_') key.pop_back();
  if (key.empty() || key.size() > kMaxKey) {
    key = fmt::format("{}_{:016x}", key.substr(0, kKeptPrefix), fnv1a64(line));
    if (key.front() == '_') key.erase(key.begin());
  }
  return key;
}

util::Result<CommandResult> ReplayExecutor::run(const Command& cmd, const RunOptions& /*opts*/) {
  if (cmd.argv.empty()) return util::error(ExitCode::kUsage, "empty command: nothing to run");
  std::filesystem::path dir = bundle_ / host_;
  std::error_code ec;
  // One command sees one state of the host: the host's entry is resolved once (a test may
  // swap or remove a symlinked host between two commands, as a Mac shuts down or comes back;
  // a command that started reads the state it started on, as on a real host).
  // Files are read under `src`; messages name `dir`, the path the bundle gives.
  std::filesystem::path src = std::filesystem::canonical(dir, ec);
  if (ec) src = dir;
  if (!std::filesystem::is_directory(src, ec)) {
    return util::error(ExitCode::kUnreachable,
                       fmt::format("{}: no recordings for this host in bundle {} (expected the "
                                   "directory {})",
                                   host_, bundle_.string(), dir.string()));
  }
  std::string key = replay_key(cmd);
  std::filesystem::path out = src / (key + ".out");
  if (!std::filesystem::is_regular_file(out, ec)) {
    return util::error(
        ExitCode::kUsage,
        fmt::format("{}: no recording of `{}`: expected the file {} (with "
                    "optional {}.err and {}.exit beside it)",
                    host_, command_line(cmd), (dir / (key + ".out")).string(), key, key));
  }
  CommandResult r;
  auto text = util::read_file(out);
  if (!text) return text.error();
  r.out = std::move(*text);
  std::filesystem::path err = src / (key + ".err");
  if (std::filesystem::exists(err, ec)) {
    auto e = util::read_file(err);
    if (!e) return e.error();
    r.err = std::move(*e);
  }
  r.exit_status = 0;
  std::filesystem::path exit_file = src / (key + ".exit");
  if (std::filesystem::exists(exit_file, ec)) {
    auto x = util::read_file(exit_file);
    if (!x) return x.error();
    std::string_view s = trim(*x);
    int status = -1;
    auto [end, rc] = std::from_chars(s.data(), s.data() + s.size(), status);
    if (rc != std::errc() || end != s.data() + s.size() || status < 0 || status > 255) {
      return util::error(ExitCode::kUsage,
                         fmt::format("{}: expected an exit status 0..255, found '{}'",
                                     (dir / (key + ".exit")).string(), s));
    }
    r.exit_status = status;
  }
  return r;
}

std::string ReplayExecutor::host_key_fingerprint() const {
  std::error_code ec;
  const std::filesystem::path file = bundle_ / host_ / kHostKeyFile;
  if (!std::filesystem::is_regular_file(file, ec)) return {};
  auto text = util::read_file(file);
  if (!text) return {};
  std::string_view line = *text;
  line = line.substr(0, line.find('\n'));
  line = trim(line);
  return line.starts_with("SHA256:") ? std::string(line) : std::string();
}

util::Status ReplayExecutor::upload(const std::filesystem::path& local,
                                    const std::string& /*remote_path*/, unsigned /*mode*/,
                                    std::chrono::milliseconds /*timeout*/) {
  auto content = util::read_file(local, kMaxUploadBytes);
  if (!content) return content.error();
  return {};
}

}  // namespace cc::remote
