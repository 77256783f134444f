#!/usr/bin/env bash
# A `lab up` that dies half way (SIGKILL) is cleaned up by `lab down`; one interrupted with
# Ctrl-C (SIGINT) rolls itself back and exits 130.
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

for delay in 0.25 0.1; do
  "$CLUSTERCTL" lab up --hosts 8 --name "$name" >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -INT "$pid" 2>/dev/null || true
  rc=0
  wait "$pid" || rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "lab up finished before SIGINT (${delay} s); removing it"
    "$CLUSTERCTL" lab down --name "$name" >/dev/null
  else
    [ "$rc" -eq 130 ] || fail "interrupted lab up exited $rc, expected 130"
    echo "interrupted lab up after ${delay} s: exit 130"
  fi
  same_snapshot "$before" "$(snapshot)" "an interrupted lab up (${delay} s) left something behind"
  [ ! -e "$(labdir "$name")" ] || fail "lab directory still there after Ctrl-C (${delay} s)"
done
echo "PASS"
