#include "launch/job_spec.h"

#include <algorithm>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (moved there in fmt 11)

#include "launch/rank_env.h"
#include "util/address.h"
#include "util/atomic_file.h"
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
const std::vector<std::string> kTimeoutKeys = {"startup", "total", "grace", "stall"};
const std::vector<std::string> kRestartKeys = {"policy", "max_attempts"};
const std::vector<std::string> kUploadKeys = {"src", "dest", "mode"};

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

 private:
  util::Status field(const Field& f, JobSpec& job);
  util::Result<ClusterRef> cluster(const Field& f) const;
  util::Result<std::vector<std::string>> hosts(const Field& f) const;
  util::Result<Command> command(const Field& f) const;
  util::Status env(const Field& f, JobSpec& job);
  util::Status secret_env(const Field& f, JobSpec& job);
  util::Result<Timeouts> timeouts(const Field& f) const;
  util::Result<Restart> restart(const Field& f) const;
  util::Result<std::vector<Upload>> upload(const Field& f) const;
  util::Result<std::vector<Preflight>> preflight(const Field& f) const;
  util::Result<fs::path> local_path(const Field& f) const;
  util::Status remote_path(const Field& f, const std::string& path) const;
  util::Result<fs::path> resolve(const Field& f, const std::string& path) const;
  util::Status env_name(const Field& f, std::string_view section) const;
  template <class E, std::size_t N>
  util::Result<E> choice(const Field& f, const Named<E> (&table)[N], std::string_view what) const;

  YamlReader r_;
  fs::path base_;
  std::optional<YAML::Mark> cluster_, hosts_;  // where each was given
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
  bool var = false;  // a '$' before a name or a '{'
  for (size_t i = path.find('$'); i != std::string::npos && !var; i = path.find('$', i + 1)) {
    const char next = i + 1 < path.size() ? path[i + 1] : '\0';
    var = next == '{' || next == '_' || (util::is_ascii_alnum(next) && !util::is_ascii_digit(next));
  }
  if (path.front() != '~' && !var) return {};
  return r_.error(f.mark(), fmt::format("'{}': '{}' is not expanded on the hosts (no shell reads "
                                        "this path): write the full path, or one relative to "
                                        "the job's directory",
                                        f.path, path.front() == '~' ? "~" : "$"));
}

// The check an MLX hostfile's envs get too (rank_env.h: env_name_problem).
util::Status Parser::env_name(const Field& f, std::string_view section) const {
  auto p = env_name_problem(f.key);
  if (!p) return {};
  const char* fix = *p == EnvNameProblem::kSetByLaunch  ? ": remove it from the job"
                    : *p == EnvNameProblem::kWrapperOwn ? ": rename it"
                                                        : "";
  return r_.error(f.key_mark, fmt::format("{} name {}{}", section, describe(*p, f.key), fix));
}

util::Result<ClusterRef> Parser::cluster(const Field& f) const {
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
    return r_.error(f.mark(), fmt::format("'cluster': cannot tell what '{}' is: give a cluster "
                                          "state (.json, from discover -o), an inventory "
                                          "(.yaml), lab:NAME, hostfile:PATH (an MLX hostfile), "
                                          "state:PATH or inventory:PATH",
                                          *s));
  }
  auto p = resolve(f, *s);
  if (!p) return p.error();
  return ClusterRef{kind, p->string()};
}

util::Result<std::vector<std::string>> Parser::hosts(const Field& f) const {
  auto items = r_.list(f, "a list of strings");
  if (!items) return items.error();
  if (items->empty()) return r_.error(f.mark(), "'hosts' is empty: name at least one host");
  std::vector<std::string> out;
  for (const Field& item : *items) {
    auto h = r_.nonempty_string(item);
    if (!h) return h.error();
    // One host under two spellings ("Studio1", "studio1.") is still one host.
    auto same = std::find_if(out.begin(), out.end(), [&](const std::string& o) {
      return util::host_key(o) == util::host_key(*h);
    });
    if (same != out.end()) {
      const std::string as =
          *same == *h ? std::string()
                      : fmt::format(", as '{}' too{}", *same, util::same_host_note(*same, *h));
      return r_.error(item.mark(), fmt::format("host '{}' appears twice in 'hosts'{}: use "
                                               "ranks_per_host for more ranks on a host",
                                               *h, as));
    }
    out.push_back(std::move(*h));
  }
  return out;
}

