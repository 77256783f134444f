#include "lab/owner.h"

#include <string>

#include <doctest/doctest.h>

using namespace cc::lab;
using cc::util::ExitCode;

namespace {

// Lab "default" seen from another state directory (XDG_STATE_HOME=/tmp/x) while root's default
// one made it and holds its lab.json: the trial's case.
OwnerFacts other_state_directory() {
  OwnerFacts f;
  f.name = "default";
  f.dir = "/tmp/x/clusterctl/labs/default";
  f.machine_has_lab = true;
  f.record = Presence::kYes;
  f.record_readable = true;
  f.recorded_dir = "/root/.local/state/clusterctl/labs/default";
  f.recorded_has_record = Presence::kYes;
  return f;
}

OwnerFacts own_lab() {
  OwnerFacts f = other_state_directory();
  f.dir = f.recorded_dir;
  f.recorded_is_dir = true;
  f.dir_has_record = true;
  return f;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("owner: a lab recorded for another lab directory is that directory's, not remains") {
  OwnerFacts f = other_state_directory();
  CHECK(classify(f) == Owner::kElsewhere);
  // Even with a (stale) lab.json here, the machine's lab is the recorded directory's.
  f.dir_has_record = true;
  CHECK(classify(f) == Owner::kElsewhere);
  // Its lab.json cannot be looked at (a non-root user, /root): it may be live, so still its.
  f.recorded_has_record = Presence::kUnknown;
  CHECK(classify(f) == Owner::kElsewhere);
  // The recorded directory lost its lab.json: remains, but the other directory's.
  f.recorded_has_record = Presence::kNo;
  CHECK(classify(f) == Owner::kRemainsElsewhere);
}

TEST_CASE("owner: this directory's lab, its remains, and nothing") {
  CHECK(classify(own_lab()) == Owner::kHere);
  OwnerFacts f = own_lab();
  f.dir_has_record = false;  // `lab up` crashed, or lab.json was deleted
  CHECK(classify(f) == Owner::kRemainsHere);
  // No record in /run (namespaces only): remains, of nobody else that can be told.
  f.record = Presence::kNo;
  f.record_readable = false;
  f.recorded_dir.clear();
  f.recorded_is_dir = false;
  CHECK(classify(f) == Owner::kRemainsHere);
  f.machine_has_lab = false;
  CHECK(classify(f) == Owner::kNone);
  f.dir_has_record = true;  // a lab.json whose lab is gone: status shows it down
  CHECK(classify(f) == Owner::kHere);
}

TEST_CASE("owner: a record that cannot be read (not root) is unknown, never remains") {
  OwnerFacts f;
  f.name = "default";
  f.dir = "/home/alice/.local/state/clusterctl/labs/default";
  f.machine_has_lab = true;  // its namespaces are visible to anyone
  f.record = Presence::kUnknown;
  CHECK(classify(f) == Owner::kUnknown);
  // /run/clusterctl unreadable and no namespace of this name: nothing of it.
  f.machine_has_lab = false;
  CHECK(classify(f) == Owner::kNone);
  // A record there that names no directory.
  f.record = Presence::kYes;
  CHECK(classify(f) == Owner::kUnknown);
}

TEST_CASE("owner: the same directory, by normal form or real path") {
  CHECK(same_directory("/a/b/../c/", "/a/c"));
  CHECK_FALSE(same_directory("/a/c", "/a/d"));
  CHECK(same_directory("/", "/tmp/.."));
}

TEST_CASE("owner: how to reach another lab directory's lab") {
  CHECK(command_for_directory("default", "/root/.local/state/clusterctl/labs/default", "status") ==
        "XDG_STATE_HOME=/root/.local/state clusterctl lab status --name default");
  CHECK(command_for_directory("demo", "/tmp/s/clusterctl/labs/demo/", "down") ==
        "XDG_STATE_HOME=/tmp/s clusterctl lab down --name demo");
  // A --dir lab: its --dir.
  CHECK(command_for_directory("x", "/srv/mylab", "down") ==
        "clusterctl lab down --name x --dir /srv/mylab");
  // A directory named like a state directory's but for another lab name: --dir too.
  CHECK(command_for_directory("x", "/s/clusterctl/labs/y", "status") ==
        "clusterctl lab status --name x --dir /s/clusterctl/labs/y");
}

TEST_CASE("owner: status names another state directory's lab and never advises removing it") {
  const OwnerFacts f = other_state_directory();
  for (bool root : {true, false}) {
    CAPTURE(root);
    auto e = status_error(f, classify(f), root);
    CHECK(e.code == ExitCode::kUsage);
    CHECK(contains(e.message, "/root/.local/state/clusterctl/labs/default"));
    CHECK(contains(e.message, "XDG_STATE_HOME=/root/.local/state clusterctl lab status"));
    CHECK_FALSE(contains(e.message, "incomplete"));
    CHECK_FALSE(contains(e.message, "lab down"));
  }
  OwnerFacts hidden = f;  // a non-root user cannot look into /root
  hidden.recorded_has_record = Presence::kUnknown;
  auto e = status_error(hidden, classify(hidden), false);
  CHECK(contains(e.message, "as root"));
  CHECK_FALSE(contains(e.message, "lab down"));
}

TEST_CASE("owner: status of remains advises `lab down` only to root, and for the right directory") {
  OwnerFacts f = own_lab();
  f.dir_has_record = false;
  auto root = status_error(f, classify(f), true);
  CHECK(contains(root.message, "incomplete"));
  CHECK(contains(root.message, "`clusterctl lab down --name default`"));
  auto user = status_error(f, classify(f), false);
  CHECK_FALSE(contains(user.message, "lab down"));
  CHECK(contains(user.message, "root"));

  OwnerFacts other = other_state_directory();
  other.recorded_has_record = Presence::kNo;
  auto elsewhere = status_error(other, classify(other), true);
  CHECK(contains(elsewhere.message,
                 "`XDG_STATE_HOME=/root/.local/state clusterctl lab down --name default`"));
  CHECK_FALSE(contains(status_error(other, classify(other), false).message, "lab down"));

  OwnerFacts unknown;
  unknown.name = "default";
  unknown.dir = "/home/alice/.local/state/clusterctl/labs/default";
  unknown.machine_has_lab = true;
  unknown.record = Presence::kUnknown;
  auto u = status_error(unknown, classify(unknown), false);
  CHECK(contains(u.message, "as root"));
  CHECK_FALSE(contains(u.message, "lab down"));
  CHECK_FALSE(contains(u.message, "incomplete"));

  OwnerFacts none;
  none.name = "x";
  none.dir = "/s/clusterctl/labs/x";
  const cc::util::Error absent = status_error(none, classify(none), true);
  CHECK(absent.code == ExitCode::kCheckFailed);  // was kUsage: no usage mistake was made
  CHECK(absent.message ==
        "no lab named 'x' is running (/s/clusterctl/labs/x/lab.json does not exist); start one "
        "with `clusterctl lab up --name x`");
  none.name = "default";
  none.dir = "/s/clusterctl/labs/default";
  CHECK(contains(status_error(none, classify(none), false).message,
                 "start one with `clusterctl lab up`"));
}

TEST_CASE("owner: lab down refuses another lab directory's lab unless --other-state") {
  const OwnerFacts f = other_state_directory();
  auto refused = check_down_allowed(f, classify(f), false);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ExitCode::kUsage);
  CHECK(contains(refused.error().message, "nothing was removed"));
  CHECK(contains(refused.error().message, "/root/.local/state/clusterctl/labs/default"));
  CHECK(contains(refused.error().message,
                 "`XDG_STATE_HOME=/root/.local/state clusterctl lab down --name default`"));
  CHECK(contains(refused.error().message, "--other-state"));
  CHECK(check_down_allowed(f, classify(f), true).ok());

  OwnerFacts dead = f;
  dead.recorded_has_record = Presence::kNo;
  CHECK_FALSE(check_down_allowed(dead, classify(dead), false).ok());

  OwnerFacts unreadable = f;
  unreadable.record_readable = false;
  unreadable.recorded_dir.clear();
  CHECK_FALSE(check_down_allowed(unreadable, classify(unreadable), false).ok());

  // Its own lab, its remains, and nothing at all: allowed.
  CHECK(check_down_allowed(own_lab(), classify(own_lab()), false).ok());
  OwnerFacts remains = own_lab();
  remains.dir_has_record = false;
  CHECK(check_down_allowed(remains, classify(remains), false).ok());
  CHECK(check_down_allowed(OwnerFacts{}, classify(OwnerFacts{}), false).ok());
}
