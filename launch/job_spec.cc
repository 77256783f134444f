#include "launch/job_spec.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (moved there in fmt 11)

#include "launch/rank_env.h"
#include "provision/mlx_hostfile.h"
#include "util/address.h"
#include "util/atomic_file.h"
#include "util/interrupt.h"
#include "util/suggest.h"
#include "util/text.h"
#include "util/yaml_reader.h"

namespace cc::launch {
namespace {

namespace fs = std::filesystem;
using util::Field;
using util::YamlReader;

const std::vector<std::string> kJobKeys = {
    "name",     "cluster", "hosts",      "ranks_per_host", "command",
    "cwd",      "env",     "secret_env", "runtime",        "coordinator_port",
    "timeouts", "restart", "logs",       "upload",         "preflight"};
const std::vector<std::string> kCommandKeys = {"shell"};
const std::vector<std::string> kSecretKeys = {"from_env", "from_file"};
const std::vector<std::string> kTimeoutKeys = {"startup", "total", "grace", "stall", "cable"};
const std::vector<std::string> kRestartKeys = {"policy", "max_attempts"};
const std::vector<std::string> kUploadKeys = {"src", "dest", "mode"};

// The first shell variable reference in `s` as a shell would read it, "$NAME" or "${...}"; ""
// for none (a '$' before a digit, a space or the end is no name: "$5", "a$"; "$$" is taken as
// one '$' written twice, as in passwords and in make and compose files, so "pa$$word" has none).
std::string shell_variable(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '$') continue;
    const char next = i + 1 < s.size() ? s[i + 1] : '\0';
    if (next == '$') {
      ++i;
      continue;
    }
    if (next == '{') {
      const size_t close = s.find('}', i);
      return std::string(s.substr(i, close == std::string_view::npos ? s.npos : close + 1 - i));
    }
    if (next != '_' && !(util::is_ascii_alnum(next) && !util::is_ascii_digit(next))) continue;
    size_t end = i + 1;
    while (end < s.size() && (util::is_ascii_alnum(s[end]) || s[end] == '_')) ++end;
    return std::string(s.substr(i, end - i));
  }
  return "";
}

// A relative upload destination that names the job directory itself or a place outside it
// ("..", "a/../../x").
bool escapes_job_dir(const std::string& dest) {
  const fs::path p = fs::path(dest).lexically_normal();
  return p.empty() || p == "." || *p.begin() == "..";
}

constexpr std::size_t kMaxNameLength = 64;
constexpr std::int64_t kMaxRanksPerHost = 1024;
constexpr std::int64_t kDay = 86400;

template <class E>
struct Named {
  std::string_view name;
  E value;
};

constexpr Named<Runtime> kRuntimes[] = {{"clustercomm", Runtime::kClusterComm},
                                        {"mlx-jaccl", Runtime::kMlxJaccl},
                                        {"mlx-jaccl-ring", Runtime::kMlxJacclRing},
                                        {"mlx-ring", Runtime::kMlxRing},
                                        {"mpi", Runtime::kMpi},
                                        {"none", Runtime::kNone}};
constexpr Named<Restart::Policy> kPolicies[] = {{"never", Restart::Policy::kNever},
                                                {"on-failure", Restart::Policy::kOnFailure}};
constexpr Named<Preflight> kPreflights[] = {{"verify-mesh", Preflight::kVerifyMesh},
                                            {"health", Preflight::kHealth},
                                            {"health-quick", Preflight::kHealthQuick}};
constexpr Named<ClusterRef::Kind> kClusterPrefixes[] = {
    {"lab:", ClusterRef::Kind::kLab},
    {"state:", ClusterRef::Kind::kClusterState},
    {"inventory:", ClusterRef::Kind::kInventory},
    {"hostfile:", ClusterRef::Kind::kMlxHostfile}};

template <class E, std::size_t N>
std::string_view name_of(const Named<E> (&table)[N], E value) {
  for (const auto& n : table) {
    if (n.value == value) return n.name;
  }
  return "?";
}

bool is_job_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameLength || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
  });
}

// The absolute directory of `file` ("" or a relative name: the current directory's).
fs::path directory_of(const std::string& file) {
  std::error_code ec;
  fs::path abs = fs::absolute(file.empty() ? fs::path(".") / "job.yaml" : fs::path(file), ec);
  return ec ? fs::path(file).parent_path() : abs.parent_path().lexically_normal();
}

// One parse of one file: the reader (errors with the file name) and the base of local paths.
class Parser {
 public:
  explicit Parser(const std::string& file) : r_(file, "the job"), base_(directory_of(file)) {}

  /// Fills `job` with every entry that parses; returns every mistake (none: `job` is valid).
  std::vector<util::Error> parse(std::string_view text, JobSpec& job);
  /// What parse found questionable but runs ("FILE:LINE:COLUMN: warning: ..."), in file order.
  std::vector<std::string> warnings() const { return warnings_; }