util::Result<Command> Parser::command(const Field& f) const {
  Command c;
  if (f.value.IsSequence()) {
    auto items = r_.list(f, "a list of strings");
    if (!items) return items.error();
    if (items->empty()) {
      return r_.error(f.mark(),
                      "'command' is empty: give the program and its arguments, "
                      "e.g. [python3, train.py]");
    }
    for (const Field& item : *items) {
      auto arg = r_.string(item);
      if (!arg) return arg.error();
      c.argv.push_back(std::move(*arg));
    }
    if (c.argv.front().empty()) {
      return r_.error(items->front().mark(), "'command[0]' is empty: it names the program");
    }
    return c;
  }
  if (!f.value.IsMap()) {
    return r_.error(f.mark(),
                    fmt::format("'command': expected a list of strings (argv) or a mapping "
                                "{{shell: \"script\"}}, got {}",
                                YamlReader::kind(f.value)));
  }
  auto fields = r_.mapping(f, kCommandKeys);
  if (!fields) return fields.error();
  if (fields->empty()) return r_.error(f.mark(), "'command' has no 'shell': the script to run");
  auto script = r_.string(fields->front());
  if (!script) return script.error();
  if (script->find_first_not_of(" \t\r\n") == std::string::npos) {
    return r_.error(fields->front().mark(), "'command.shell' is empty");
  }
  c.shell = std::move(*script);
  return c;
}

util::Status Parser::env(const Field& f, JobSpec& job) {
  auto entries = r_.any_mapping(f);
  if (!entries) return entries.error();
  for (const Field& e : *entries) {
    if (auto st = env_name(e, "env"); !st) return st;
    if (e.value.IsNull()) {
      return r_.error(e.mark(), fmt::format("'{}' has no value: write {}: \"\" for an empty one",
                                            e.path, e.key));
    }
    auto v = r_.string(e);
    if (!v) return v.error();
    env_marks_[e.key] = e.key_mark;
    job.env[e.key] = std::move(*v);
  }
  return {};
}

util::Status Parser::secret_env(const Field& f, JobSpec& job) {
  auto entries = r_.any_mapping(f);
  if (!entries) return entries.error();
  for (const Field& e : *entries) {
    if (auto st = env_name(e, "secret_env"); !st) return st;
    auto source = r_.mapping(e, kSecretKeys);
    if (!source) return source.error();
    if (source->size() != 1) {
      return r_.error(e.mark(), fmt::format("'{}': give exactly one of from_env: VAR and "
                                            "from_file: PATH",
                                            e.path));
    }
    const Field& from = source->front();
    SecretSource s;
    if (from.key == "from_env") {
      auto var = r_.nonempty_string(from);
      if (!var) return var.error();
      if (!util::is_env_name(*var)) {
        return r_.error(from.mark(), fmt::format("'{}': '{}' is not a valid environment "
                                                 "variable name",
                                                 from.path, *var));
      }
      s = SecretSource{SecretSource::Kind::kEnv, std::move(*var)};
    } else {
      auto p = local_path(from);
      if (!p) return p.error();
      s = SecretSource{SecretSource::Kind::kFile, p->string()};
    }
    s.line = from.mark().line + 1;
    s.column = from.mark().column + 1;
    secret_fields_.push_back(e);
    job.secret_env[e.key] = std::move(s);
  }
  return {};
}

util::Result<Timeouts> Parser::timeouts(const Field& f) const {
  auto fields = r_.mapping(f, kTimeoutKeys);
  if (!fields) return fields.error();
  Timeouts t;
  for (const Field& e : *fields) {
    const bool grace = e.key == "grace", total = e.key == "total";
    const std::int64_t min = (e.key == "startup" || grace) ? 1 : 0;
    const std::int64_t max = total ? 365 * kDay : grace ? 3600 : kDay;
    auto v = r_.integer(e, min, max, "a whole number of seconds");
    if (!v) return v.error();
    std::chrono::seconds s{*v};
    (e.key == "startup" ? t.startup : total ? t.total : grace ? t.grace : t.stall) = s;
  }
  return t;
}

