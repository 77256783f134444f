#!/usr/bin/env bash
# One clusterctl at a time per lab (lab/lock.h): two `lab up` of one name started at the same
# moment make one lab (the other waits, then says it already exists) instead of both failing
# with raw `ip` errors and rolling back; two `lab down` at once both succeed, one removing the
# lab and the other finding nothing; `lab status` and `lab down` during a `lab up` say who is
# making it (by the pid the kernel gives) and `lab down` then removes the lab; a killed `lab up`
# leaves no lock behind; `lab down` names a job that still runs on the lab, and goes on (exit 0).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
name=ctlrace${CLUSTERCTL_TEST_SUFFIX:-}  # unique per build tree: labs are machine-wide
tmp=$(mktemp -d)
# shellcheck disable=SC2064
trap "\"\$CLUSTERCTL\" lab down --name $name >/dev/null 2>&1 || true; rm -rf '$tmp'" EXIT
lock=/run/clusterctl/labs/$name.lock
raw='Cannot create namespace file|File exists|No such file or directory|Saving key failed|Cannot open network namespace|not completely removed'

snapshot_init
before=$(snapshot)

# 1. Two `lab up` at the same moment (released together by a FIFO, twice): one lab, made
# once; the other exits 2 naming it. Before the lock both usually failed and rolled back.
# The FIFO is opened here, both ways, before either starts (fd 3 writes, fd 4 reads: no open
# waits), and each gets the read end: both see its end together once the last write end, this
# shell's, is closed, however late either of them got to its read. (It was opened and closed
# 0.2 s after they were started: one that had not yet opened it by then waited forever.)
gate=$tmp/gate
for try in 1 2; do
  mkfifo "$gate"
  exec 3<>"$gate" 4<"$gate"
  (exec 3>&-; read -r _ <&4 || true; exec 4<&- "$CLUSTERCTL" lab up --name "$name" --hosts 2) >"$tmp/up1.out" 2>"$tmp/up1.err" &
  p1=$!
  (exec 3>&-; read -r _ <&4 || true; exec 4<&- "$CLUSTERCTL" lab up --name "$name" --hosts 2) >"$tmp/up2.out" 2>"$tmp/up2.err" &
  p2=$!
  exec 3>&- 4<&-  # the last write end: both readers see the end at once
  rc1=0 rc2=0
  wait "$p1" || rc1=$?
  wait "$p2" || rc2=$?
  rm -f "$gate"
  cat "$tmp"/up1.err "$tmp"/up2.err
  if grep -Eq "$raw" "$tmp"/up1.err "$tmp"/up2.err; then
    fail "two lab up at once (try $try): a raw error (exit $rc1 and $rc2)"
  fi
  if [ "$rc1" -eq 0 ]; then winner=$p1 loser=up2 rc=$rc2; else winner=$p2 loser=up1 rc=$rc1; fi
  if [ "$((rc1 + rc2))" -ne 2 ] || [ "$rc" -ne 2 ]; then
    fail "two lab up at once (try $try) exited $rc1 and $rc2, expected 0 and 2"
  fi
  grep -q "lab '$name' already exists" "$tmp/$loser.err" || fail "the second lab up said: $(cat "$tmp/$loser.err")"
  if grep -q "waiting:" "$tmp/$loser.err"; then  # it found the first one at work: named by its pid
    grep -q "waiting: lab '$name' is being created by another clusterctl (pid $winner)" "$tmp/$loser.err" ||
      fail "the waiting lab up did not name pid $winner: $(cat "$tmp/$loser.err")"
  fi
  "$CLUSTERCTL" lab status --name "$name" >/dev/null || fail "the winner's lab is not up (was it rolled back?)"
  echo "two lab up at once (try $try): one lab; the other exit 2, already exists"
  [ "$try" -eq 2 ] || "$CLUSTERCTL" lab down --name "$name" >/dev/null
done

