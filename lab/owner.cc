#include "lab/owner.h"

#include <sys/stat.h>

#include <cerrno>

#include <fmt/format.h>

#include "lab/files.h"
#include "lab/plan.h"
#include "lab/system.h"
#include "util/atomic_file.h"

namespace cc::lab {
namespace {

using util::ExitCode;

// lstat of `p` (never followed): kYes, kNo (ENOENT, ENOTDIR) or kUnknown (EACCES, ...).
Presence lpresence(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) == 0) return Presence::kYes;
  return errno == ENOENT || errno == ENOTDIR ? Presence::kNo : Presence::kUnknown;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Normal form without a trailing '/': "/a/b/../c/" is "/a/c".
fs::path normal(const fs::path& p) {
  fs::path n = p.lexically_normal();
  if (n.filename().empty() && n.has_relative_path()) n = n.parent_path();
  return n;
}

fs::path record_path(std::string_view name) {
  return runtime_dir(name) / "lab_dir";
}

fs::path lab_json_of(const fs::path& dir) {
  return dir / "lab.json";
}

// ", which holds its lab.json" / ", which this user cannot read" / "".
std::string recorded_state(const OwnerFacts& f) {
  switch (f.recorded_has_record) {
    case Presence::kYes:
      return fmt::format(", where its {} is", lab_json_of(f.recorded_dir).string());
    case Presence::kUnknown:
      return ", which this user cannot read";
    case Presence::kNo:
      break;
  }
  return "";
}

}  // namespace

Owner classify(const OwnerFacts& f) {
  if (f.record != Presence::kNo && !f.record_readable) {
    // A record that is there but says nothing, or one this user cannot look at while the
    // lab's namespaces are there: whose it is cannot be told.
    if (f.record == Presence::kYes || f.machine_has_lab) return Owner::kUnknown;
    // /run/clusterctl is not readable here and no namespace of the lab exists: nothing of it.
    return f.dir_has_record ? Owner::kHere : Owner::kNone;
  }
  if (f.record_readable && !f.recorded_is_dir) {
    return f.recorded_has_record == Presence::kNo ? Owner::kRemainsElsewhere : Owner::kElsewhere;
  }
  if (f.dir_has_record) return Owner::kHere;
  if (f.machine_has_lab) return Owner::kRemainsHere;
  return Owner::kNone;
}

bool same_directory(const fs::path& a, const fs::path& b) {
  if (normal(a) == normal(b)) return true;
  std::error_code ec1;
  std::error_code ec2;
  fs::path ra = fs::weakly_canonical(a, ec1);
  fs::path rb = fs::weakly_canonical(b, ec2);
  return !ec1 && !ec2 && normal(ra) == normal(rb);
}

std::string command_for_directory(std::string_view name, const fs::path& other,
                                  std::string_view subcommand) {
  const fs::path p = normal(other);
  const fs::path labs = p.parent_path();
  if (p.filename() == name && labs.filename() == "labs" &&
      labs.parent_path().filename() == "clusterctl" && !labs.parent_path().parent_path().empty()) {
    return fmt::format("XDG_STATE_HOME={} clusterctl lab {} --name {}",
                       labs.parent_path().parent_path().string(), subcommand, name);
  }
  return fmt::format("clusterctl lab {} --name {} --dir {}", subcommand, name, p.string());
}

std::string lab_up_command(std::string_view name) {
  return name == "default" ? std::string("clusterctl lab up")
                           : fmt::format("clusterctl lab up --name {}", name);
}

