#include "remote/ssh_config_scan.h"

#include <fnmatch.h>
#include <glob.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <optional>
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

// Calls `visit` with each keyword line of `file` and of the files its Includes name, in the
// order libssh reads them. An Include is followed where `visit` returns true for it, and then
// its first path alone: libssh 0.10 reads one path per Include line (ssh reads them all).
using Visit = std::function<bool(const ConfigLine& line, std::string_view keyword,
                                 std::string_view rest)>;

void walk(const std::filesystem::path& file, const std::filesystem::path& base,
          const std::filesystem::path& home, unsigned depth, const Visit& visit) {
  if (depth > kMaxIncludeDepth) return;
  auto text = util::read_file(file, kMaxConfigBytes);
  if (!text) return;  // libssh skips a file it cannot open: so does this
  const auto lines = util::split_lines(*text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto [word, rest] = keyword_of(lines[i]);
    if (word.empty()) continue;
    const ConfigLine line{file, i + 1, std::string(util::trim(lines[i]))};
    const bool descend = visit(line, word, rest);
    if (descend && is_keyword(word, "include")) {
      const auto args = include_args(rest);
      if (args.empty()) continue;
      for (const auto& f : include_files(args.front(), base, home)) {
        walk(f, base, home, depth + 1, visit);
      }
    }
  }
}

