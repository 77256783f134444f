#!/usr/bin/env bash
# A `lab up` that dies half way (SIGKILL) is cleaned up by `lab down`; one interrupted with
# Ctrl-C (SIGINT) or SIGTERM rolls itself back and exits 130, naming the signal.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
name=ctlcrash${CLUSTERCTL_TEST_SUFFIX:-}  # unique per build tree: labs are machine-wide
down_on_exit "$name"

snapshot_init
before=$(snapshot)

for delay in 0.5 0.25 0.1; do
  "$CLUSTERCTL" lab up --hosts 8 --name "$name" >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  echo "killed lab up after ${delay} s: $(ip netns list | grep -c "cc-$name-" || true) namespaces left"
  "$CLUSTERCTL" lab down --name "$name"
  same_snapshot "$before" "$(snapshot)" "lab down after a crash (${delay} s) left something behind"
  [ ! -e "$(labdir "$name")" ] || fail "lab directory still there after a crash (${delay} s)"
done

# The line names the signal, as every command's does (util::interruption(); it said
# "interrupted: lab 'X' was rolled back" of a SIGTERM too). SIGTERM exits 130 as SIGINT does
# (README, "Exit codes").
err=$(mktemp)
trap 'rm -f "$err"; "$CLUSTERCTL" lab down --name "$name" >/dev/null 2>&1 || true' EXIT
for run in "INT 0.25" "INT 0.1" "TERM 0.5"; do
  read -r sig delay <<<"$run"
  "$CLUSTERCTL" lab up --hosts 8 --name "$name" >/dev/null 2>"$err" &
  pid=$!
  sleep "$delay"
  kill "-$sig" "$pid" 2>/dev/null || true
  rc=0
  wait "$pid" || rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "lab up finished before SIG$sig (${delay} s); removing it"
    "$CLUSTERCTL" lab down --name "$name" >/dev/null
  elif [ "$rc" -eq 143 ] && [ ! -s "$err" ]; then
    # A loaded machine: the signal came before clusterctl had set its handler (nothing begun).
    echo "SIGTERM at ${delay} s came before clusterctl's handler was set"
    "$CLUSTERCTL" lab down --name "$name" >/dev/null
  else
    [ "$rc" -eq 130 ] || fail "lab up after SIG$sig exited $rc, expected 130: $(cat "$err")"
    [ "$sig" = INT ] && want="interrupted (Ctrl-C)" || want="terminated (SIGTERM)"
    # Cut short while building: rolled back; before anything was made (a fast machine, at
    # 0.1 s): said so. Either way the line names the signal.
    if grep -qxF "clusterctl lab up: $want; lab '$name' was rolled back" "$err"; then
      what="rolled back"
    elif grep -qxF "clusterctl lab up: $want; nothing of lab '$name' was made yet" "$err"; then
      what="before anything was made"
    else
      fail "lab up after SIG$sig: no line naming the signal: $(cat "$err")"
    fi
    echo "lab up after SIG$sig at ${delay} s: exit 130, $want, $what"
  fi
  same_snapshot "$before" "$(snapshot)" "an interrupted lab up (${delay} s) left something behind"
  [ ! -e "$(labdir "$name")" ] || fail "lab directory still there after SIG$sig (${delay} s)"
done
echo "PASS"