util::Error status_error(const OwnerFacts& f, Owner owner, bool is_root) {
  const std::string& name = f.name;
  const std::string here = lab_json_of(f.dir).string();
  const std::string record = record_path(name).string();
  switch (owner) {
    case Owner::kNone:
    case Owner::kHere:
      break;
    case Owner::kRemainsHere:
      if (is_root) {
        return util::error(ExitCode::kUsage,
                           fmt::format("lab '{}' is incomplete (no {}): an interrupted `lab up` "
                                       "left remains; remove them with `clusterctl lab down "
                                       "--name {}`",
                                       name, here, name));
      }
      return util::error(
          ExitCode::kUsage,
          fmt::format("lab '{}' is not in this state directory (no {}), but this machine has "
                      "network namespaces of that name (cc-{}-hN); whose they are takes root to "
                      "tell: run `clusterctl lab status --name {}` as root (e.g. with sudo)",
                      name, here, name, name));
    case Owner::kElsewhere: {
      std::string reach = command_for_directory(name, f.recorded_dir, "status");
      std::string how =
          f.recorded_has_record == Presence::kUnknown && !is_root
              ? fmt::format("see it as root (e.g. with sudo): `{}`", reach)
              : fmt::format("see it with `{}`, or run as the user whose state directory that is",
                            reach);
      return util::error(
          ExitCode::kUsage,
          fmt::format("lab '{}' is not in this state directory (no {}): this machine's lab "
                      "'{}' belongs to another lab directory, {} (recorded by `lab up` in "
                      "{}){}; {}. It is not remains: leave it alone, or choose another name",
                      name, here, name, f.recorded_dir.string(), record, recorded_state(f), how));
    }
    case Owner::kRemainsElsewhere: {
      std::string what = fmt::format(
          "lab '{}' is not in this state directory (no {}): this machine's lab '{}' was made for "
          "another lab directory, {} (recorded by `lab up` in {}), which has no lab.json: an "
          "interrupted `lab up`, or a removed state directory, left remains",
          name, here, name, f.recorded_dir.string(), record);
      if (!is_root) {
        return util::error(ExitCode::kUsage,
                           fmt::format("{}; as root, `{}` tells more", what,
                                       command_for_directory(name, f.recorded_dir, "status")));
      }
      return util::error(ExitCode::kUsage,
                         fmt::format("{}; remove them with `{}`", what,
                                     command_for_directory(name, f.recorded_dir, "down")));
    }
    case Owner::kUnknown:
      if (!is_root) {
        return util::error(
            ExitCode::kUsage,
            fmt::format("lab '{}' is not in this state directory (no {}), but this machine has "
                        "a lab of that name; this user cannot read its record ({}), so whose it "
                        "is takes root to tell: run `clusterctl lab status --name {}` as root "
                        "(e.g. with sudo) with the state directory that made it",
                        name, here, record, name));
      }
      return util::error(
          ExitCode::kUsage,
          fmt::format("lab '{}' is on this machine, but its record {} does not name a lab "
                      "directory, so whose it is cannot be told; see `ip netns list` and {}",
                      name, record, runtime_dir(name).string()));
  }
  // Not a usage error: the question was fine, and the answer is "not running" (README, "Exit
  // codes": 1, what was checked did not pass), as for a lab whose sshd is down.
  return util::error(ExitCode::kCheckFailed,
                     fmt::format("no lab named '{}' is running ({} does not exist); start one "
                                 "with `{}`",
                                 name, here, lab_up_command(name)));
}

util::Status check_down_allowed(const OwnerFacts& f, Owner owner, bool other_state) {
  if (other_state) return {};
  const std::string& name = f.name;
  const std::string record = record_path(name).string();
  switch (owner) {
    case Owner::kElsewhere:
      return util::error(
          ExitCode::kUsage,
          fmt::format("lab '{}' belongs to another lab directory, {} (recorded by `lab up` in "
                      "{}){}, not this run's {}; nothing was removed. Tear it down from there "
                      "with `{}` (or as the user whose state directory that is); `--other-state` "
                      "removes its namespaces, processes and runtime files from here (still "
                      "never that directory's files)",
                      name, f.recorded_dir.string(), record, recorded_state(f), f.dir.string(),
                      command_for_directory(name, f.recorded_dir, "down")));
    case Owner::kRemainsElsewhere:
      return util::error(
          ExitCode::kUsage,
          fmt::format("lab '{}' was made for another lab directory, {} (recorded by `lab up` in "
                      "{}), not this run's {}; nothing was removed. That directory has no "
                      "lab.json: remove the remains with `{}`, or from here with `--other-state`",
                      name, f.recorded_dir.string(), record, f.dir.string(),
                      command_for_directory(name, f.recorded_dir, "down")));
    case Owner::kUnknown:
      return util::error(
          ExitCode::kUsage,
          fmt::format("lab '{}': its record {} cannot be read or does not name a lab directory, "
                      "so it may belong to another state directory; nothing was removed. "
                      "`clusterctl lab down --name {} --other-state` removes it anyway",
                      name, record, name));
    case Owner::kNone:
    case Owner::kHere:
    case Owner::kRemainsHere:
      break;
  }
  return {};
}

OwnerFacts gather_owner_facts(std::string_view name, const fs::path& dir) {
  OwnerFacts f;
  f.name = std::string(name);
  f.dir = dir;
  f.dir_has_record = lpresence(lab_json_of(dir)) == Presence::kYes;
  f.machine_has_lab = lpresence(runtime_dir(name)) == Presence::kYes;
  for (const auto& ns : sys::list_netns()) {
    for (int i = kMinHosts; i <= kMaxHosts && !f.machine_has_lab; ++i) {
      f.machine_has_lab = ns == netns_name(name, i);
    }
  }
  f.record = lpresence(record_path(name));
  if (f.record == Presence::kYes) {
    if (auto text = util::read_file(record_path(name))) {
      fs::path p = trim(*text);
      if (p.is_absolute()) {
        f.record_readable = true;
        f.recorded_dir = normal(p);
      }
    }
  }
  if (f.record_readable) {
    f.recorded_is_dir = same_directory(f.recorded_dir, dir);
    f.recorded_has_record = lpresence(lab_json_of(f.recorded_dir));
  }
  return f;
}

}  // namespace cc::lab