// Whether a `Host` line's patterns take `name` (lowercase), as libssh 0.10 decides it
// (src/config.c, SOC_HOST): the first pattern that matches decides, applied when it is a
// plain one and not when it is negated, so a negated pattern after a matching one is never
// looked at; or as ssh decides it: any negated pattern that matches wins over the others.
// Patterns are compared without case, `*` and `?` as wildcards.
bool host_line_takes(std::string_view patterns, const std::string& name, bool as_libssh) {
  bool taken = false;
  for (const std::string& token : include_args(patterns)) {
    const bool negated = token.starts_with("!");
    std::string pattern = token.substr(negated ? 1 : 0);
    std::transform(pattern.begin(), pattern.end(), pattern.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (::fnmatch(pattern.c_str(), name.c_str(), FNM_NOESCAPE) != 0) continue;
    if (negated) return false;
    if (as_libssh) return true;
    taken = true;
  }
  return taken;
}

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// A `Host` line with a negated pattern after another one (`Host * !studio2`).
bool negation_after_pattern(std::string_view patterns) {
  bool plain = false;
  for (const std::string& token : include_args(patterns)) {
    if (token.starts_with("!") && plain) return true;
    plain = plain || !token.starts_with("!");
  }
  return false;
}

// The advice of the notes on lines that may send clusterctl elsewhere than ssh.
constexpr const char* kAgree =
    "To be sure both agree, put what a host needs in a `Host` block, or give it in an "
    "inventory (`ssh: user@address`, `address:`)";

std::string places(const std::vector<ConfigLine>& lines) {
  constexpr std::size_t kShown = 5;
  std::string where;
  for (std::size_t i = 0; i < lines.size() && i < kShown; ++i) {
    where += fmt::format("\n  {}:{}: {}", lines[i].file.string(), lines[i].line, lines[i].text);
  }
  if (lines.size() > kShown) where += fmt::format("\n  and {} more", lines.size() - kShown);
  return where;
}

// "note: the SSH config has WHAT here:" and each FILE:LINE, then `why`; "" for no lines.
std::string lines_note(std::string_view what, const std::vector<ConfigLine>& lines,
                       std::string_view why) {
  if (lines.empty()) return "";
  return fmt::format("note: the SSH config has {} {}:{}\n{}", what,
                     lines.size() == 1 ? "here" : "in these places", places(lines), why);
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

ConfigScan scan_ssh_config(const std::filesystem::path& file,
                           const std::filesystem::path& include_base,
                           const std::filesystem::path& home) {
  ConfigScan out;
  walk(file, include_base, home, 0,
       [&out](const ConfigLine& line, std::string_view word, std::string_view rest) {
         if (is_keyword(word, "match")) out.match.push_back(line);
         if (is_keyword(word, "host") && negation_after_pattern(rest)) {
           out.negation_after_pattern.push_back(line);
         }
         if (is_keyword(word, "include") && include_args(rest).size() > 1) {
           out.several_includes.push_back(line);
         }
         return true;  // every file libssh may read, whichever host
       });
  return out;
}

ConfigScan scan_ssh_config(const SshOptions& options) {
  const std::filesystem::path home = user_home();
  if (options.config_file) return scan_ssh_config(*options.config_file, home / ".ssh", home);
  ConfigScan out;
  if (!home.empty()) out = scan_ssh_config(home / ".ssh" / "config", home / ".ssh", home);
  const ConfigScan global = scan_ssh_config("/etc/ssh/ssh_config", "/etc/ssh", home);
  for (auto [to, from] : {std::pair{&out.match, &global.match},
                          {&out.negation_after_pattern, &global.negation_after_pattern},
                          {&out.several_includes, &global.several_includes}}) {
    to->insert(to->end(), from->begin(), from->end());
  }
  return out;
}

std::vector<ConfigLine> ssh_config_match_lines(const std::filesystem::path& file,
                                               const std::filesystem::path& include_base,
                                               const std::filesystem::path& home) {
  return scan_ssh_config(file, include_base, home).match;
}

std::vector<ConfigLine> ssh_config_match_lines(const SshOptions& options) {
  return scan_ssh_config(options).match;
}

namespace {

// libssh's state across the files it reads for one session: the HostName it applied (the
// first wins, in whichever file) and the name it matches Host lines against since.
struct HostState {
  std::string given;                   // the name as given, lowercase, without a user
  std::optional<ConfigLine> hostname;  // the HostName libssh applied
  std::string current;                 // what libssh matches Host lines against
};

void host_lines_after_hostname(const std::filesystem::path& file,
                               const std::filesystem::path& include_base,
                               const std::filesystem::path& home, HostState& st,
                               std::vector<HostLineDifference>& out) {
  bool parsing = true;  // libssh's, per file: the lines before any Host apply
  walk(file, include_base, home, 0,
       [&](const ConfigLine& line, std::string_view word, std::string_view rest) {
         if (is_keyword(word, "host")) {
           parsing = host_line_takes(rest, st.current, true);
           if (st.hostname && st.current != st.given) {
             const bool ssh = host_line_takes(rest, st.given, false);
             if (parsing != ssh) out.push_back({line, *st.hostname, st.current, parsing});
           }
         } else if (is_keyword(word, "match")) {
           parsing = false;  // not known here: match_note says what libssh does with Match
         } else if (is_keyword(word, "hostname") && parsing && !st.hostname) {
           // The first HostName that applies wins, its %h the name as given (as in ssh).
           const auto args = include_args(rest);
           std::string value = args.empty() ? "" : args.front();
           for (std::size_t p = value.find("%h"); p != std::string::npos;
                p = value.find("%h", p + st.given.size())) {
             value.replace(p, 2, st.given);
           }
           st.hostname = line;
           st.current = lowercase(value);
         }
         return parsing;  // libssh reads an Include only where it applies
       });
}

HostState host_state(const std::string& destination) {
  const std::size_t at = destination.rfind('@');
  HostState st;
  st.given = lowercase(at == std::string::npos ? destination : destination.substr(at + 1));
  st.current = st.given;
  return st;
}

}  // namespace

std::vector<HostLineDifference> host_lines_after_hostname(
    const std::filesystem::path& file, const std::filesystem::path& include_base,
    const std::filesystem::path& home, const std::string& destination) {
  HostState st = host_state(destination);
  std::vector<HostLineDifference> out;
  host_lines_after_hostname(file, include_base, home, st, out);
  return out;
}

std::vector<HostLineDifference> host_lines_after_hostname(const SshOptions& options,
                                                          const std::string& destination) {
  const std::filesystem::path home = user_home();
  HostState st = host_state(destination);
  std::vector<HostLineDifference> out;
  if (options.config_file) {
    host_lines_after_hostname(*options.config_file, home / ".ssh", home, st, out);
    return out;
  }
  // One session reads both: a HostName of the user's config is in force in the global one.
  if (!home.empty()) host_lines_after_hostname(home / ".ssh" / "config", home / ".ssh", home, st, out);
  host_lines_after_hostname("/etc/ssh/ssh_config", "/etc/ssh", home, st, out);
  return out;
}

std::string match_note(const std::vector<ConfigLine>& lines) {
  return lines_note(
      "`Match`", lines,
      fmt::format(
          "clusterctl connects with libssh, which reads Match blocks otherwise than ssh: it "
          "applies `host`, `user`, `localuser`, `exec` and `all` once, where it reads the "
          "line, skips `canonical` and `final` (ssh applies those blocks after HostName, "
          "matching the final name) and never applies `originalhost`; so clusterctl may reach "
          "another address, user or port than `ssh HOST` (see `ssh -G HOST`). {}",
          kAgree));
}

std::string scan_notes(const ConfigScan& scan) {
  const std::string notes[] = {
      match_note(scan.match),
      lines_note("a `Host` line with a negated pattern after another pattern",
                 scan.negation_after_pattern,
                 "clusterctl connects with libssh, which takes a Host line's first pattern "
                 "that matches and never looks at the negated ones after it: it applies `Host "
                 "* !studio2` to studio2, where ssh does not. Put the negated patterns first "
                 "(`Host !studio2 *`), which both read alike"),
      lines_note("an `Include` of several paths", scan.several_includes,
                 "clusterctl connects with libssh, which reads the first path of an Include "
                 "line alone, where ssh reads them all: the Host blocks of the others do not "
                 "apply to clusterctl. Write one Include line per path"),
  };
  std::string out;
  for (const std::string& n : notes) {
    if (!n.empty()) out += (out.empty() ? "" : "\n") + n;
  }
  return out;
}

std::string host_after_hostname_note(const std::string& destination,
                                     const std::vector<HostLineDifference>& lines) {
  if (lines.empty()) return "";
  std::vector<ConfigLine> where;
  for (const HostLineDifference& d : lines) {
    where.push_back(d.host);
    where.back().text += fmt::format(
        " (matched against {}, the HostName of {}:{}: clusterctl {} this block, ssh {})",
        d.matched, d.hostname.file.string(), d.hostname.line,
        d.libssh_applies ? "applies" : "skips", d.libssh_applies ? "does not" : "does");
  }
  return fmt::format(
      "note: for {}, the SSH config has `Host` lines after its HostName that clusterctl reads "
      "otherwise than ssh:{}\nclusterctl connects with libssh, which matches the Host lines "
      "after a HostName against that HostName, where ssh matches every Host line against the "
      "name given ({}); so clusterctl may reach another address, user or port than `ssh {}` "
      "(see `ssh -G {}`). To be sure both agree, put what {} needs in the block that sets its "
      "HostName or before it, or give it in an inventory (`ssh: user@address`, `address:`)",
      destination, places(where), destination, destination, destination, destination);
}

}  // namespace cc::remote
