#!/usr/bin/env bash
# Ctrl-C (SIGINT) or SIGTERM during discover and collect, while one host's sshd does not answer
# (stopped: the kernel accepts the connection, no SSH banner ever comes) and the others have
# answered: exit 130 within seconds, not at the connect timeout; one line saying it was
# interrupted, naming the signal (`interrupted (Ctrl-C)`, `terminated (SIGTERM)`); and nothing
# of the partial probe: the state file given to -o is left as it was (no temporary file beside
# it), nothing on stdout, a bundle without its cluster.json, and no bundle called incomplete
# when nothing was collected (README, "Exit codes": 130 interrupted, cleanup has run).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
name=ctldint${CLUSTERCTL_TEST_SUFFIX:-}
tmp=$(mktemp -d)
stopped=""
trap '[ -z "$stopped" ] || kill -CONT "$stopped" 2>/dev/null || true
  rm -rf "$tmp"; "$CLUSTERCTL" lab down --name "$name" >/dev/null 2>&1 || true' EXIT
json=$(labdir "$name")/lab.json

"$CLUSTERCTL" lab up --name "$name" --hosts 3 >/dev/null
mkdir "$tmp/state"
"$CLUSTERCTL" --lab "$name" discover -o "$tmp/state/cluster.json" >/dev/null ||
  fail "discover on a healthy lab exited $?"
cp "$tmp/state/cluster.json" "$tmp/before.json"
# The files of the state directory (not the directory's own times: the output check made and
# removed a probe file there before any host was asked, util::check_output_path).
listing() { find "$tmp/state" -mindepth 1 -printf '%P %i %s %T@\n' | sort; }
before=$(listing)

stopped=$(python3 -c 'import json,sys; print([h for h in json.load(open(sys.argv[1]))["hosts"] if h["name"] == "h2"][0]["sshd_pid"])' "$json")
kill -STOP "$stopped"

# interrupt SIGNAL OUT ERR -- CMD...: runs CMD, sends SIGNAL once h1 and h3 have had time to
# answer (3 s), or once the command `$ready` succeeds (polled for up to 60 s: what the checks
# after it need, however slow the machine), and sets rc to its exit status; fails when it is
# still running 15 s later. With $again set, a CMD that ends before the signal could be sent
# sets rc to -1 instead of failing (the caller runs it again).
interrupt() {
  local sig=$1 out=$2 err=$3 pid start
  shift 4
  "$@" >"$out" 2>"$err" &
  pid=$!
  if [ -n "${ready:-}" ]; then
    for _ in $(seq 3000); do
      $ready && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.02
    done
  else
    sleep 3
  fi
  if ! kill -0 "$pid" 2>/dev/null || { [ -n "${ready:-}" ] && ! $ready; }; then
    if [ -n "${again:-}" ] && ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid" || true
      rc=-1
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || fail "$* ended before $sig (h2 was meant to hang it): $(cat "$err")"
    fail "$*: not ready for $sig ($ready) within 60 s: $(cat "$err")"
  fi
  start=$(now_ms)
  kill "-$sig" "$pid"
  while kill -0 "$pid" 2>/dev/null; do
    if [ $(($(now_ms) - start)) -gt 15000 ]; then
      kill -KILL "$pid" 2>/dev/null || true
      fail "$* still running 15 s after $sig: $(cat "$err")"
    fi
    sleep 0.1
  done
  rc=0
  wait "$pid" || rc=$?
  echo "$* after $sig: exit $rc in $(($(now_ms) - start)) ms"
}

interrupt INT "$tmp/out" "$tmp/err" -- \
  "$CLUSTERCTL" --lab "$name" --connect-timeout 60 discover -o "$tmp/state/cluster.json"
[ "$rc" -eq 130 ] || fail "discover -o after Ctrl-C exited $rc, want 130: $(cat "$tmp/err")"
grep -qxF "clusterctl discover: interrupted (Ctrl-C); nothing written to $tmp/state/cluster.json" \
  "$tmp/err" || fail "no interrupted line: $(cat "$tmp/err")"
cmp -s "$tmp/before.json" "$tmp/state/cluster.json" ||
  fail "the state file was replaced by an interrupted discover"
[ "$before" = "$(listing)" ] || fail "the state directory changed: $before -> $(listing)"
[ ! -s "$tmp/out" ] || fail "an interrupted discover printed a report: $(cat "$tmp/out")"

interrupt TERM "$tmp/out" "$tmp/err" -- \
  "$CLUSTERCTL" --lab "$name" --connect-timeout 60 --json discover
