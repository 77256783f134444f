#include "remote/ssh_config_scan.h"

#include <glob.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "util/atomic_file.h"
#include "util/text.h"

namespace cc::remote {
namespace {

// libssh's LIBSSH_MAX_INCLUDE_DEPTH (src/config.c): deeper Includes are not read.
constexpr unsigned kMaxIncludeDepth = 16;
// An SSH config is a few kilobytes; a larger file is no config libssh reads whole either.
constexpr std::uintmax_t kMaxConfigBytes = 1 << 20;

// The keyword of a config line (its first word, up to a blank or '=') and the rest after it,
// or an empty keyword for a blank line or a comment.
std::pair<std::string_view, std::string_view> keyword_of(std::string_view line) {
  line = util::trim(line);
  if (line.empty() || line.front() == '#') return {};
  const std::size_t end = line.find_first_of(" \t=");
  if (end == std::string_view::npos) return {line, {}};
  std::string_view rest = util::trim(line.substr(end));
  if (!rest.empty() && rest.front() == '=') rest = util::trim(rest.substr(1));
  return {line.substr(0, end), rest};
}

bool is_keyword(std::string_view word, std::string_view keyword) {
  return word.size() == keyword.size() &&
         std::equal(word.begin(), word.end(), keyword.begin(), [](char a, char b) {
           return (a >= 'A' && a <= 'Z' ? static_cast<char>(a - 'A' + 'a') : a) == b;
         });
}

// The paths of an Include line's arguments: blank-separated, a double-quoted one whole.
std::vector<std::string> include_args(std::string_view rest) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\t')) ++i;
    if (i >= rest.size()) break;
    std::size_t end;
    if (rest[i] == '"') {
      end = rest.find('"', i + 1);
      if (end == std::string_view::npos) end = rest.size();
      out.emplace_back(rest.substr(i + 1, end - i - 1));
      i = end + 1;
      continue;
    }
    end = rest.find_first_of(" \t", i);
    if (end == std::string_view::npos) end = rest.size();
    out.emplace_back(rest.substr(i, end - i));
    i = end;
  }
  return out;
}

// The files an Include argument names, in glob(3)'s (sorted) order, as libssh expands it.
std::vector<std::filesystem::path> include_files(const std::string& arg,
                                                 const std::filesystem::path& base,
                                                 const std::filesystem::path& home) {
  std::string pattern = arg;
  if (pattern.starts_with("~/")) {
    pattern = (home / pattern.substr(2)).string();
  } else if (!pattern.starts_with("/")) {
    pattern = (base / pattern).string();
  }
  std::vector<std::filesystem::path> out;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (std::size_t k = 0; k < g.gl_pathc; ++k) out.emplace_back(g.gl_pathv[k]);
  }
  ::globfree(&g);
  return out;
}

void scan(const std::filesystem::path& file, const std::filesystem::path& base,
          const std::filesystem::path& home, unsigned depth, std::vector<ConfigLine>& out) {
  if (depth > kMaxIncludeDepth) return;
  auto text = util::read_file(file, kMaxConfigBytes);
  if (!text) return;  // libssh skips a file it cannot open: so does this
  const auto lines = util::split_lines(*text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto [word, rest] = keyword_of(lines[i]);
    if (is_keyword(word, "match")) {
      out.push_back({file, i + 1, std::string(util::trim(lines[i]))});
    } else if (is_keyword(word, "include")) {
      for (const std::string& arg : include_args(rest)) {
        for (const auto& f : include_files(arg, base, home)) scan(f, base, home, depth + 1, out);
      }
    }
  }
}

// The home directory as libssh finds it (ssh_get_user_home_dir): the password database, else
// $HOME; empty when neither says.
std::filesystem::path user_home() {
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) {
    return pw->pw_dir;
  }
  const char* home = std::getenv("HOME");
  return home != nullptr ? std::filesystem::path(home) : std::filesystem::path();
}

}  // namespace

std::vector<ConfigLine> ssh_config_match_lines(const std::filesystem::path& file,
                                               const std::filesystem::path& include_base,
                                               const std::filesystem::path& home) {
  std::vector<ConfigLine> out;
  scan(file, include_base, home, 0, out);
  return out;
}

std::vector<ConfigLine> ssh_config_match_lines(const SshOptions& options) {
  const std::filesystem::path home = user_home();
  if (options.config_file) return ssh_config_match_lines(*options.config_file, home / ".ssh", home);
  std::vector<ConfigLine> out;
  if (!home.empty()) out = ssh_config_match_lines(home / ".ssh" / "config", home / ".ssh", home);
  auto global = ssh_config_match_lines("/etc/ssh/ssh_config", "/etc/ssh", home);
  out.insert(out.end(), global.begin(), global.end());
  return out;
}

std::string match_note(const std::vector<ConfigLine>& lines) {
  if (lines.empty()) return "";
  constexpr std::size_t kShown = 5;
  std::string where;
  for (std::size_t i = 0; i < lines.size() && i < kShown; ++i) {
    where += fmt::format("\n  {}:{}: {}", lines[i].file.string(), lines[i].line, lines[i].text);
  }
  if (lines.size() > kShown) where += fmt::format("\n  and {} more", lines.size() - kShown);
  return fmt::format(
      "note: the SSH config has `Match` {}:{}\nclusterctl connects with libssh, which reads "
      "Match blocks otherwise than ssh: it applies `host`, `user`, `localuser`, `exec` and "
      "`all` once, where it reads the line, skips `canonical` and `final` (ssh applies those "
      "blocks after HostName, matching the final name) and never applies `originalhost`; so "
      "clusterctl may reach another address, user or port than `ssh HOST` (see `ssh -G HOST`). "
      "To be sure both agree, put what a host needs in a `Host` block, or give it in an "
      "inventory (`ssh: user@address`, `address:`)",
      lines.size() == 1 ? "here" : "in these places", where);
}

}  // namespace cc::remote