 private:
  // Each reader adds every mistake it finds to errors_ (fail) and goes on with the next entry,
  // returning what parsed: one bad value hides nothing else of the file.
  void fail(util::Error e) { errors_.push_back(std::move(e)); }
  void field(const Field& f, JobSpec& job);
  util::Result<ClusterRef> cluster(const Field& f) const;  // with its place
  util::Result<ClusterRef> cluster_ref(const Field& f) const;
  /// The names, and where each is written (JobSpec::host_places).
  std::vector<std::string> hosts(const Field& f, std::vector<std::pair<int, int>>& places);
  Command command(const Field& f);
  void env(const Field& f, JobSpec& job);
  void secret_env(const Field& f, JobSpec& job);
  Timeouts timeouts(const Field& f);
  Restart restart(const Field& f);
  std::vector<Upload> upload(const Field& f);
  std::vector<Preflight> preflight(const Field& f);
  util::Result<fs::path> local_path(const Field& f) const;
  util::Status remote_path(const Field& f, const std::string& path) const;
  util::Result<fs::path> resolve(const Field& f, const std::string& path) const;
  void env_name(const Field& f, std::string_view section);
  void env_value(const Field& f, const std::string& value);
  void command_word(const Field& item, const std::vector<std::string>& before,
                    const std::string& arg);
  template <class E, std::size_t N>
  util::Result<E> choice(const Field& f, const Named<E> (&table)[N], std::string_view what) const;

  YamlReader r_;
  fs::path base_;
  std::vector<util::Error> errors_;
  std::vector<std::string> warnings_;
  std::optional<YAML::Mark> cluster_, hosts_;  // where each was given
  std::optional<YAML::Mark> runtime_, ranks_;   // where runtime's, ranks_per_host's values are
  /// The checks between entries (runtime against cluster or hosts, and ranks_per_host), each
  /// at the place of the entry that must change, naming the other's line.
  void combinations(const JobSpec& job, std::vector<util::Error>& out) const;
  void combination_errors(const JobSpec& job, std::vector<util::Error>& errors) const;
  std::map<std::string, YAML::Mark> env_marks_;
  std::vector<Field> secret_fields_;
};

template <class E, std::size_t N>
util::Result<E> Parser::choice(const Field& f, const Named<E> (&table)[N],
                               std::string_view what) const {
  auto s = r_.string(f);
  if (!s) return s.error();
  std::vector<std::string> names;
  for (const auto& n : table) {
    if (n.name == *s) return n.value;
    names.emplace_back(n.name);
  }
  return r_.error(f.mark(), fmt::format("{} '{}' is not one of {}{}", what, *s,
                                        fmt::join(names, ", "), util::did_you_mean(*s, names)));
}

util::Result<fs::path> Parser::local_path(const Field& f) const {
  auto s = r_.nonempty_string(f);
  if (!s) return s.error();
  return resolve(f, *s);
}

// `path` (written in `f`) made absolute against the job file's directory.
util::Result<fs::path> Parser::resolve(const Field& f, const std::string& path) const {
  if (path.front() == '~') {
    return r_.error(f.mark(), fmt::format("'{}': '~' is not expanded here: write the full path "
                                          "or one relative to the job file",
                                          f.path));
  }
  fs::path p(path);
  return (p.is_absolute() ? p : base_ / p).lexically_normal();
}

// A path on the hosts (`cwd`, an upload's `dest`) reaches them as it is written: no shell
// expands a leading ~ or a $NAME in it (`cwd: ~/work` was ./~/work inside the job directory,
// and failed every rank only once the job had started).
util::Status Parser::remote_path(const Field& f, const std::string& path) const {
  const bool var = !shell_variable(path).empty();
  if (path.front() != '~' && !var) return {};
  return r_.error(f.mark(), fmt::format("'{}': '{}' is not expanded on the hosts (no shell reads "
                                        "this path): write the full path, or one relative to "
                                        "the job's directory",
                                        f.path, path.front() == '~' ? "~" : "$"));
}

// The check an MLX hostfile's envs get too (rank_env.h: env_name_problem), and the warning they
// get too for a CLUSTERCOMM_* name libclustercomm does not read (unread_clustercomm_name; a
// warning, not an error: the job runs as it would without the variable).
void Parser::env_name(const Field& f, std::string_view section) {
  auto p = env_name_problem(f.key);
  if (!p) {
    if (auto unread = unread_clustercomm_name(f.key)) {
      warnings_.push_back(fmt::format("{}:{}:{}: warning: {} {}: {}", r_.file(),
                                      f.key_mark.line + 1, f.key_mark.column + 1, section, f.key,
                                      *unread));
    }
    return;
  }
  const char* fix = *p == EnvNameProblem::kSetByLaunch  ? ": remove it from the job"
                    : *p == EnvNameProblem::kWrapperOwn ? ": rename it"
                                                        : "";
  fail(r_.error(f.key_mark, fmt::format("{} name {}{}", section, describe(*p, f.key), fix)));
}