# 2. Two `lab down` at once: both exit 0; one removes the lab, the other finds nothing.
"$CLUSTERCTL" lab down --name "$name" >"$tmp/down1.out" 2>"$tmp/down1.err" &
p1=$!
"$CLUSTERCTL" lab down --name "$name" >"$tmp/down2.out" 2>"$tmp/down2.err" &
p2=$!
rc1=0 rc2=0
wait "$p1" || rc1=$?
wait "$p2" || rc2=$?
cat "$tmp"/down1.* "$tmp"/down2.*
if [ "$rc1" -ne 0 ] || [ "$rc2" -ne 0 ]; then
  fail "two lab down at once exited $rc1 and $rc2, expected 0 and 0"
fi
! grep -Eq "$raw" "$tmp"/down1.err "$tmp"/down2.err || fail "two lab down at once: a raw error"
[ "$(cat "$tmp"/down1.out "$tmp"/down2.out | grep -c "is down")" -eq 1 ] || fail "not exactly one lab down removed the lab"
grep -q "nothing to remove" "$tmp"/down1.out "$tmp"/down2.out || fail "neither lab down found nothing"
same_snapshot "$before" "$(snapshot)" "two lab down at once left something behind"
[ ! -e "$lock" ] || fail "$lock is left after lab down"
echo "two lab down at once: both exit 0"

# 3. `lab status` and `lab down` during `lab up`: named, then the lab is removed whole.
"$CLUSTERCTL" lab up --name "$name" --hosts 8 >"$tmp/up.out" 2>"$tmp/up.err" &
pup=$!
for _ in $(seq 1500); do  # until it holds the lock (its record is written right after)
  [ -e "$(labdir "$name")/lab.json" ] && break
  sleep 0.02
done
# (It went on after 2 s without it: a loaded machine's lab up not yet at its lock made lab
# status answer "no lab", which was taken for a wrong message.)
[ -e "$(labdir "$name")/lab.json" ] || fail "lab up made no lab.json within 30 s: $(cat "$tmp/up.err")"
st=0
"$CLUSTERCTL" lab status --name "$name" >"$tmp/status.out" 2>"$tmp/status.err" || st=$?
if [ "$st" -ne 0 ] && kill -0 "$pup" 2>/dev/null; then  # not up yet: status says who makes it
  [ "$st" -eq 1 ] || fail "lab status during lab up exited $st"
  grep -q "lab '$name' is being created by another clusterctl (pid $pup)" "$tmp/status.err" ||
    fail "lab status during lab up said: $(cat "$tmp/status.err")"
  echo "lab status during lab up: exit 1, names pid $pup"
fi
rc=0
"$CLUSTERCTL" lab down --name "$name" >"$tmp/down.out" 2>"$tmp/down.err" || rc=$?
rcup=0
wait "$pup" || rcup=$?
cat "$tmp/up.err" "$tmp/down.out" "$tmp/down.err"
[ "$rcup" -eq 0 ] || fail "lab up with a lab down started during it exited $rcup"
[ "$rc" -eq 0 ] || fail "lab down during lab up exited $rc"
! grep -Eq "$raw" "$tmp/up.err" "$tmp/down.err" || fail "lab down during lab up: a raw error"
grep -q "is down" "$tmp/down.out" || fail "lab down during lab up removed nothing"
same_snapshot "$before" "$(snapshot)" "lab down during lab up left something behind"
echo "lab down during lab up: waited for it, then removed the lab"

# 4. A killed `lab up` leaves no lock: `lab down` right after does not wait for it.
"$CLUSTERCTL" lab up --name "$name" --hosts 4 >/dev/null 2>&1 &
pup=$!
# Killed once it holds the lock (its lab.json is written right after it takes it), not a fixed
# 0.3 s after its start: before the lock there is no lock to leave, and nothing was tested.
for _ in $(seq 1500); do
  [ -e "$(labdir "$name")/lab.json" ] && break
  kill -0 "$pup" 2>/dev/null || break
  sleep 0.02
