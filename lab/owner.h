// Whose lab is it: the lab directory this run uses (resolve_lab_dir, from --dir or the state
// directory) against what the machine says about lab NAME: its namespaces, its runtime directory
// and the lab directory `lab up` recorded there (/run/clusterctl/labs/NAME/lab_dir).
//
// Lab names are machine-wide, lab directories are not: the same name seen with another
// XDG_STATE_HOME, --dir or user is another run's lab, often live. `lab status` tells it from
// the remains of an interrupted `lab up`, `lab down` refuses to tear it down (unless told so),
// and `lab up` names it. The recorded path only ever tells whose the lab is: nothing is deleted
// on its strength. classify() and the messages are pure (owner_test.cc); gather_owner_facts()
// looks at the machine.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "util/result.h"

namespace cc::lab {

namespace fs = std::filesystem;

enum class Presence { kNo, kYes, kUnknown };  // kUnknown: could not be told (permission)

/// What the machine holds of lab `name`, seen from this run's lab directory.
struct OwnerFacts {
  std::string name;
  fs::path dir;                     // this run's lab directory
  bool dir_has_record = false;      // dir/lab.json exists
  bool machine_has_lab = false;     // its runtime directory or a namespace cc-NAME-hN exists
  Presence record = Presence::kNo;  // /run/clusterctl/labs/NAME/lab_dir (kUnknown: not root)
  bool record_readable = false;     // it was read and holds an absolute path (recorded_dir)
  fs::path recorded_dir;            // the lab directory `lab up` recorded there
  Presence recorded_has_record = Presence::kNo;  // recorded_dir/lab.json
  bool recorded_is_dir = false;                  // recorded_dir is the same directory as dir
};

enum class Owner {
  kNone,              // nothing of the lab on this machine nor in dir
  kHere,              // dir's lab: its lab.json, and the machine's record (if any) names dir
  kRemainsHere,       // on the machine, recorded for dir (or not recorded), no lab.json in dir
  kElsewhere,         // recorded for another directory that holds (or may hold) its lab.json
  kRemainsElsewhere,  // recorded for another directory, which has no lab.json
  kUnknown,           // on the machine, but its record cannot be read (not root)
};

/// Whose lab it is, from the facts alone.
Owner classify(const OwnerFacts& facts);

/// True when `a` and `b` name the same directory: equal once normalised, or resolving to the same
/// real path (a symbolic link to it, `..`).
bool same_directory(const fs::path& a, const fs::path& b);

/// The command that reaches lab `name` of lab directory `other`, e.g. "XDG_STATE_HOME=/root/
/// .local/state clusterctl lab status --name default" when `other` is a state directory's
/// clusterctl/labs/NAME, else "clusterctl lab status --name NAME --dir OTHER".
std::string command_for_directory(std::string_view name, const fs::path& other,
                                  std::string_view subcommand);

/// The command that starts lab `name`: "clusterctl lab up" for "default", else with --name.
std::string lab_up_command(std::string_view name);

/// Why `lab status` cannot show lab `facts.name`, for every owner but kHere: no such lab
/// (kCheckFailed: a status query whose answer is "not running", with the `lab up` that starts
/// one), else kUsage: a lab of another state directory (named, with how to reach it), remains (with
/// the `lab down` that removes them, only when `is_root` and they are this directory's or a
/// dead one's), or what a non-root user can see. Never advises removing a lab that may be live.
util::Error status_error(const OwnerFacts& facts, Owner owner, bool is_root);

/// Whether `lab down` may tear lab `facts.name` down from this run's lab directory: refuses
/// (kUsage, naming both directories and how to reach the other) a lab that the machine's record
/// gives to another directory, or whose record cannot be read, unless `other_state`.
util::Status check_down_allowed(const OwnerFacts& facts, Owner owner, bool other_state);

/// Looks at the machine: dir/lab.json, /run/clusterctl/labs/NAME (and its lab_dir), the
/// namespaces cc-NAME-hN, the recorded directory's lab.json (lstat: never followed).
OwnerFacts gather_owner_facts(std::string_view name, const fs::path& dir);

}  // namespace cc::lab