util::Result<ClusterRef> Parser::cluster(const Field& f) const {
  auto ref = cluster_ref(f);
  if (ref) {
    ref->line = f.mark().line + 1;
    ref->column = f.mark().column + 1;
    ref->written = f.value.Scalar();
  }
  return ref;
}

util::Result<ClusterRef> Parser::cluster_ref(const Field& f) const {
  auto s = r_.nonempty_string(f);
  if (!s) return s.error();
  for (const auto& [prefix, kind] : kClusterPrefixes) {
    if (!s->starts_with(prefix)) continue;
    const std::string rest = s->substr(prefix.size());
    if (rest.empty()) {
      return r_.error(f.mark(), fmt::format("'cluster': nothing after '{}'", prefix));
    }
    if (kind == ClusterRef::Kind::kLab) return ClusterRef{kind, rest};
    auto p = resolve(f, rest);
    if (!p) return p.error();
    return ClusterRef{kind, p->string()};
  }
  const std::string ext = fs::path(*s).extension().string();
  ClusterRef::Kind kind = ClusterRef::Kind::kClusterState;
  if (ext == ".yaml" || ext == ".yml") {
    kind = ClusterRef::Kind::kInventory;
  } else if (ext != ".json") {
    // A typo of a file beside it ("cluster.jsn") is named, as one of a known kind would be.
    std::string close;
    if (s->front() != '~') close = util::did_you_mean_file(base_ / *s, *s);
    return r_.error(f.mark(), fmt::format("'cluster': cannot tell what '{}' is{}: give a cluster "
                                          "state (.json, from discover -o), an inventory "
                                          "(.yaml), lab:NAME, hostfile:PATH (an MLX hostfile), "
                                          "state:PATH or inventory:PATH",
                                          *s, close));
  }
  auto p = resolve(f, *s);
  if (!p) return p.error();
  return ClusterRef{kind, p->string()};
}

std::vector<std::string> Parser::hosts(const Field& f, std::vector<std::pair<int, int>>& places) {
  auto items = r_.list(f, "a list of strings");
  if (!items) {
    fail(items.error());
    return std::vector<std::string>{};
  }
  if (items->empty()) fail(r_.error(f.mark(), "'hosts' is empty: name at least one host"));
  std::vector<std::string> out;
  for (const Field& item : *items) {
    auto h = r_.nonempty_string(item);
    if (!h) {
      fail(h.error());
      continue;
    }
    // One host under two spellings ("Studio1", "studio1.") is still one host.
    auto same = std::find_if(out.begin(), out.end(), [&](const std::string& o) {
      return util::host_key(o) == util::host_key(*h);
    });
    if (same != out.end()) {
      const std::string as =
          *same == *h ? std::string()
                      : fmt::format(", as '{}' too{}", *same, util::same_host_note(*same, *h));
      fail(r_.error(item.mark(), fmt::format("host '{}' appears twice in 'hosts'{}: use "
                                             "ranks_per_host for more ranks on a host",
                                             *h, as)));
      continue;
    }
    out.push_back(std::move(*h));
    places.emplace_back(item.mark().line + 1, item.mark().column + 1);
  }
  return out;
}

// `command: uname -n` (a single value) written as the two forms a command takes, each in YAML
// as yaml-cpp's emitter quotes it: ": write `command: [uname, -n]` (...) or `command: {shell:
// \"uname -n\"}` (...)"; "" for a value of no words.
std::string command_forms(const std::string& text) {
  const auto words = util::split_words(text);
  if (words.empty()) return "";
  YAML::Emitter argv;
  argv << YAML::Flow << YAML::BeginSeq;
  for (std::string_view w : words) argv << std::string(w);
  argv << YAML::EndSeq;
  YAML::Emitter shell;
  shell << YAML::Flow << YAML::BeginMap << YAML::Key << "shell" << YAML::Value
        << YAML::DoubleQuoted << text << YAML::EndMap;
  return fmt::format(": write `command: {}` (the program and its arguments, run without a "
                     "shell) or `command: {}` (a line for sh to run)",
                     argv.c_str(), shell.c_str());
}