util::Result<Restart> Parser::restart(const Field& f) const {
  Restart r;
  if (f.value.IsScalar()) {
    auto p = choice(f, kPolicies, "restart policy");
    if (!p) return p.error();
    r.policy = *p;
    r.max_attempts = r.policy == Restart::Policy::kOnFailure ? 3 : 1;
    return r;
  }
  if (!f.value.IsMap()) {
    return r_.error(f.mark(), fmt::format("'restart': expected never, on-failure or "
                                          "{{policy: on-failure, max_attempts: N}}, got {}",
                                          YamlReader::kind(f.value)));
  }
  auto fields = r_.mapping(f, kRestartKeys);
  if (!fields) return fields.error();
  const Field* policy = nullptr;
  const Field* attempts = nullptr;
  for (const Field& e : *fields) (e.key == "policy" ? policy : attempts) = &e;
  if (policy == nullptr) return r_.error(f.mark(), "'restart' has no 'policy' (never, on-failure)");
  auto p = choice(*policy, kPolicies, "restart policy");
  if (!p) return p.error();
  r.policy = *p;
  r.max_attempts = r.policy == Restart::Policy::kOnFailure ? 3 : 1;
  if (attempts != nullptr) {
    if (r.policy == Restart::Policy::kNever) {
      return r_.error(attempts->key_mark,
                      "'restart.max_attempts' applies only to policy on-failure");
    }
    auto n = r_.integer(*attempts, 1, 100);
    if (!n) return n.error();
    r.max_attempts = static_cast<int>(*n);
  }
  return r;
}

util::Result<std::vector<Upload>> Parser::upload(const Field& f) const {
  auto items = r_.list(f, "a list of {src, dest, mode} entries");
  if (!items) return items.error();
  std::vector<Upload> out;
  for (const Field& item : *items) {
    auto fields = r_.mapping(item, kUploadKeys);
    if (!fields) return fields.error();
    Upload u;
    u.line = item.mark().line + 1;
    u.column = item.mark().column + 1;
    bool has_src = false;
    for (const Field& e : *fields) {
      if (e.key == "src") {
        auto p = local_path(e);
        if (!p) return p.error();
        u.src = std::move(*p);
        has_src = true;
      } else if (e.key == "dest") {
        auto d = r_.nonempty_string(e);
        if (!d) return d.error();
        if (auto bad = remote_path(e, *d); !bad) return bad.error();
        if (!d->starts_with('/') && escapes_job_dir(*d)) {
          return r_.error(e.mark(), fmt::format("'{}': '{}' leaves the job directory: give a "
                                                "path inside it, or an absolute path",
                                                e.path, *d));
        }
        u.dest = std::move(*d);
      } else {
        auto m = r_.string(e);
        if (!m) return m.error();
        const bool octal =
            (m->size() == 3 || m->size() == 4) &&
            std::all_of(m->begin(), m->end(), [](char c) { return c >= '0' && c <= '7'; });
        if (!octal) {
          return r_.error(e.mark(), fmt::format("'{}': expected an octal mode like \"0755\", "
                                                "got '{}'",
                                                e.path, *m));
        }
        u.mode = static_cast<unsigned>(std::stoul(*m, nullptr, 8));
      }
    }
    if (!has_src) {
      return r_.error(item.mark(),
                      fmt::format("'{}' has no 'src': the local file to copy", item.path));
    }
    if (u.dest.empty()) u.dest = u.src.filename().string();
    out.push_back(std::move(u));
  }
  return out;
}

util::Result<std::vector<Preflight>> Parser::preflight(const Field& f) const {
  auto items = r_.list(f, "a list of checks (verify-mesh, health, health-quick)");
  if (!items) return items.error();
  std::vector<Preflight> out;
  for (const Field& item : *items) {
    auto p = choice(item, kPreflights, "preflight check");
    if (!p) return p.error();
    if (std::find(out.begin(), out.end(), *p) != out.end()) {
      return r_.error(item.mark(),
                      fmt::format("preflight check '{}' appears twice", name_of(kPreflights, *p)));
    }
    out.push_back(*p);
  }
  return out;
}

