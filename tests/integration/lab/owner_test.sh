#!/usr/bin/env bash
# A lab belongs to the lab directory that made it (lab/owner.h). Seen from another state directory
# (another XDG_STATE_HOME), `lab status` names the owner instead of calling it remains, `lab down`
# refuses (exit 2, nothing changed) unless --other-state, and even then never deletes the other
# directory's files; `lab up` of the same name names it too. A non-root user's `lab status` never
# advises removing it. `lab down` never deletes through a symbolic link planted in the lab
# directory. templates/ci-smoke.sh never takes down a lab it did not make.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
name=wtlown${CLUSTERCTL_TEST_SUFFIX:-}  # unique per build tree: labs are machine-wide
top=$(mktemp -d)
chmod 755 "$top"
owner_state=$top/owner-state
other_state=$top/other-state
victim=$top/victim
# shellcheck disable=SC2064
trap "XDG_STATE_HOME=$owner_state \"\$CLUSTERCTL\" lab down --name $name >/dev/null 2>&1 || true; rm -rf $top" EXIT

as_owner() { XDG_STATE_HOME=$owner_state "$CLUSTERCTL" "$@"; }
as_other() { XDG_STATE_HOME=$other_state "$CLUSTERCTL" "$@"; }
owner_dir=$owner_state/clusterctl/labs/$name
# Runs "$@", which must exit with status $1; its stderr goes to $top/err.
expect_exit() {
  local want=$1 rc=0
  shift
  "$@" >"$top/out" 2>"$top/err" || rc=$?
  [ "$rc" = "$want" ] || fail "$* exited $rc, not $want: $(cat "$top/out" "$top/err")"
}
lab_intact() {
  [ -f "$owner_dir/lab.json" ] || fail "$1: $owner_dir/lab.json is gone"
  [ -f "$owner_dir/id_ed25519" ] || fail "$1: the owner's key is gone"
  ip netns list | grep -q "^cc-$name-h2\b" || fail "$1: namespace cc-$name-h2 is gone"
  as_owner lab status --name "$name" >/dev/null || fail "$1: the owner's lab is no longer up"
}

as_owner lab up --hosts 2 --name "$name" --data-size 1M >/dev/null

# 1. Status from another state directory: whose it is and how to reach it; not "incomplete".
expect_exit 2 as_other lab status --name "$name"
grep -q "belongs to another lab directory, $owner_dir" "$top/err" ||
  fail "status does not name the owner: $(cat "$top/err")"
grep -q "XDG_STATE_HOME=$owner_state clusterctl lab status --name $name" "$top/err" ||
  fail "status does not say how to reach it: $(cat "$top/err")"
! grep -q "incomplete\|lab down" "$top/err" || fail "status advises removing it: $(cat "$top/err")"

# 2. Down from there: refused, nothing changed (before: the owner's lab and directory went).
expect_exit 2 as_other lab down --name "$name"
grep -q "nothing was removed" "$top/err" || fail "down refusal: $(cat "$top/err")"
lab_intact "a refused lab down"

# 3. Up of the same name from there: names the owner, no advice to tear it down.
expect_exit 2 as_other lab up --hosts 2 --name "$name" --data-size 1M
grep -q "$owner_dir" "$top/err" || fail "up does not name the owner: $(cat "$top/err")"
! grep -q "lab down" "$top/err" || fail "up advises removing it: $(cat "$top/err")"
lab_intact "a refused lab up"

# 4. A non-root user: an accurate message, never advice to destroy.
expect_exit 2 setpriv --reuid=65534 --regid=65534 --clear-groups \
  env XDG_STATE_HOME="$top/nobody-state" "$CLUSTERCTL" lab status --name "$name"
grep -q "root" "$top/err" || fail "non-root status: $(cat "$top/err")"
! grep -q "incomplete\|lab down" "$top/err" || fail "non-root status advises: $(cat "$top/err")"

# 5. templates/ci-smoke.sh, refused by an existing lab of its name in its own state directory
# (where only the script's own bookkeeping protects it), leaves that lab alone.
expect_exit 2 env XDG_STATE_HOME="$owner_state" CI_SMOKE_LAB="$name" CI_SMOKE_OUT="$top/ci" \
  bash "$HERE/../../../templates/ci-smoke.sh"
! grep -q "== lab down" "$top/out" || fail "ci-smoke took down a lab it did not make"
lab_intact "ci-smoke refused by an existing lab"

# 6. A symbolic link planted in the owner's lab directory (hosts/h9 -> elsewhere): lab down
# removes the lab and leaves what the link points at alone.
mkdir -p "$victim/home"
echo keep >"$victim/home/precious"
echo keep >"$victim/sshd_config"
ln -s "$victim" "$owner_dir/hosts/h9"

# 7. --other-state from the other directory: the lab goes, the owner's files stay.
as_other lab down --name "$name" --other-state >"$top/out" 2>"$top/err" ||
  fail "lab down --other-state: $(cat "$top/err")"
grep -q "kept $owner_dir" "$top/err" || fail "down --other-state kept nothing: $(cat "$top/err")"
! ip netns list | grep -q "^cc-$name-" || fail "namespaces left after --other-state"
[ ! -e "/run/clusterctl/labs/$name" ] || fail "/run/clusterctl/labs/$name left"
[ -f "$owner_dir/lab.json" ] || fail "--other-state deleted $owner_dir/lab.json"

# The owner's own lab down then removes its files, and not through the planted link.
as_owner lab down --name "$name" >/dev/null 2>"$top/err" || fail "owner's lab down: $(cat "$top/err")"
[ -f "$victim/home/precious" ] && [ -f "$victim/sshd_config" ] ||
  fail "lab down deleted through the symbolic link $owner_dir/hosts/h9"
[ ! -e "$owner_dir/lab.json" ] || fail "the owner's lab down left $owner_dir/lab.json"
echo "PASS"