Command Parser::command(const Field& f) {
  Command c;
  if (f.value.IsSequence()) {
    auto items = r_.list(f, "a list of strings");
    if (!items) {
      fail(items.error());
      return c;
    }
    if (items->empty()) {
      fail(r_.error(f.mark(),
                    "'command' is empty: give the program and its arguments, "
                    "e.g. [python3, train.py]"));
      return c;
    }
    for (const Field& item : *items) {
      auto arg = r_.string(item);
      if (!arg) {
        fail(arg.error());
        c.argv.emplace_back();
        continue;
      }
      if (&item == &items->front() && arg->empty()) {
        fail(r_.error(item.mark(), "'command[0]' is empty: it names the program"));
      }
      command_word(item, c.argv, *arg);
      c.argv.push_back(std::move(*arg));
    }
    return c;
  }
  if (!f.value.IsMap()) {
    fail(r_.error(f.mark(), fmt::format("'command': expected a list of strings (argv) or a "
                                        "mapping {{shell: \"script\"}}, got {}{}",
                                        YamlReader::kind(f.value),
                                        f.value.IsScalar() ? command_forms(f.value.Scalar())
                                                           : std::string())));
    return c;
  }
  const std::size_t before = errors_.size();
  auto fields = r_.mapping(f, kCommandKeys, errors_);
  if (!fields) {
    fail(fields.error());
    return c;
  }
  if (fields->empty()) {
    // A bad key (said above) may be the misspelt 'shell'.
    if (errors_.size() == before) {
      fail(r_.error(f.mark(), "'command' has no 'shell': the script to run"));
    }
    return c;
  }
  auto script = r_.string(fields->front());
  if (!script) {
    fail(script.error());
    return c;
  }
  if (script->find_first_not_of(" \t\r\n") == std::string::npos) {
    fail(r_.error(fields->front().mark(), "'command.shell' is empty"));
    return c;
  }
  c.shell = std::move(*script);
  return c;
}

// An env value is passed as written (README, "job.yaml"), but one holding `$NAME` or `${NAME}`
// was most likely written for a shell (`PATH: "$PATH:/opt/x/bin"` ran every rank with that text
// as its PATH, and failed them all with "looked for in PATH=$PATH:/opt/x/bin"). A warning, not
// an error: a '$' is also a character of passwords, regular expressions and templates that the
// program expands itself. The value of a variable whose name looks secret is never shown.
void Parser::env_value(const Field& f, const std::string& value) {
  const std::string var = shell_variable(value);
  if (var.empty()) return;
  const YAML::Mark m = f.mark();
  const std::string at = fmt::format("{}:{}:{}", r_.file(), m.line + 1, m.column + 1);
  if (util::looks_secret(f.key)) {
    warnings_.push_back(fmt::format(
        "{}: warning: env {}: its value holds a '$' before a name, which no shell expands: the "
        "ranks get it exactly as written (the value is not shown: the name looks secret). If "
        "that is meant, nothing to do; else write the whole value. A secret is safer in "
        "`secret_env:` (never printed, logged or on a command line)",
        at, f.key));
    return;
  }
  std::string instead = fmt::format("write the whole value, with what {} is on the hosts in its "
                                    "place",
                                    var);
  if (f.key == "PATH" && (var == "$PATH" || var == "${PATH}")) {
    std::string whole = value;
    whole.replace(whole.find(var), var.size(), "/usr/local/bin:/usr/bin:/bin");
    if (shell_variable(whole).empty()) {
      instead = fmt::format("write the whole PATH, e.g. PATH: \"{}\" (with your hosts' own "
                            "directories)",
                            whole);
    } else {
      instead = "write the whole PATH, every directory of it";
    }
  }
  warnings_.push_back(fmt::format(
      "{}: warning: env {}: \"{}\" reaches the ranks exactly as written: values are literal, no "
      "shell expands {} in them; {}",
      at, f.key, value, var, instead));
}

// Whether the next word of a list command, after `before`, is a script a shell reads: the word
// after `-c` (or `-ec`, `-lc`, ...) of sh, bash, dash, zsh, ksh, ash or mksh, itself perhaps
// after `env` and its NAME=VALUE words (`[bash, -c, "cd $HOME && ./train"]`): a shell expands it.
bool shell_script_next(const std::vector<std::string>& before) {
  static const std::set<std::string_view> kShells = {"sh",  "bash", "dash", "zsh",
                                                     "ksh", "ash",  "mksh"};
  std::size_t i = 0;
  if (i < before.size() && fs::path(before[i]).filename() == "env") {
    ++i;
    while (i < before.size() &&
           (before[i].starts_with('-') || before[i].find('=') != before[i].npos)) {
      ++i;
    }
  }
  if (i >= before.size() || !kShells.contains(fs::path(before[i]).filename().string())) {
    return false;
  }
  for (++i; i < before.size(); ++i) {
    const std::string& w = before[i];
    if (!w.starts_with('-') || w.starts_with("--")) return false;  // an operand: a script file
    if (i + 1 == before.size()) return w.find('c') != std::string::npos;
  }
  return false;
}

// A list command is exec'd without a shell, so `[./train, --data, $HOME/data]` gave the program
// the text "$HOME/data" (and `~/data` the text "~/data"), silently. A warning, as for an env
// value (env_value: the same reading of "$NAME"), and the command still runs as written: a '$'
// may be meant (a pattern or template the program expands itself); a shell's `-c` script is
// expanded by that shell, so it draws none.
void Parser::command_word(const Field& item, const std::vector<std::string>& before,
                          const std::string& arg) {
  std::string word = shell_variable(arg);
  if (word.empty() && (arg == "~" || arg.starts_with("~/"))) word = "~";
  if (word.empty() || shell_script_next(before)) return;
  const YAML::Mark m = item.mark();
  warnings_.push_back(fmt::format(
      "{}:{}:{}: warning: command[{}]: \"{}\" reaches the program exactly as written: a list "
      "command runs without a shell, so nothing expands {} in it; write the path out (what {} "
      "is on the hosts), or use `command: {{shell: \"...\"}}` for sh to expand it",
      r_.file(), m.line + 1, m.column + 1, before.size(), arg, word, word));
}

