#!/usr/bin/env bash
# Usage errors exit 2 with a clear message and change nothing: not root, host count out of
# range, a bad name, a bad topology file (file:line), an unknown lab for status.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect CODE PATTERN -- COMMAND...: runs COMMAND, checks its exit code and that its output
# (stdout and stderr) matches PATTERN (grep -E).
expect() {
  local want=$1 pattern=$2 rc=0 out
  shift 3
  out=$("$@" 2>&1) || rc=$?
  [ "$rc" -eq "$want" ] || fail "'$*' exited $rc, expected $want; output: $out"
  grep -qE -- "$pattern" <<<"$out" || fail "'$*' output does not match '$pattern': $out"
  echo "ok: $* -> $rc: $(head -1 <<<"$out")"
}

snapshot_init
before=$(snapshot)
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
expect 2 "must run as root" -- "${nobody[@]}" "$CLUSTERCTL" lab up --name ctlusage
expect 2 "must run as root" -- "${nobody[@]}" "$CLUSTERCTL" lab down --name ctlusage
expect 2 "out of range|not in range" -- "$CLUSTERCTL" lab up --hosts 17 --name ctlusage
expect 2 "out of range|not in range" -- "$CLUSTERCTL" lab up --hosts 0 --name ctlusage
expect 2 "invalid lab name" -- "$CLUSTERCTL" lab up --name "a/b"
expect 2 "--omit h1-h9: unknown host 'h9'" -- "$CLUSTERCTL" lab up --name ctlusage --omit h1-h9
printf 'cables:\n  - [h1, h2]\n  - [h2, h7]\n' >"$tmp/bad.yaml"
expect 2 "$tmp/bad.yaml:3:5: 'cables\[1\]': unknown host 'h7'" -- \
  "$CLUSTERCTL" lab up --name ctlusage --hosts 3 --topology "$tmp/bad.yaml"
expect 2 "--topology: star: not one of mesh, ring, nor a file$" -- \
  "$CLUSTERCTL" lab up --name ctlusage --topology star
expect 2 "--topology: rign: not one of mesh, ring, nor a file \(did you mean 'ring'\?\)$" -- \
  "$CLUSTERCTL" lab up --name ctlusage --topology rign
expect 1 "no lab named 'ctlusage' is running" -- "$CLUSTERCTL" lab status --name ctlusage
for cmd in "lab" "lab up" "lab down" "lab status"; do
  # shellcheck disable=SC2086
  expect 0 "Usage:" -- "$CLUSTERCTL" $cmd --help
done
same_snapshot "$before" "$(snapshot)" "a refused command changed the machine"
echo "PASS"