[ "$rc" -eq 130 ] || fail "discover --json after SIGTERM exited $rc, want 130: $(cat "$tmp/err")"
# Named as the signal that came (it said "interrupted (Ctrl-C)" of a SIGTERM).
grep -qxF "clusterctl discover: terminated (SIGTERM); nothing shown" "$tmp/err" ||
  fail "no terminated line: $(cat "$tmp/err")"
[ ! -s "$tmp/out" ] || fail "an interrupted discover --json printed a state: $(cat "$tmp/out")"

# Once h1's outputs are in the bundle (a fixed 3 s could come before, on a loaded machine).
h1_collected() { [ -s "$tmp/bundle/h1/uname_-s.out" ]; }
ready=h1_collected interrupt INT "$tmp/out" "$tmp/err" -- \
  "$CLUSTERCTL" --lab "$name" --connect-timeout 60 collect -o "$tmp/bundle"
[ "$rc" -eq 130 ] || fail "collect after Ctrl-C exited $rc, want 130: $(cat "$tmp/err")"
grep -qxF "clusterctl collect: interrupted (Ctrl-C); the bundle in $tmp/bundle is incomplete" \
  "$tmp/err" || fail "no interrupted line: $(cat "$tmp/err")"
[ ! -e "$tmp/bundle/cluster.json" ] || fail "an interrupted collect wrote cluster.json"
[ -s "$tmp/bundle/h1/uname_-s.out" ] || fail "collect had not reached h1 before Ctrl-C"
[ ! -s "$tmp/out" ] || fail "an interrupted collect printed a report: $(cat "$tmp/out")"
# Before any host answered: no bundle to call incomplete (it said "the bundle in DIR is
# incomplete" of a directory that was not there).
interrupt INT "$tmp/out" "$tmp/err" -- \
  "$CLUSTERCTL" --lab "$name" --connect-timeout 60 collect --hosts h2 -o "$tmp/bundle2"
[ "$rc" -eq 130 ] || fail "collect --hosts h2 after Ctrl-C exited $rc, want 130: $(cat "$tmp/err")"
grep -qxF "clusterctl collect: interrupted (Ctrl-C); nothing was collected into $tmp/bundle2" \
  "$tmp/err" || fail "no interrupted line: $(cat "$tmp/err")"
[ -z "$(ls -A "$tmp/bundle2" 2>/dev/null)" ] || fail "collect of nothing left files: $(ls -A "$tmp/bundle2")"

# Interrupted while every host is still probing (h2 answers again): the probe's directory
# (/tmp/clusterctl-probe.XXXXXX on each host; the lab's hosts share this machine's /tmp) is
# removed on every host, by the remote shell's own trap (it was left behind: the remote shell
# was killed with SIGKILL, so its EXIT trap never ran). Other people's probes may come and go
# in /tmp meanwhile: only directories that were not there before and are still there 5 s
# later (a probe lasts about 2 s) count. The signal comes once a probe directory is there (it
# came 0.7 s after the start: on a loaded machine before any probe had begun, and then there
# was nothing to leave behind).
kill -CONT "$stopped"
stopped=""
probes() { find /tmp -maxdepth 1 -name 'clusterctl-probe.*' -type d 2>/dev/null | sort; }
# A probe lasts about 2 s: one missed (the machine busy elsewhere) is tried again.
probing() { [ -n "$(comm -13 <(echo "$before_probes") <(probes))" ]; }
for sig in INT TERM; do
  for try in 1 2 3 4 5; do
    before_probes=$(probes)
    again=1 ready=probing interrupt "$sig" "$tmp/out" "$tmp/err" -- \
      "$CLUSTERCTL" --lab "$name" --connect-timeout 60 discover
    [ "$rc" -ne -1 ] && break
    echo "discover ended before a probe directory was seen (try $try); again"
  done
  [ "$rc" -ne -1 ] || fail "discover ended before a probe directory was seen, 5 times"
  [ "$rc" -eq 130 ] || fail "discover after $sig while probing exited $rc, want 130: $(cat "$tmp/err")"
  left=""
  for _ in $(seq 50); do
    left=$(comm -13 <(echo "$before_probes") <(probes))
    [ -n "$left" ] || break
    sleep 0.1
  done
  [ -z "$left" ] || fail "discover interrupted by $sig left probe directories behind: $(
    for d in $left; do echo "$d: $(ls "$d" | head -3 | tr '\n' ' ')"; done)"
done
echo "PASS"