void Parser::env(const Field& f, JobSpec& job) {
  auto entries = r_.any_mapping(f);
  if (!entries) return fail(entries.error());
  std::size_t bytes = 0, n = 0;  // NAME=VALUE and its NUL, as exec counts them
  for (const Field& e : *entries) {
    if (++n % YamlReader::kInterruptCheckEvery == 0 && util::interrupted()) {
      return fail(util::interrupted_error(fmt::format(" while reading {}", r_.file())));
    }
    env_name(e, "env");
    if (e.value.IsNull()) {
      fail(r_.error(e.mark(), fmt::format("'{}' has no value: write {}: \"\" for an empty one",
                                          e.path, e.key)));
      continue;
    }
    auto v = r_.string(e);
    if (!v) {
      fail(v.error());
      continue;
    }
    bytes += e.key.size() + 1 + v->size() + 1;
    if (e.key.size() + 1 + v->size() > provision::kMaxEnvEntryBytes) {
      if (auto why = provision::env_entry_problem(e.key + "=" + *v)) {
        fail(r_.error(e.mark(), "env: " + *why));
        continue;
      }
    }
    if (auto big = provision::env_size_problem(bytes, n)) {
      // One line, and the rest not looked at: the job cannot run with this env whatever it holds.
      fail(r_.error(e.key_mark, fmt::format("env {}: {}", e.key, *big)));
      break;
    }
    env_value(e, *v);
    env_marks_[e.key] = e.key_mark;
    job.env[e.key] = std::move(*v);
  }
}

void Parser::secret_env(const Field& f, JobSpec& job) {
  auto entries = r_.any_mapping(f);
  if (!entries) return fail(entries.error());
  for (const Field& e : *entries) {
    env_name(e, "secret_env");
    const std::size_t before = errors_.size();
    auto source = r_.mapping(e, kSecretKeys, errors_);
    if (!source) {
      fail(source.error());
      continue;
    }
    if (source->empty() && errors_.size() != before) continue;  // a bad key: said above
    if (source->size() != 1) {
      fail(r_.error(e.mark(), fmt::format("'{}': give exactly one of from_env: VAR and "
                                          "from_file: PATH",
                                          e.path)));
      continue;
    }
    const Field& from = source->front();
    SecretSource s;
    if (from.key == "from_env") {
      auto var = r_.nonempty_string(from);
      if (!var) {
        fail(var.error());
        continue;
      }
      if (!util::is_env_name(*var)) {
        fail(r_.error(from.mark(), fmt::format("'{}': '{}' is not a valid environment "
                                               "variable name",
                                               from.path, *var)));
        continue;
      }
      s = SecretSource{SecretSource::Kind::kEnv, std::move(*var)};
    } else {
      auto p = local_path(from);
      if (!p) {
        fail(p.error());
        continue;
      }
      s = SecretSource{SecretSource::Kind::kFile, p->string()};
    }
    s.line = from.mark().line + 1;
    s.column = from.mark().column + 1;
    secret_fields_.push_back(e);
    // A bad name is reported above; its source is still checked (launch::local_problems).
    job.secret_env[e.key] = std::move(s);
  }
}

Timeouts Parser::timeouts(const Field& f) {
  Timeouts t;
  auto fields = r_.mapping(f, kTimeoutKeys, errors_);
  if (!fields) {
    fail(fields.error());
    return t;
  }
  for (const Field& e : *fields) {
    const bool grace = e.key == "grace", total = e.key == "total", cable = e.key == "cable";
    const std::int64_t min = (e.key == "startup" || grace || cable) ? 1 : 0;
    const std::int64_t max = total ? 365 * kDay : (grace || cable) ? 3600 : kDay;
    auto v = r_.integer(e, min, max, "a whole number of seconds");
    if (!v) {
      fail(v.error());
      continue;
    }
    std::chrono::seconds s{*v};
    (e.key == "startup" ? t.startup
     : total            ? t.total
     : grace            ? t.grace
     : cable            ? t.cable
                        : t.stall) = s;
  }
  return t;
}