done
[ -e "$(labdir "$name")/lab.json" ] || fail "lab up made no lab.json within 30 s"
kill -KILL "$pup" 2>/dev/null || true
wait "$pup" 2>/dev/null || true
start=$(now_ms)
"$CLUSTERCTL" lab down --name "$name" >"$tmp/down.out" 2>"$tmp/down.err" || fail "lab down after a killed lab up: $(cat "$tmp/down.err")"
took=$(($(now_ms) - start))
! grep -q "waiting:" "$tmp/down.err" || fail "lab down waited for a killed lab up: $(cat "$tmp/down.err")"
[ "$took" -lt 15000 ] || fail "lab down after a killed lab up took $took ms"
same_snapshot "$before" "$(snapshot)" "lab down after a killed lab up left something behind"
echo "killed lab up: no lock left (lab down took $took ms)"

# 5. `lab down` while a job launched on the lab runs: warned of by id, not waited for, exit 0.
"$CLUSTERCTL" lab up --name "$name" --hosts 2 >/dev/null
cat >"$tmp/job.yaml" <<EOF
{"name": "$name-sleep", "cluster": "lab:$name", "logs": "$tmp/logs",
 "command": {"shell": "echo started; exec sleep 60"}}
EOF
job=$("$CLUSTERCTL" launch --detach "$tmp/job.yaml" 2>"$tmp/launch.err") || fail "launch --detach: $(cat "$tmp/launch.err")"
# Until both ranks run (each has said so in its log; both job directories exist by then):
# `lab down` is to find them. (It went on after 5 s whatever ran, and counted any `sleep 60`
# of this machine, other tests' too.)
for _ in $(seq 600); do
  grep -qx started "$tmp/logs/$job/rank-0.out" 2>/dev/null &&
    grep -qx started "$tmp/logs/$job/rank-1.out" 2>/dev/null && break
  sleep 0.05
done
grep -qx started "$tmp/logs/$job/rank-0.out" && grep -qx started "$tmp/logs/$job/rank-1.out" ||
  fail "job $job's 2 ranks did not start within 30 s: $("$CLUSTERCTL" logs "$job" 2>&1)"
rc=0
timeout 60 "$CLUSTERCTL" lab down --name "$name" >"$tmp/down.out" 2>"$tmp/down.err" </dev/null || rc=$?
cat "$tmp/down.out" "$tmp/down.err"
[ "$rc" -eq 0 ] || fail "lab down with a running job exited $rc"
grep -q "warning: job $job (2 ranks, launcher pid [0-9]*) is running on lab '$name': taking the lab down ends it" "$tmp/down.err" ||
  fail "lab down did not name the running job $job"
grep -q "is down" "$tmp/down.out" || fail "lab down with a running job removed nothing"
# Its launcher lost its hosts and could not remove its job directories there (this machine's
# /tmp): lab down removed them itself, named them, and said the record is kept.
ls -d /tmp/clusterctl-job-"$job"-* 2>/dev/null && fail "lab down left job $job's directories"
grep -q "^removed 2 job directories of the jobs of lab '$name': /tmp/clusterctl-job-$job-" "$tmp/down.out" ||
  fail "lab down did not name the job directories it removed"
grep -q "kept 1 job record of lab '$name' (\`clusterctl jobs\` lists them" "$tmp/down.err" ||
  fail "lab down did not say it kept the job record"
for _ in $(seq 200); do  # its launcher sees its hosts gone and ends
  state=$("$CLUSTERCTL" --json jobs | python3 -c '
import json, sys
print(next((j["state"] for j in json.load(sys.stdin) if j["id"] == sys.argv[1]), "none"))' "$job")
  [ "$state" = running ] || break
  sleep 0.1
done
"$CLUSTERCTL" stop "$job" >/dev/null 2>&1 || true
"$CLUSTERCTL" jobs --forget "$job" >/dev/null 2>&1 || true
same_snapshot "$before" "$(snapshot)" "lab down with a running job left something behind"
echo "lab down with a running job: named $job, exit 0"
echo "PASS"