util::Status Parser::field(const Field& f, JobSpec& job) {
  const std::string& k = f.key;
  if (k == "name") {
    auto s = r_.string(f);
    if (!s) return s.error();
    if (!is_job_name(*s)) {
      return r_.error(f.mark(), fmt::format("name '{}' is not valid: use 1 to {} letters, "
                                            "digits, '_', '.' and '-'",
                                            *s, kMaxNameLength));
    }
    job.name = std::move(*s);
  } else if (k == "cluster" || k == "hosts") {
    (k == "cluster" ? cluster_ : hosts_) = f.key_mark;
    if (cluster_ && hosts_) {
      const bool second_is_cluster = k == "cluster";
      return r_.error(f.key_mark, fmt::format("'{}' and '{}' (line {}) are both given: keep "
                                              "one, they both say where the job runs",
                                              k, second_is_cluster ? "hosts" : "cluster",
                                              (second_is_cluster ? *hosts_ : *cluster_).line + 1));
    }
    if (k == "cluster") {
      auto c = cluster(f);
      if (!c) return c.error();
      job.cluster = std::move(*c);
    } else {
      auto h = hosts(f);
      if (!h) return h.error();
      job.hosts = std::move(*h);
    }
  } else if (k == "ranks_per_host") {
    auto n = r_.integer(f, 1, kMaxRanksPerHost);
    if (!n) return n.error();
    job.ranks_per_host = static_cast<int>(*n);
  } else if (k == "command") {
    auto c = command(f);
    if (!c) return c.error();
    job.command = std::move(*c);
  } else if (k == "cwd" || k == "logs") {
    auto s = r_.nonempty_string(f);
    if (!s) return s.error();
    if (k == "cwd") {
      if (auto bad = remote_path(f, *s); !bad) return bad.error();
    }
    (k == "cwd" ? job.cwd : job.logs) = std::move(*s);
  } else if (k == "env") {
    return env(f, job);
  } else if (k == "secret_env") {
    return secret_env(f, job);
  } else if (k == "runtime") {
    auto rt = choice(f, kRuntimes, "runtime");
    if (!rt) return rt.error();
    job.runtime = *rt;
  } else if (k == "coordinator_port") {
    auto port = r_.integer(f, 1, 65535, "a TCP port");
    if (!port) return port.error();
    job.coordinator_port = static_cast<int>(*port);
  } else if (k == "timeouts") {
    auto t = timeouts(f);
    if (!t) return t.error();
    job.timeouts = *t;
  } else if (k == "restart") {
    auto rs = restart(f);
    if (!rs) return rs.error();
    job.restart = *rs;
  } else if (k == "upload") {
    auto u = upload(f);
    if (!u) return u.error();
    job.upload = std::move(*u);
  } else {
    auto p = preflight(f);
    if (!p) return p.error();
    job.preflight = std::move(*p);
  }
  return {};
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
  // Every mistake is reported, not just the first: each top-level entry is checked on its own
  // (within one entry, the first problem), then what is missing.
  std::vector<util::Error> errors;
  auto fields = r_.mapping(YamlReader::root(*doc), kJobKeys, errors);
  if (!fields) return {fields.error()};

  bool has_command = false, has_name = false;
  for (const Field& f : *fields) {
    if (auto st = field(f, job); !st) errors.push_back(st.error());
    has_command = has_command || f.key == "command";
    has_name = has_name || f.key == "name";
  }
  errors = r_.in_file_order(std::move(errors));  // the bad keys were found first
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
  if (job.logs.empty() && !job.name.empty()) job.logs = "logs/" + job.name;
  return errors;
}

}  // namespace

JobSpecDraft parse_job_spec_draft(std::string_view yaml_text, const std::string& source_path) {
  JobSpecDraft d;
  d.errors = Parser(source_path).parse(yaml_text, d.job);
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

std::string_view to_string(Runtime r) {
  return name_of(kRuntimes, r);
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