Restart Parser::restart(const Field& f) {
  Restart r;
  if (f.value.IsScalar()) {
    auto p = choice(f, kPolicies, "restart policy");
    if (!p) {
      fail(p.error());
      return r;
    }
    r.policy = *p;
    r.max_attempts = r.policy == Restart::Policy::kOnFailure ? 3 : 1;
    return r;
  }
  if (!f.value.IsMap()) {
    fail(r_.error(f.mark(), fmt::format("'restart': expected never, on-failure or "
                                        "{{policy: on-failure, max_attempts: N}}, got {}",
                                        YamlReader::kind(f.value))));
    return r;
  }
  const std::size_t before = errors_.size();
  auto fields = r_.mapping(f, kRestartKeys, errors_);
  if (!fields) {
    fail(fields.error());
    return r;
  }
  const bool bad_key = errors_.size() != before;  // it may be the misspelt 'policy'
  const Field* policy = nullptr;
  const Field* attempts = nullptr;
  for (const Field& e : *fields) (e.key == "policy" ? policy : attempts) = &e;
  std::optional<Restart::Policy> p;
  if (policy == nullptr && !bad_key) {
    fail(r_.error(f.mark(), "'restart' has no 'policy' (never, on-failure)"));
  } else if (policy == nullptr) {
    // the bad key is said above
  } else if (auto c = choice(*policy, kPolicies, "restart policy"); c) {
    p = *c;
  } else {
    fail(c.error());
  }
  r.policy = p.value_or(Restart::Policy::kNever);
  r.max_attempts = r.policy == Restart::Policy::kOnFailure ? 3 : 1;
  if (attempts != nullptr) {
    // Checked on its own; whether it applies needs a policy that parsed.
    auto n = r_.integer(*attempts, 1, 100);
    if (!n) {
      fail(n.error());
    } else if (p == Restart::Policy::kNever) {
      fail(
          r_.error(attempts->key_mark, "'restart.max_attempts' applies only to policy on-failure"));
    } else {
      r.max_attempts = static_cast<int>(*n);
    }
  }
  return r;
}

// Every entry and every field of each is checked on its own: a bad `dest:` hides neither
// another entry's problems nor its own `src:`, which launch::local_problems then checks.
std::vector<Upload> Parser::upload(const Field& f) {
  std::vector<Upload> out;
  auto items = r_.list(f, "a list of {src, dest, mode} entries");
  if (!items) {
    fail(items.error());
    return out;
  }
  for (const Field& item : *items) {
    const std::size_t before = errors_.size();
    auto fields = r_.mapping(item, kUploadKeys, errors_);
    if (!fields) {
      fail(fields.error());
      continue;
    }
    const bool bad_key = errors_.size() != before;  // it may be a misspelt 'src'
    Upload u;
    u.line = item.mark().line + 1;
    u.column = item.mark().column + 1;
    bool has_src = false, src_ok = false;
    for (const Field& e : *fields) {
      if (e.key == "src") {
        has_src = true;
        auto p = local_path(e);
        if (!p) {
          fail(p.error());
          continue;
        }
        u.src = std::move(*p);
        src_ok = true;
      } else if (e.key == "dest") {
        auto d = r_.nonempty_string(e);
        if (!d) {
          fail(d.error());
          continue;
        }
        if (auto bad = remote_path(e, *d); !bad) {
          fail(bad.error());
          continue;
        }
        if (!d->starts_with('/') && escapes_job_dir(*d)) {
          fail(r_.error(e.mark(), fmt::format("'{}': '{}' leaves the job directory: give a "
                                              "path inside it, or an absolute path",
                                              e.path, *d)));
          continue;
        }
        u.dest = std::move(*d);
      } else {
        auto m = r_.string(e);
        if (!m) {
          fail(m.error());
          continue;
        }
        const bool octal =
            (m->size() == 3 || m->size() == 4) &&
            std::all_of(m->begin(), m->end(), [](char c) { return c >= '0' && c <= '7'; });
        if (!octal) {
          fail(r_.error(e.mark(), fmt::format("'{}': expected an octal mode like \"0755\", "
                                              "got '{}'",
                                              e.path, *m)));
          continue;
        }
        u.mode = static_cast<unsigned>(std::stoul(*m, nullptr, 8));
      }
    }
    if (!has_src && !bad_key) {
      fail(r_.error(item.mark(),
                    fmt::format("'{}' has no 'src': the local file to copy", item.path)));
    }
    if (!src_ok) continue;
    if (u.dest.empty()) u.dest = u.src.filename().string();
    out.push_back(std::move(u));
  }
  return out;
}

std::vector<Preflight> Parser::preflight(const Field& f) {
  std::vector<Preflight> out;
  auto items = r_.list(f, "a list of checks (verify-mesh, health, health-quick)");
  if (!items) {
    fail(items.error());
    return out;
  }
  for (const Field& item : *items) {
    auto p = choice(item, kPreflights, "preflight check");
    if (!p) {
      fail(p.error());
      continue;
    }
    if (std::find(out.begin(), out.end(), *p) != out.end()) {
      fail(r_.error(item.mark(),
                    fmt::format("preflight check '{}' appears twice", name_of(kPreflights, *p))));
      continue;
    }
    out.push_back(*p);
  }
  return out;
}

