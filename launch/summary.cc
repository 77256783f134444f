// The end-of-job summary table.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include "launch/runner.h"
#include "remote/outcomes.h"
#include "util/text.h"

namespace cc::launch {
namespace {

// POSIX signal names by number (the ones numbered alike on Linux and macOS).
std::string signal_name(int n) {
  static constexpr std::array<std::pair<int, const char*>, 12> kNames = {{{1, "SIGHUP"},
                                                                          {2, "SIGINT"},
                                                                          {3, "SIGQUIT"},
                                                                          {4, "SIGILL"},
                                                                          {5, "SIGTRAP"},
                                                                          {6, "SIGABRT"},
                                                                          {8, "SIGFPE"},
                                                                          {9, "SIGKILL"},
                                                                          {11, "SIGSEGV"},
                                                                          {13, "SIGPIPE"},
                                                                          {14, "SIGALRM"},
                                                                          {15, "SIGTERM"}}};
  for (const auto& [v, name] : kNames) {
    if (v == n) return name;
  }
  return fmt::format("signal {}", n);
}

// A reason longer than this is printed once in the summary and referred to elsewhere.
constexpr std::size_t kLongReason = 60;

// The status cell of a status too long for it: its first words, up to the first ':' ("connection
// lost: host h2 lost: ..." -> "connection lost"), when they fit; else "see below".
std::string status_cell(const std::string& status) {
  const auto colon = status.find(':');
  if (colon != std::string::npos && colon > 0 && colon <= 22) return status.substr(0, colon);
  return "see below";
}

std::string seconds(std::chrono::milliseconds d) {
  return fmt::format("{:.1f} s", static_cast<double>(d.count()) / 1000.0);
}

// The digits of a rank number at `at` ("12" of "rank 12 never ..."), moving `at` past them;
// nullopt when there are none, or more than a rank number has.
std::optional<int> rank_number(const std::string& line, size_t& at) {
  size_t end = at;
  while (end < line.size() && util::is_ascii_digit(line[end])) ++end;
  if (end == at || end - at > 7) return std::nullopt;
  const std::optional<int> k = util::parse_int(std::string_view(line).substr(at, end - at));
  at = end;
  return k;
}

// The ranks an error line names, in order and once each: 0 for "coordinator" (rank 0 is the
// coordinator), then each "rank K", and each of a list, "ranks K, L" (comm's describe_ranks:
// "ranks 1, 2 never joined the coordinator", "timed out waiting for ranks 1, 2") or "ranks K,
// L and M" (other libraries' English).
std::vector<int> named_ranks(const std::string& line) {
  std::vector<int> named;
  const auto add = [&](int k) {
    if (std::find(named.begin(), named.end(), k) == named.end()) named.push_back(k);
  };
  if (line.find("coordinator") != std::string::npos) add(0);
  for (size_t at = line.find("rank"); at != std::string::npos; at = line.find("rank", at + 4)) {
    if (at > 0 && util::is_ascii_alnum(line[at - 1])) continue;  // "crank 0", "frank 2"
    size_t p = at + 4;
    const bool list = line.compare(p, 2, "s ") == 0;
    if (!list && line.compare(p, 1, " ") != 0) continue;
    p += list ? 2 : 1;
    const std::optional<int> k = rank_number(line, p);
    if (!k) continue;
    add(*k);
    while (list) {
      size_t q = p;
      bool sep = false;
      for (std::string_view s : {", and ", ", ", " and "}) {
        if (line.compare(q, s.size(), s) == 0) {
          q += s.size();
          sep = true;
          break;
        }
      }
      const std::optional<int> next = sep ? rank_number(line, q) : std::nullopt;
      if (!next) break;
      add(*next);
      p = q;
    }
  }
  return named;
}

// At most this many ranks are named as what a first failure waited for; "and N more" then.
constexpr std::size_t kNamedWaitedFor = 4;

// "a", "a and b", "a, b and c".
std::string and_list(const std::vector<std::string>& items) {
  if (items.size() <= 1) return items.empty() ? "" : items.front();
  return fmt::format("{} and {}",
                     fmt::join(items.begin(), items.end() - 1, ", "), items.back());
}

// describe_failure; with `brief`, a "why" longer than kLongReason is cut to its first words, up
// to the first ':' ("command not found: /opt/venv/bin/python: this host has no ..." -> "command
// not found"), and says where it is in full.
std::string failure_words(const RankOutcome& r, bool brief) {
  std::string status = describe_status(r);
  // A signal's name says what it is; the summary's line under the rank says more.
  std::string why = r.signaled ? r.problem : status_reason(r);
  if (r.exit_status < 0 || why.empty()) return status;
  if (brief && why.size() > kLongReason) {
    const auto colon = why.find(':');
    why = colon != std::string::npos && colon > 0 && colon <= 40 ? why.substr(0, colon) + "; "
                                                                 : std::string();
    why += "in full in the summary";
  }
  return status + ": " + why;
}

}  // namespace

std::string status_reason(const RankOutcome& r) {
  if (r.exit_status <= 0) return "";
  if (!r.problem.empty()) return r.problem;
  if (r.signaled) {
    if (r.ended_by_us) return "";
    // Numbered alike on Linux and macOS (signal_name).
    switch (r.exit_status - 128) {
      case 4:
        return "crashed: illegal instruction (SIGILL; a binary built for another CPU?)";
      case 6:
        return "aborted (SIGABRT): abort(), a failed assertion or an uncaught C++ exception";
      case 8:
        return "crashed: arithmetic error (SIGFPE, e.g. an integer division by zero)";
      case 9:
        return "killed by SIGKILL, not by clusterctl: the kernel's out-of-memory killer "
               "(see `dmesg` on the host) or a kill -9";
      case 11:
        return "crashed: invalid memory access (SIGSEGV)";
      case 15:
        return "ended by SIGTERM, not by clusterctl: another process or the host shutting down";
      default:
        return "";
    }
  }
  // A shell's statuses (the waiter's too, which names the command when it is the one missing:
  // exec_failure).
  if (r.exit_status == 127) return "command not found (a shell's exit 127: its log names it)";
  if (r.exit_status == 126) {
    return "found but not executable (a shell's exit 126: its log names it)";
  }
  return "";
}

std::string describe_status(const RankOutcome& r) {
  if (r.exit_status < 0) return r.problem.empty() ? "unknown" : r.problem;
  if (r.signaled && r.exit_status > 128 && r.exit_status < 128 + 32) {
    return signal_name(r.exit_status - 128);
  }
  if (r.signaled) return "killed by a signal";
  return fmt::format("exit {}", r.exit_status);
}

std::string describe_failure(const RankOutcome& r) {
  return failure_words(r, false);
}

bool peer_loss(std::string_view error_line) {
  std::string line(error_line);
  std::transform(line.begin(), line.end(), line.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // MLX's ring backend ends with "[ring] Too many send/recv errors. Failing pending tasks..."
  // after its "[ring] Receiving from socket 3 failed with errno 104" (or 9, 32) lines.
  for (std::string_view sign :
       {"connection to a peer was lost", "connection reset by peer", "errno 104", "errno=104",
        "econnreset", "broken pipe", "epipe", "errno 32", "peer closed", "closed by peer",
        "closed by the peer", "[ring] receiving from socket", "[ring] sending to socket",
        "too many send/recv errors"}) {
    if (line.find(sign) != std::string::npos) return true;
  }
  return false;
}

int first_cause(const std::vector<RankOutcome>& ranks, int first,
                const std::vector<std::string>& error_lines) {
  auto line = [&](int r) {
    return static_cast<size_t>(r) < error_lines.size() ? error_lines[static_cast<size_t>(r)]
                                                       : std::string();
  };
  if (first < 0 || static_cast<size_t>(first) >= ranks.size() || !peer_loss(line(first))) {
    return first;
  }
  int best = -1;
  for (const RankOutcome& o : ranks) {
    const bool teardown = o.signaled || o.exit_status == 128 + 15 || o.exit_status == 128 + 9;
    if (o.rank == first || o.exit_status <= 0 || teardown || peer_loss(line(o.rank))) continue;
    if (best < 0) {
      best = o.rank;
      continue;
    }
    const RankOutcome& b = ranks[static_cast<size_t>(best)];
    if (o.exited_at && b.exited_at && *o.exited_at < *b.exited_at) best = o.rank;
  }
  return best >= 0 ? best : first;
}

int root_cause(const std::vector<RankOutcome>& ranks, int first,
               const std::vector<std::string>& error_lines) {
  if (first < 0 || static_cast<size_t>(first) >= error_lines.size()) return first;
  for (int k : named_ranks(error_lines[static_cast<size_t>(first)])) {
    if (k == first || k < 0 || static_cast<size_t>(k) >= ranks.size()) continue;
    const RankOutcome& r = ranks[static_cast<size_t>(k)];
    if (r.exit_status <= 0 || r.signaled) continue;  // ended by clusterctl, or no failure
    // Its own error names the first one: which caused which cannot be told; keep the first.
    const auto back = static_cast<size_t>(k) < error_lines.size()
                          ? named_ranks(error_lines[static_cast<size_t>(k)])
                          : std::vector<int>{};
    if (std::find(back.begin(), back.end(), first) != back.end()) continue;
    return k;
  }
  return first;
}

FailureCause failure_cause(const std::vector<RankOutcome>& ranks, int board_first,
                           const std::vector<std::string>& error_lines) {
  FailureCause f;
  if (board_first < 0 || static_cast<size_t>(board_first) >= ranks.size()) return f;
  const int first = f.first = first_cause(ranks, board_first, error_lines);
  f.cause = root_cause(ranks, first, error_lines);
  const RankOutcome& c = ranks[static_cast<size_t>(f.cause)];
  const RankOutcome& r = ranks[static_cast<size_t>(first)];
  for (const bool brief : {false, true}) {
    std::string text =
        fmt::format("rank {} on {} failed ({})", c.rank, c.host, failure_words(c, brief));
    if (f.cause != first) {
      text += fmt::format(
          "; rank {} on {} failed before it ({}), but its error names rank {}: a consequence",
          r.rank, r.host, failure_words(r, brief), c.rank);
    }
    (brief ? f.brief : f.reason) = std::move(text);
  }
  if (f.cause != first) f.consequence = first;
  // The ranks the first failure waited for ("ranks 1, 2 never joined the coordinator", "timed
  // out waiting for rank 2"): still running when it failed, so no failure of their own names
  // them, and the summary blamed only the rank that gave up. Said beside it: a hung rank is
  // found there. During the job (the watcher's view) they are running; after it (the
  // summary's), clusterctl ended them.
  if (f.cause == first && static_cast<size_t>(first) < error_lines.size()) {
    std::vector<std::string> running;
    std::vector<std::string> ended;
    size_t more = 0;
    for (int k : named_ranks(error_lines[static_cast<size_t>(first)])) {
      if (k == first || k < 0 || static_cast<size_t>(k) >= ranks.size()) continue;
      const RankOutcome& o = ranks[static_cast<size_t>(k)];
      const bool is_running = o.started && !o.finished;
      if (!is_running && !(o.finished && o.ended_by_us && o.failed())) continue;
      if (running.size() + ended.size() == kNamedWaitedFor) {
        ++more;
        continue;
      }
      (is_running ? running : ended).push_back(fmt::format("rank {} on {}", o.rank, o.host));
    }
    std::vector<std::string> groups;
    if (!running.empty()) groups.push_back(fmt::format("{}, still running", and_list(running)));
    if (!ended.empty()) {
      groups.push_back(fmt::format("{}, which {} still running until clusterctl ended {}",
                                   and_list(ended), ended.size() == 1 ? "was" : "were",
                                   ended.size() == 1 ? "it" : "them"));
    }
    if (!groups.empty()) {
      const std::string hint = fmt::format(
          "; its error names {}{}: look there first", fmt::join(groups, "; and "),
          more > 0 ? fmt::format(" (and {} more)", more) : "");
      f.reason += hint;
      f.brief += hint;
    }
  }
  return f;
}

std::string job_reason(const JobOutcome& o) {
  if (o.code == util::ExitCode::kOk) return "";
  if (!o.reason.empty()) return o.reason;
  if (o.first_failed >= 0 && static_cast<size_t>(o.first_failed) < o.ranks.size()) {
    const auto& r = o.ranks[static_cast<size_t>(o.first_failed)];
    // "first" only among several ranks: a job of one rank has no other to fail.
    return fmt::format("rank {} on {} failed{} ({})", r.rank, r.host,
                       o.ranks.size() > 1 ? " first" : "", describe_failure(r));
  }
  return "";
}

namespace {

// How a rank's command was looked for, from the waiter's reason (wrapper.h exec_failure):
// "command not found: NAME (looked for in PATH=P)" for a NAME without '/', "command not found:
// NAME (relative to the working directory W)" for a relative path, "command not found: /ABS..."
// for an absolute one; a shell's own 127 (no reason) looked in PATH.
struct NotFound {
  enum class Kind { kNone, kPath, kRelative, kAbsolute };
  Kind kind = Kind::kNone;
  std::string name;  // as the waiter named it ("" for a shell's 127)
  std::string path;  // the PATH it was looked for in ("" when not known)
};

NotFound not_found(const RankOutcome& r) {
  NotFound f;
  if (r.problem.empty() && !r.signaled && r.exit_status == 127) {
    f.kind = NotFound::Kind::kPath;
    return f;
  }
  constexpr std::string_view kNotFound = "command not found: ";
  if (!r.problem.starts_with(kNotFound)) return f;
  const std::string_view rest = std::string_view(r.problem).substr(kNotFound.size());
  f.name = std::string(rest.substr(0, std::min(rest.find(": "), rest.find(" ("))));
  if (f.name.find('/') == std::string::npos) {
    f.kind = NotFound::Kind::kPath;
    constexpr std::string_view kIn = " (looked for in PATH=";
    if (const auto at = rest.find(kIn); at != std::string_view::npos && rest.ends_with(')')) {
      const auto from = at + kIn.size();
      f.path = std::string(rest.substr(from, rest.size() - 1 - from));
    }
  } else {
    f.kind = f.name.starts_with('/') ? NotFound::Kind::kAbsolute : NotFound::Kind::kRelative;
  }
  return f;
}

void add_host(std::vector<std::string>& hosts, const std::string& host) {
  if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
}

// The PATH of `env:` as a shell would have expanded it, for an example: each `$PATH` and
// `${PATH}` in `path` replaced by the usual directories; "" when it holds none, or holds another
// '$' (`$HOME/bin`: only the operator knows what that is on the hosts).
std::string path_example(std::string_view path) {
  constexpr std::string_view kUsual = "/usr/local/bin:/usr/bin:/bin";
  std::string out;
  bool replaced = false;
  for (size_t i = 0; i < path.size();) {
    const std::string_view rest = path.substr(i);
    size_t len = rest.starts_with("${PATH}") ? 7 : 0;
    if (len == 0 && rest.starts_with("$PATH") &&
        (rest.size() == 5 || !(util::is_ascii_alnum(rest[5]) || rest[5] == '_'))) {
      len = 5;  // not $PATHS, another name
    }
    if (len > 0) {
      out += kUsual;
      i += len;
      replaced = true;
    } else {
      out += path[i++];
    }
  }
  return replaced && out.find('$') == std::string::npos ? out : "";
}

}  // namespace

std::string not_found_advice(const JobOutcome& o) {
  std::vector<std::string> path_hosts;      // looked for in PATH, once each
  std::vector<std::string> relative_hosts;  // a relative path, from the working directory
  std::string relative, literal;            // that path; a PATH holding a '$'
  for (const auto& r : o.ranks) {
    const NotFound f = not_found(r);
    if (f.kind == NotFound::Kind::kPath) {
      add_host(path_hosts, r.host);
      if (literal.empty() && f.path.find('$') != std::string::npos) literal = f.path;
    } else if (f.kind == NotFound::Kind::kRelative) {
      add_host(relative_hosts, r.host);
      if (relative.empty()) relative = f.name;
    }
    // An absolute path was looked for nowhere else: its reason says what is missing (a venv).
  }
  std::string out;
  if (!path_hosts.empty() && !literal.empty()) {
    // `env: {PATH: "$PATH:/opt/x/bin"}`: no shell expands it, so the rank's PATH held "$PATH".
    const std::string example = path_example(literal);
    out += fmt::format(
        "to fix: a command not found on {}: the PATH it was looked for in, {}, holds a '$': a "
        "value in the job's `env:` is passed exactly as written (no shell expands `$NAME` in "
        "it); set the whole PATH there instead{}\n",
        fmt::join(path_hosts, ", "), literal,
        example.empty() ? std::string()
                        : fmt::format(" (PATH: \"{}\", with your hosts' own directories)", example));
  } else if (!path_hosts.empty()) {
    out += fmt::format(
        "to fix: a command not found on {}: {}: give the command's absolute path in `command:`, "
        "or set the whole PATH in the job's `env:` (PATH: \"/opt/homebrew/bin:/usr/bin:/bin\"), "
        "or install it there\n",
        fmt::join(path_hosts, ", "), remote::ssh_path_cause());
  }
  if (!relative_hosts.empty()) {
    // PATH is never searched for a name with a '/': the path is taken from the rank's working
    // directory on its host (`command: [../../build/x]` written as from the job file).
    const std::string base = relative.substr(relative.rfind('/') + 1);
    out += fmt::format(
        "to fix: {} was not found on {}: a command given by a relative path is looked for from "
        "the rank's working directory on its host (the job's directory there, or `cwd:`), not "
        "from the job file's directory; give its absolute path on the hosts in `command:`, or "
        "copy it to every host with `upload:` (- {{src: PATH, dest: {}, mode: \"0755\"}}, `src` "
        "relative to the job file; then command: [./{}, ...])\n",
        relative, fmt::join(relative_hosts, ", "), base, base);
  }
  return out;
}

std::string not_executable_advice(const JobOutcome& o) {
  std::vector<std::string> hosts;  // where a rank's command was not executable, once each
  std::string name;                // the waiter's "not executable: NAME: Permission denied"
  constexpr std::string_view kNotExec = "not executable: ";
  for (const auto& r : o.ranks) {
    if (r.signaled || r.exit_status != 126 || !r.problem.starts_with(kNotExec)) continue;
    add_host(hosts, r.host);
    if (name.empty()) {
      const std::string_view rest = std::string_view(r.problem).substr(kNotExec.size());
      name = std::string(rest.substr(0, rest.find(": ")));
    }
  }
  if (hosts.empty()) return "";
  return fmt::format(
      "to fix: {} is not executable on {}: an uploaded file keeps its local mode unless its "
      "`upload:` entry gives one: add mode: \"0755\" to that entry, or `chmod +x` the file (here "
      "before the upload, or on the hosts); a file that is executable there sits on a file "
      "system mounted noexec: run it through its interpreter (command: [sh, {}] for a shell "
      "script)\n",
      name, fmt::join(hosts, ", "), name);
}

std::string interpreter_advice(const JobOutcome& o) {
  // The waiter's reason (wrapper.h exec_failure): "interpreter not found: INTERP, named by the
  // #! line of FILE[ (#!/usr/bin/env, ...)][; that line ends in ...]".
  constexpr std::string_view kPrefix = "interpreter not found: ";
  constexpr std::string_view kNamed = ", named by the #! line of ";
  struct Missing {
    std::string interpreter, script;
    std::vector<std::string> where;  // "h1 (rank 0)"
  };
  std::vector<Missing> missing;  // in rank order of first appearance
  for (const auto& r : o.ranks) {
    if (r.signaled || r.exit_status != 127 || !r.problem.starts_with(kPrefix)) continue;
    const std::string_view rest = std::string_view(r.problem).substr(kPrefix.size());
    const size_t named = rest.find(kNamed);
    if (named == std::string_view::npos) continue;  // an ELF binary's loader: its reason says
    std::string_view script = rest.substr(named + kNamed.size());
    script = script.substr(0, std::min(script.find(" (#!"), script.find("; that line ")));
    Missing m{std::string(rest.substr(0, named)), std::string(script), {}};
    auto it = std::find_if(missing.begin(), missing.end(), [&](const Missing& x) {
      return x.interpreter == m.interpreter && x.script == m.script;
    });
    if (it == missing.end()) it = missing.insert(missing.end(), std::move(m));
    it->where.push_back(fmt::format("{} (rank {})", r.host, r.rank));
  }
  std::string out;
  for (const auto& m : missing) {
    out += fmt::format("to fix: on {}: {}\n", fmt::join(m.where, ", "),
                       remote::missing_interpreter_fix(m.interpreter, m.script));
  }
  return out;
}

namespace {

// The venv README.md's "Python" section makes, and the command that makes it (as the wrapper's
// missing-venv line says it: wrapper.cc).
constexpr std::string_view kVenv = "/opt/clustercomm/venv";
// MLX's CPU backend on Linux is a package of its own.
constexpr std::string_view kMlxOnLinux = " (on Linux: 'mlx[cpu]')";

bool python_name(std::string_view program) {
  const std::string_view base = program.substr(program.rfind('/') + 1);
  return base.starts_with("python") &&
         std::all_of(base.begin() + 6, base.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '.';
         });
}

// A python outside the system's own directories, by an absolute path: a venv's (VENV/bin/python).
std::string venv_of(std::string_view program) {
  if (!program.starts_with('/') || !python_name(program)) return "";
  const std::string_view dir = program.substr(0, program.rfind('/'));
  if (!dir.ends_with("/bin")) return "";
  const std::string_view venv = dir.substr(0, dir.size() - 4);
  for (std::string_view system : {"", "/usr", "/usr/local", "/opt/homebrew", "/opt/local"}) {
    if (venv == system) return "";
  }
  return std::string(venv);
}

}  // namespace

namespace {

// The pip package that provides Python module `module` (top level), where the two names differ
// or a platform needs a variant; else the module's own name. clustercomm is this repository's
// python/ package, installed from a checkout.
std::string pip_package(std::string_view module) {
  static constexpr std::pair<std::string_view, std::string_view> kDiffer[] = {
      {"clustercomm", "./python"}, {"yaml", "PyYAML"},  {"cv2", "opencv-python"},
      {"sklearn", "scikit-learn"}, {"PIL", "Pillow"},   {"attr", "attrs"},
      {"dateutil", "python-dateutil"}};
  for (const auto& [m, p] : kDiffer) {
    if (m == module) return std::string(p);
  }
  return std::string(module);
}

// A Python module's top-level name as ModuleNotFoundError quotes it: an identifier.
bool module_name(std::string_view s) {
  return !s.empty() && !util::is_ascii_digit(s.front()) &&
         std::all_of(s.begin(), s.end(), [](char c) { return util::is_ascii_alnum(c) || c == '_'; });
}

}  // namespace

std::string module_advice(const JobOutcome& o) {
  constexpr std::string_view kMissing = "ModuleNotFoundError: No module named '";
  struct Missing {
    std::string module;              // "clustercomm", "mlx", "numpy", ...
    std::vector<std::string> where;  // "h1 (rank 0)"
  };
  std::vector<Missing> missing;  // in rank order of first appearance
  for (const auto& r : o.ranks) {
    if (!r.failed() || r.signaled) continue;
    const size_t at = r.last_error.find(kMissing);
    if (at == std::string::npos) continue;
    const std::string_view name = std::string_view(r.last_error).substr(at + kMissing.size());
    std::string top(name.substr(0, std::min(name.find('\''), name.find('.'))));
    if (!module_name(top)) continue;
    auto it = std::find_if(missing.begin(), missing.end(),
                           [&](const Missing& m) { return m.module == top; });
    if (it == missing.end()) it = missing.insert(missing.end(), Missing{top, {}});
    it->where.push_back(fmt::format("{} (rank {})", r.host, r.rank));
  }
  // The program the rank ran: argv[0], or a shell script's first word ("python3 x.py").
  std::string program = o.command.empty() ? std::string() : o.command.front();
  if (o.command.size() == 3 && program == "sh" && o.command[1] == "-c") {
    const auto words = util::split_words(o.command[2]);
    program = words.empty() ? std::string() : std::string(words.front());
  }
  const std::string venv = venv_of(program);
  const std::string clusterctl =
      o.global_words.empty() ? std::string("clusterctl") : "clusterctl " + o.global_words;
  std::string out;
  for (const auto& m : missing) {
    // Which interpreter ran: the command's program when it is a python; else the one it ran.
    std::string ran;
    if (!venv.empty()) {
      ran = fmt::format("the interpreter that ran is {}, whose venv {} lacks it", program, venv);
    } else if (python_name(program)) {
      ran = fmt::format(
          "the interpreter that ran is {}{}, a Python without it (not a venv's python)", program,
          program.find('/') == std::string::npos ? " (as the rank's PATH on the host found it)"
                                                 : "");
    } else if (!program.empty()) {
      ran = fmt::format("the Python that `{}` ran lacks it", program);
    } else {
      ran = "the Python that the job's command ran lacks it";
    }
    const bool ours = m.module == "clustercomm";
    const std::string pkg = pip_package(m.module);
    // Where the package comes from: a checkout of clusterctl (ours), MLX's variant on Linux, or
    // the package registry under a name that may not be the module's.
    const std::string note =
        ours ? std::string(" in a checkout of clusterctl on the host (README.md, \"Python\")")
        : m.module == "mlx" ? std::string(kMlxOnLinux)
        : pkg != m.module   ? fmt::format(" (the module '{}' comes in the package '{}')", m.module, pkg)
                            : std::string();
    std::string fix;
    if (!venv.empty()) {
      fix = fmt::format("install it into that venv: `{}/bin/pip install {}`{}", venv, pkg, note);
    } else {
      // Only clustercomm needs the checkout; a venv of anything else is made anywhere.
      fix = fmt::format(
          "make a venv with it{}: {}`python3 -m venv {} && {}/bin/pip install {}`{} (on every "
          "host at once: `{} exec --hosts all --shell -- '...'`; a lab's hosts share this "
          "machine's file system: run it once, here), and give `{}/bin/python` in `command:`",
          ours ? " as README.md, \"Python\", says" : "",
          ours ? "in a checkout of clusterctl on the host, " : "", kVenv, kVenv, pkg,
          ours ? std::string() : note, clusterctl, kVenv);
    }
    out += fmt::format("to fix: on {}: no module named '{}': {}; {}\n", fmt::join(m.where, ", "),
                       m.module, ran, fix);
  }
  return out;
}

std::string render_summary(const JobOutcome& o) {
  std::string out =
      fmt::format("{:>5}  {:<16}  {:<22}  {:>9}  {}\n", "rank", "host", "status", "duration", "");
  // A long reason is printed once, under the first rank that has it; the other ranks refer to
  // it, and so does the verdict (ranks that all failed alike repeated it on every row).
  std::map<std::string, int> printed;  // reason -> the rank it was printed under
  auto reason_line = [&](const RankOutcome& r, const std::string& why) {
    if (why.size() > kLongReason) {
      auto [it, first] = printed.emplace(why, r.rank);
      if (!first) return fmt::format("       same as rank {}\n", it->second);
    }
    return fmt::format("       {}\n", why);
  };
  for (const auto& r : o.ranks) {
    std::string status = describe_status(r);
    std::string note;
    const bool failed_to_start = !r.started && r.exit_status > 0 && !r.problem.empty();
    if (r.rank == o.first_failed) {
      note = o.consequence >= 0   ? "<- the cause (the others' errors name it)"
             : o.ranks.size() > 1 ? "<- failed first"
                                  : "<- failed";
    } else if (r.rank == o.consequence) {
      note = fmt::format("failed first, a consequence: its error names rank {}", o.first_failed);
    } else if (failed_to_start) {
      // Its own failure (a missing cwd), whenever it came: not the teardown's doing. Why is on
      // the line below.
      note = "failed before its command ran";
    } else if (r.stopped) {
      note = "<- was stopped: the others waited for it";
    } else if (r.ended_by_us) {
      // Only a death by signal is surely ours; a rank that exits by itself once teardown has
      // begun may have handled our SIGTERM or failed on its own (a peer gone).
      // One that never started (Ctrl-C kept its session from connecting): its status and
      // the line below say so.
      note = !r.started && r.exit_status < 0       ? ""
             : r.ended_by_launcher && r.signaled ? "ended by mpirun"
             : r.signaled || r.exit_status < 0 ? "ended by clusterctl"
                                               : "exited during teardown";
    } else if (!r.started && r.exit_status != 0) {
      note = "never started";
    }
    // The cell is a word or two ("connection lost"), never a text cut mid-word; the whole of
    // a longer status is on the line below.
    const bool long_status = status.size() > 22;
    out += fmt::format("{:>5}  {:<16}  {:<22}  {:>9}  {}\n", r.rank, r.host,
                       long_status ? status_cell(status) : status, seconds(r.duration), note);
    if (long_status) out += reason_line(r, status);
    // exit 127: "command not found: python3 (...)"; a rank that failed before its command ran:
    // why (a missing cwd).
    if (const std::string why = failed_to_start ? r.problem : status_reason(r); !why.empty()) {
      out += reason_line(r, why);
    }
  }
  size_t ok = 0;
  for (const auto& r : o.ranks) ok += r.exit_status == 0 ? 1 : 0;
  if (o.code == util::ExitCode::kOk) {
    out += fmt::format("job succeeded: {} exited 0 in {}\n",
                       util::plural(o.ranks.size(), "rank", "ranks"), seconds(o.duration));
  } else {
    std::string why = job_reason(o);
    for (const auto& [text, rank] : printed) {  // said above: referred to, not repeated
      if (const auto at = why.find(text); at != std::string::npos) {
        why.replace(at, text.size(), fmt::format("as under rank {} above", rank));
      }
    }
    out += fmt::format("job {}: {}; {}/{} exited 0\n",
                       o.code == util::ExitCode::kInterrupted ? "interrupted" : "failed", why, ok,
                       util::plural(o.ranks.size(), "rank", "ranks"));
  }
  out += not_found_advice(o);
  out += not_executable_advice(o);
  out += interpreter_advice(o);
  out += module_advice(o);
  for (const auto& p : o.cleanup_problems) {
    out += fmt::format("warning: the job directory may remain: {}\n", p);
  }
  return out;
}

}  // namespace cc::launch
