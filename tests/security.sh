#!/usr/bin/env bash
# Hostile inputs and a hostile machine, against the real binary: every attack of the security
# trial is refused or harmless. Jobs run on the host "local" (this machine, no SSH); the
# remote-side checks of the job directories (planted, linked, foreign, forged pid files) are
# launch/wrapper_test.cc's. Needs root (unshare, mknod, ns_last_pid); else it skips (exit 77).
set -uo pipefail
cc=${CLUSTERCTL:?set CLUSTERCTL to the clusterctl binary}
src=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: needs root (private mount and pid namespaces)"
  exit 77
fi
fail=0
expect() {  # expect CODE DESCRIPTION -- CMD...
  local want=$1 what=$2; shift 3
  local out rc
  out=$(timeout 60 "$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL: $what: exit $rc, want $want"; echo "$out" | head -20; fail=1
  else
    echo "ok: $what (exit $rc)"
  fi
  LAST="$out"
}
has() {  # has TEXT DESCRIPTION: LAST holds TEXT
  grep -qF -- "$1" <<<"$LAST" || { echo "FAIL: $2: no '$1' in: $LAST"; fail=1; }
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_STATE_HOME="$tmp/state"
cd "$tmp" || exit 1

"$cc" discover --from "$src/tests/data/bundles/mac-pair" -o "$tmp/c.json" >/dev/null 2>&1
[ -f "$tmp/c.json" ] || { echo "FAIL: no cluster state from the mac-pair bundle"; exit 1; }

# --- writes: a device is written through, never replaced --------------------------------------
# In a private mount namespace with its own /dev, so that the old behaviour (a rename over the
# device) would break nothing outside this test.
expect 0 "-o /dev/null (a character device) as root" -- unshare -m sh -c '
  mount -t tmpfs none /dev && mknod -m 666 /dev/null c 1 3 || exit 9
  "$1" hostfile "$2" --format mpi -o /dev/null >/dev/null || exit 8
  [ -c /dev/null ] || { echo "/dev/null is no longer a character device"; exit 7; }
  [ "$(wc -c </dev/null)" -eq 0 ] || exit 6' sh "$cc" "$tmp/c.json"
expect 0 "-o /dev/stdout into a pipe" -- sh -c '"$1" hostfile "$2" --format mpi -o /dev/stdout | cat' \
  sh "$cc" "$tmp/c.json"
has "slots=1" "-o /dev/stdout prints the hostfile"
[ -L /dev/stdout ] || { echo "FAIL: /dev/stdout is no longer a link"; fail=1; }
# The link's target is an earlier MPI hostfile (a file of another kind is refused: README,
# "Files"), so it is written through the link.
printf 'old slots=1\n' >"$tmp/real.txt"
ln -s real.txt "$tmp/link.txt"
expect 0 "-o onto a symbolic link" -- "$cc" hostfile "$tmp/c.json" --format mpi -o "$tmp/link.txt"
[ -L "$tmp/link.txt" ] && grep -q "slots=1" "$tmp/real.txt" && ! grep -q "^old " "$tmp/real.txt" ||
  { echo "FAIL: -o onto a link: the link or its target is wrong"; fail=1; }
ln -s "$tmp/nowhere/x" "$tmp/dangling"
expect 2 "-o onto a dangling link" -- "$cc" hostfile "$tmp/c.json" --format mpi -o "$tmp/dangling"
has "symbolic link to a missing file" "dangling link refused"
mkfifo "$tmp/fifo"
expect 2 "-o onto a FIFO with no reader" -- "$cc" hostfile "$tmp/c.json" --format mpi -o "$tmp/fifo"
has "FIFO with no reader" "FIFO refused"
[ -p "$tmp/fifo" ] || { echo "FAIL: the FIFO was replaced"; fail=1; }
cat "$tmp/fifo" >"$tmp/fifo.out" &
reader=$!
expect 0 "-o onto a FIFO with a reader" -- "$cc" hostfile "$tmp/c.json" --format mpi -o "$tmp/fifo"
wait "$reader"
grep -q "slots=1" "$tmp/fifo.out" || { echo "FAIL: nothing came through the FIFO"; fail=1; }

# --- reads: only regular files below the cap -------------------------------------------------
truncate -s 100M "$tmp/big.yaml"
for input in "$tmp/fifo" /dev/zero "$tmp/big.yaml"; do
  expect 2 "job file $input" -- "$cc" launch "$input"
  has "$input: is " "job file $input named with what it is"
  expect 2 "cluster state $input" -- "$cc" verify-mesh "$input"
  has "$input: is " "cluster state $input named"
  expect 2 "inventory $input" -- "$cc" --inventory "$input" exec --hosts all -- true
  has "$input: is " "inventory $input named"
done

# --- job files: NUL bytes and an upload leaving the job directory ----------------------------
printf 'name: nul\nhosts: [local]\ncommand: [true]\nenv: {A: "x\\0y"}\n' >"$tmp/nul.yaml"
expect 2 "a NUL byte in an env value" -- "$cc" launch "$tmp/nul.yaml"
has "nul.yaml:4:" "NUL named with its line"
has "NUL byte" "NUL named"
printf 'name: nul\nhosts: [local]\ncommand: [true, "a\\0b"]\n' >"$tmp/nul2.yaml"
expect 2 "a NUL byte in an argument" -- "$cc" launch "$tmp/nul2.yaml"
has "NUL byte" "NUL in argv named"
echo hi >"$tmp/payload"
printf 'name: esc\nhosts: [local]\ncommand: [true]\nupload:\n  - {src: payload, dest: ../../../etc/x}\n' \
  >"$tmp/esc.yaml"
expect 2 "an upload dest leaving the job directory" -- "$cc" launch "$tmp/esc.yaml"
has "leaves the job directory" "escaping dest named"
[ -e /etc/x ] && { echo "FAIL: /etc/x exists"; fail=1; }
[ -d "$tmp/logs" ] && { echo "FAIL: a job that failed validation wrote logs"; fail=1; }

# --- state directory: private, or refused ----------------------------------------------------
mkdir -p "$tmp/open/clusterctl/jobs"
chmod 777 "$tmp/open/clusterctl/jobs"
expect 2 "a world-writable jobs directory" -- env XDG_STATE_HOME="$tmp/open" "$cc" jobs
has "$tmp/open/clusterctl/jobs: owned by uid 0 with mode 0777" "open state directory named"
mkdir -p "$tmp/foreign/clusterctl/jobs"
chown -R 65534:65534 "$tmp/foreign/clusterctl/jobs"
expect 2 "another user's jobs directory" -- env XDG_STATE_HOME="$tmp/foreign" "$cc" stop x
has "owned by uid 65534" "foreign state directory named"

# --- per-run logs: concurrent runs of one job keep their own files; links are not followed ---
for run in a b; do
  cat >"$tmp/twice-$run.yaml" <<YAML
name: twice
hosts: [local]
command: {shell: 'for i in 1 2 3 4 5; do echo "run \$RUN line \$i"; sleep 0.2; done'}
env: {RUN: $run}
logs: logs/twice
YAML
done
mkdir -p logs/twice
echo precious >"$tmp/precious"
ln -s "$tmp/precious" logs/twice/rank-0.out  # the old layout's file name, planted as a link
"$cc" launch twice-a.yaml >"$tmp/a.out" 2>&1 &
a=$!
"$cc" launch twice-b.yaml >"$tmp/b.out" 2>&1 &
b=$!
wait "$a" || { echo "FAIL: run a: $(cat "$tmp/a.out")"; fail=1; }
wait "$b" || { echo "FAIL: run b: $(cat "$tmp/b.out")"; fail=1; }
[ "$(cat "$tmp/precious")" = precious ] || { echo "FAIL: a log link was followed"; fail=1; }
runs=$(find logs/twice -mindepth 1 -maxdepth 1 -type d | wc -l)
[ "$runs" -eq 2 ] || { echo "FAIL: $runs run directories, want 2"; fail=1; }
for d in logs/twice/twice-*/; do
  lines=$(sort -u "$d/rank-0.out" | sed 's/ line.*//' | sort -u | wc -l)
  n=$(wc -l <"$d/rank-0.out")
  [ "$lines" -eq 1 ] && [ "$n" -eq 5 ] || { echo "FAIL: $d/rank-0.out mixes runs:"; cat "$d/rank-0.out"; fail=1; }
done
[ -L logs/twice/latest ] || { echo "FAIL: no logs/twice/latest link"; fail=1; }
expect 0 "logs of the newest run by name" -- "$cc" logs twice
has "line 5" "logs NAME shows the newest run"
echo "ok: two runs at once kept 2 log directories, 5 lines each, the planted link untouched"

# --- stop: a stale record whose pid was reused names another process -------------------------
# In a pid namespace, the launcher gets a small pid; once it is killed, ns_last_pid hands the
# same pid to an unrelated `sleep`, which `stop` must not signal.
cat >"$tmp/long.yaml" <<'YAML'
name: long
hosts: [local]
command: [sleep, "300"]
logs: logs/long
YAML
expect 0 "stop after the launcher's pid was reused" -- unshare -pf --mount-proc sh -c '
  cc=$1
  id=$("$cc" launch --detach long.yaml 2>/dev/null) || { echo "launch failed"; exit 9; }
  rec=$XDG_STATE_HOME/clusterctl/jobs/$id.json
  pid=$(sed -n "s/.*\"pid\": \([0-9]*\).*/\1/p" "$rec" | head -n 1)
  [ -n "$pid" ] || { echo "no pid in $rec"; exit 9; }
  kill -9 "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  # The rank'"'"'s watchdog ends it, removes its job directory and exits (its checker may still
  # fork a ps or a sleep after the directory is gone): wait until this shell (pid 1) is the
  # namespace'"'"'s only process, so that the next process started is the one given the pid. The
  # glob runs inside the shell, and the foreground sleep has exited when it is read.
  n=0
  while set -- /proc/[0-9]*; [ "$#" -gt 1 ] && [ "$n" -lt 300 ]; do
    sleep 0.1; n=$((n + 1))
  done
  [ "$#" -eq 1 ] || { echo "processes left in the namespace after 30 s: $*"; ps -ef; exit 9; }
  echo $((pid - 1)) >/proc/sys/kernel/ns_last_pid
  sleep 300 &
  victim=$!
  [ "$victim" -eq "$pid" ] || { echo "pid $pid not reused (got $victim)"; exit 9; }
  "$cc" stop "$id"; rc=$?
  kill -0 "$victim" 2>/dev/null || { echo "stop signalled the unrelated pid $victim"; exit 8; }
  kill "$victim"
  [ "$rc" -eq 1 ] || { echo "stop exit $rc, want 1"; exit 7; }' sh "$cc"
has "is gone; its record is stale" "stale record named"

# --- janitor: kill -9 during an upload leaves a job directory; the next launch removes it ----
truncate -s 1500M "$tmp/weights.bin"
cat >"$tmp/up.yaml" <<'YAML'
name: upkill
hosts: [local]
command: [true]
logs: logs/upkill
upload:
  - {src: weights.bin, dest: weights.bin}
YAML
"$cc" launch up.yaml >/dev/null 2>&1 &
launcher=$!
left=
# Up to 30 s: the job directory is made once launch has checked the job, which a loaded
# machine may take longer than the 4 s this waited for (then "no job directory" was reported).
for _ in $(seq 1 3000); do
  left=$(ls -d /tmp/clusterctl-job-upkill-* 2>/dev/null | head -n 1)
  [ -n "$left" ] && break
  sleep 0.01
done
kill -9 "$launcher"
wait "$launcher" 2>/dev/null
if [ -z "$left" ] || [ ! -d "$left" ]; then
  echo "FAIL: no job directory appeared to be left by the killed launcher"; fail=1
else
  printf 'name: upkill\nhosts: [local]\ncommand: [true]\nlogs: logs/upkill\n' >"$tmp/up2.yaml"
  expect 0 "a later launch to the same host" -- "$cc" launch up2.yaml
  has "left by launchers that are gone" "the janitor says what it removed"
  has "$left" "the janitor names the directory"
  [ -e "$left" ] && { echo "FAIL: $left is still there"; fail=1; }
fi
rm -f "$tmp/weights.bin"

# --- another user plants a job directory for the janitor ------------------------------------
# nobody (uid 65534) makes a directory named like ours, with a launcher record naming a dead
# launcher of this machine and a pid file aimed at a root process with its true start time.
# The janitor (launch and jobs --gc) must leave both alone: the directory is not ours.
sleep 300 &
victim=$!
evil=/tmp/clusterctl-job-evil-$$-h0
setpriv --reuid=65534 --regid=65534 --clear-groups sh -c '
  umask 022; mkdir "$1" && printf "%s 999999 x evil\n" "$(uname -n)" >"$1/launcher" &&
  printf "%s %s\n" "$2" "$(ps -o lstart= -p "$2" | tr -s " " | sed "s/^ //; s/ $//")" >"$1/rank-0.pid"' \
  sh "$evil" "$victim" || { echo "FAIL: nobody could not plant $evil"; fail=1; }
expect 0 "a launch beside another user's planted directory" -- "$cc" launch up2.yaml
expect 0 "jobs --gc beside another user's planted directory" -- "$cc" jobs --gc --hosts local
kill -0 "$victim" 2>/dev/null || { echo "FAIL: the janitor killed root's process $victim"; fail=1; }
[ -d "$evil" ] || { echo "FAIL: the janitor removed another user's directory"; fail=1; }
kill "$victim"; wait "$victim" 2>/dev/null
rm -rf "$evil"
leftover=$(ls -d /tmp/clusterctl-job-upkill-* /tmp/clusterctl-job-twice-* /tmp/clusterctl-job-long-* 2>/dev/null)
[ -z "$leftover" ] || { echo "FAIL: job directories left: $leftover"; fail=1; }

exit "$fail"