void Parser::field(const Field& f, JobSpec& job) {
  const std::string& k = f.key;
  // A single value: its error, or it is stored.
  auto one = [&](auto result, auto store) {
    if (result) {
      store(std::move(*result));
    } else {
      fail(result.error());
    }
  };
  if (k == "name") {
    auto s = r_.string(f);
    if (s && !is_job_name(*s)) {
      fail(r_.error(f.mark(), fmt::format("name '{}' is not valid: use 1 to {} letters, "
                                          "digits, '_', '.' and '-'",
                                          *s, kMaxNameLength)));
      return;
    }
    one(std::move(s), [&](std::string v) { job.name = std::move(v); });
  } else if (k == "cluster" || k == "hosts") {
    (k == "cluster" ? cluster_ : hosts_) = f.key_mark;
    if (cluster_ && hosts_) {
      const bool second_is_cluster = k == "cluster";
      fail(r_.error(f.key_mark, fmt::format("'{}' and '{}' (line {}) are both given: keep "
                                            "one, they both say where the job runs",
                                            k, second_is_cluster ? "hosts" : "cluster",
                                            (second_is_cluster ? *hosts_ : *cluster_).line + 1)));
    }
    if (k == "cluster") {
      one(cluster(f), [&](ClusterRef c) { job.cluster = std::move(c); });
    } else {
      job.hosts = hosts(f, job.host_places);
    }
  } else if (k == "ranks_per_host") {
    ranks_ = f.mark();
    one(r_.integer(f, 1, kMaxRanksPerHost),
        [&](std::int64_t n) { job.ranks_per_host = static_cast<int>(n); });
  } else if (k == "command") {
    job.command = command(f);
  } else if (k == "cwd" || k == "logs") {
    auto s = r_.nonempty_string(f);
    if (s && k == "cwd") {
      if (auto bad = remote_path(f, *s); !bad) {
        fail(bad.error());
        return;
      }
    }
    one(std::move(s), [&](std::string v) {
      if (k == "cwd") {
        job.cwd = std::move(v);
        job.cwd_line = f.mark().line + 1;
        job.cwd_column = f.mark().column + 1;
      } else {
        job.logs = std::move(v);
      }
    });
  } else if (k == "env") {
    env(f, job);
  } else if (k == "secret_env") {
    secret_env(f, job);
  } else if (k == "runtime") {
    runtime_ = f.mark();
    one(choice(f, kRuntimes, "runtime"), [&](Runtime rt) { job.runtime = rt; });
  } else if (k == "coordinator_port") {
    one(r_.integer(f, 1, 65535, "a TCP port"),
        [&](std::int64_t port) { job.coordinator_port = static_cast<int>(port); });
  } else if (k == "timeouts") {
    job.timeouts = timeouts(f);
  } else if (k == "restart") {
    job.restart = restart(f);
  } else if (k == "upload") {
    job.upload = upload(f);
  } else {
    job.preflight = preflight(f);
  }
}

std::vector<util::Error> Parser::parse(std::string_view text, JobSpec& job) {
  auto doc = r_.load(text);
  if (!doc) return {doc.error()};
  const YAML::Mark start;  // line 1, column 1
  if (doc->IsNull()) {
    return {r_.error(start,
                     "the job file is empty: a job needs at least name, command, and "
                     "cluster or hosts")};
  }
  if (!doc->IsMap()) {
    return {r_.error(doc->Mark(), fmt::format("expected a mapping of job settings (name: ..., "
                                              "command: ...), got {}",
                                              YamlReader::kind(*doc)))};
  }
  // Every mistake is reported, not just the first: each entry, at every level, is checked on
  // its own, then what is missing.
  auto fields = r_.mapping(YamlReader::root(*doc), kJobKeys, errors_);
  if (!fields) return {fields.error()};

  bool has_command = false, has_name = false;
  for (const Field& f : *fields) {
    field(f, job);
    has_command = has_command || f.key == "command";
    has_name = has_name || f.key == "name";
  }
  std::vector<util::Error> errors = r_.in_file_order(std::move(errors_));
  if (!has_name) {
    errors.push_back(r_.error(doc->Mark(),
                              "missing 'name': every job needs one (letters, digits, '_', "
                              "'.', '-')"));
  }
  if (!has_command) {
    errors.push_back(r_.error(doc->Mark(),
                              "missing 'command': what each rank runs, a list like "
                              "[python3, train.py] or {shell: \"...\"}"));
  }
  if (!cluster_ && !hosts_) {
    errors.push_back(r_.error(doc->Mark(),
                              "missing 'cluster' or 'hosts': where the job runs (cluster: "
                              "cluster.json, cluster: lab:NAME, or hosts: [h1, h2])"));
  }
  for (const Field& s : secret_fields_) {
    auto e = env_marks_.find(s.key);
    if (e != env_marks_.end()) {
      errors.push_back(r_.error(s.key_mark, fmt::format("'{}' is also set in env (line {}): keep "
                                                        "one",
                                                        s.path, e->second.line + 1)));
    }
  }
  combinations(job, errors);
  if (job.logs.empty() && !job.name.empty()) job.logs = "logs/" + job.name;
  return errors;
}

void Parser::combinations(const JobSpec& job, std::vector<util::Error>& out) const {
  std::vector<util::Error> errors;
  combination_errors(job, errors);
  errors = r_.in_file_order(std::move(errors));
  out.insert(out.end(), errors.begin(), errors.end());
}

void Parser::combination_errors(const JobSpec& job, std::vector<util::Error>& errors) const {
  if (!is_mlx(job.runtime) || !runtime_) return;
  const std::string rt(to_string(job.runtime));
  // The ranks' addresses and devices come from an MLX hostfile or a cluster state: a lab, an
  // inventory or a `hosts:` list has neither. (A `cluster:` that did not parse is said above.)
  const bool has_matrix = job.cluster && (job.cluster->kind == ClusterRef::Kind::kMlxHostfile ||
                                          job.cluster->kind == ClusterRef::Kind::kClusterState);
  if (!has_matrix && (hosts_ || job.cluster)) {
    const std::string given =
        hosts_ ? fmt::format("`hosts:` (line {}) lists hosts only", hosts_->line + 1)
               : fmt::format("`cluster: {}` (line {}) is {} {}", job.cluster->as_written(),
                             cluster_->line + 1,
                             job.cluster->kind == ClusterRef::Kind::kLab ? "a" : "an",
                             to_string(job.cluster->kind));
    errors.push_back(r_.error(
        *runtime_,
        fmt::format("runtime {} needs an MLX hostfile or a cluster state, and {}: write "
                    "`cluster: hostfile:FILE` (`clusterctl hostfile --format {} -o FILE` writes "
                    "one) or `cluster: cluster.json` (`clusterctl discover -o cluster.json`): "
                    "the ranks' addresses and devices come from it",
                    rt, given, rt)));
  }
  if (job.ranks_per_host != 1 && ranks_) {
    errors.push_back(r_.error(*ranks_, fmt::format("ranks_per_host: {}: runtime {} (line {}) "
                                                   "runs one rank per host, as mlx.launch "
                                                   "does: set ranks_per_host: 1",
                                                   job.ranks_per_host, rt, runtime_->line + 1)));
  }
}

}  // namespace

JobSpecDraft parse_job_spec_draft(std::string_view yaml_text, const std::string& source_path) {
  JobSpecDraft d;
  d.job.source = source_path;
  if (yaml_text.size() > kMaxJobFileBytes) {
    d.errors.push_back(util::error(
        util::ExitCode::kUsage,
        fmt::format("{}: is {} bytes, more than the {} bytes (8 MiB) of a job file: a job's env "
                    "and command reach its ranks through exec, which takes at most a few MiB of "
                    "them (README, \"job.yaml\"); pass large data in a file (`upload:`)",
                    source_path, yaml_text.size(), kMaxJobFileBytes)));
    return d;
  }
  Parser parser(source_path);
  d.errors = parser.parse(yaml_text, d.job);
  d.warnings = parser.warnings();
  d.job.source = source_path;
  return d;
}

util::Result<JobSpec> parse_job_spec(std::string_view yaml_text, const std::string& source_path) {
  JobSpecDraft d = parse_job_spec_draft(yaml_text, source_path);
  if (!d.errors.empty()) return YamlReader::all(d.errors);
  return std::move(d.job);
}

util::Result<JobSpec> load_job_spec(const std::filesystem::path& path) {
  auto text = util::read_file(path);
  if (!text) return text.error();
  return parse_job_spec(*text, path.string());
}

std::string ClusterRef::as_written() const {
  if (!written.empty()) return written;
  if (kind == Kind::kLab) return "lab:" + value;
  if (kind == Kind::kMlxHostfile) return "hostfile:" + value;
  return value;
}

std::string job_file_at(const JobSpec& spec, int line, int column) {
  return line > 0 ? fmt::format("{}:{}:{}", spec.source.string(), line, column)
                  : spec.source.string();
}

std::string_view to_string(Runtime r) {
  return name_of(kRuntimes, r);
}

bool is_mlx(Runtime r) {
  return r == Runtime::kMlxJaccl || r == Runtime::kMlxJacclRing || r == Runtime::kMlxRing;
}

std::string_view to_string(ClusterRef::Kind k) {
  switch (k) {
    case ClusterRef::Kind::kClusterState:
      return "cluster state";
    case ClusterRef::Kind::kInventory:
      return "inventory";
    case ClusterRef::Kind::kLab:
      return "lab";
    case ClusterRef::Kind::kMlxHostfile:
      return "MLX hostfile";
  }
  return "?";
}

std::string_view to_string(Restart::Policy p) {
  return name_of(kPolicies, p);
}

std::string_view to_string(Preflight p) {
  return name_of(kPreflights, p);
}

}  // namespace cc::launch
