#!/usr/bin/env bash
# clusterctl health on a live 4-host lab :
#  - after `network apply`, --quick passes every check (exit 0) and its time is printed;
#  - the --junit file is well-formed (xmllint) and counts the same results as --json;
#  - the default level measures all 6 cables and saves a baseline; --full adds the all_reduce;
#  - `ip link set down` on one cable end: that cable FAILs naming both hosts and ports, every
#    other check passes, exit 1, and the JUnit file says the same;
#  - a cable slowed down (tc) is reported as below its baseline;
#  - a host without sshd: exit 3, named, its one FAIL; its cables SKIP naming it (JSON and JUnit).
set -euo pipefail
source "$(dirname "$0")/../lab/lib.sh"
name=hc${CLUSTERCTL_TEST_SUFFIX:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; "$CLUSTERCTL" lab down --name "$name" >/dev/null 2>&1 || true' EXIT
limits=$HERE/../../../templates/health-thresholds-lab.yaml
"$CLUSTERCTL" lab up --name "$name" --hosts 4 >/dev/null
ns() { echo "cc-$name-$1"; }
"$CLUSTERCTL" --lab "$name" network apply >/dev/null || fail "network apply exited $?"
"$CLUSTERCTL" --lab "$name" discover -o "$tmp/c.json" >/dev/null
"$CLUSTERCTL" --lab "$name" network plan "$tmp/c.json" >/dev/null
health() { "$CLUSTERCTL" --lab "$name" health "$tmp/c.json" --remote-clusterctl "$CLUSTERCTL" "$@"; }

# JSON counts and JUnit counts of one run: "results fails" from each.
json_counts() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(len(j["results"]), j["counts"]["fail"])' "$1"; }
junit_counts() {
  xmllint --noout "$1" || fail "$1 is not well-formed XML"
  echo "$(xmllint --xpath 'count(//testcase)' "$1") $(xmllint --xpath 'count(//testcase/failure)' "$1")"
}

# 1. A healthy lab: every quick check passes, well within 5 s.
t0=$(now_ms)
rc=0
health --quick --json --junit "$tmp/quick.xml" >"$tmp/quick.json" || rc=$?
t1=$(now_ms)
echo "health --quick on 4 hosts: $((t1 - t0)) ms (goal: under 5000 ms)"
[ "$rc" -eq 0 ] || fail "quick on a healthy lab exited $rc: $(cat "$tmp/quick.json")"
python3 - "$tmp/quick.json" <<'PY' || fail "quick results: $(cat "$tmp/quick.json")"
import json, sys
j = json.load(open(sys.argv[1]))
bad = [r for r in j["results"] if r["status"] != "PASS"]
assert not bad, bad
assert j["counts"] == {"pass": 50, "warn": 0, "fail": 0, "interrupted": 0, "skip": 0}, j["counts"]   # 4 x 8 + 6 x 3
assert [v["clusterctl"] for v in j["versions"]] == [j["clusterctl_version"]] * 4, j["versions"]
PY
[ "$(junit_counts "$tmp/quick.xml")" = "$(json_counts "$tmp/quick.json")" ] ||
  fail "junit $(junit_counts "$tmp/quick.xml") vs json $(json_counts "$tmp/quick.json")"
[ "$((t1 - t0))" -lt 15000 ] || fail "--quick took $((t1 - t0)) ms (goal 5000; bound here 15000)"

# 2. The default level measures every cable (in rounds of cables sharing no host) and saves a
#    baseline; --full adds the all_reduce, data checked.
health --thresholds "$limits" --baseline "$tmp/base.json" --save-baseline >"$tmp/default.txt" ||
  fail "default level exited $?: $(cat "$tmp/default.txt")"
grep -E '^    PASS  (latency|bandwidth) ' "$tmp/default.txt"
[ "$(grep -cE '^    PASS  (latency|bandwidth|data) ' "$tmp/default.txt")" -eq 18 ] ||
  fail "default level: $(cat "$tmp/default.txt")"
grep -q "^baseline saved: $tmp/base.json (6 cables)" "$tmp/default.txt" || fail "no baseline"
health --full --thresholds "$limits" --baseline "$tmp/base.json" >"$tmp/full.txt" ||
  fail "full level exited $?: $(cat "$tmp/full.txt")"
grep -E 'all-reduce' "$tmp/full.txt"
grep -qE '^    PASS  all-reduce-data +0 wrong' "$tmp/full.txt" || fail "full: $(cat "$tmp/full.txt")"
grep -qE '^    PASS  all-reduce-busbw ' "$tmp/full.txt" || fail "full: $(cat "$tmp/full.txt")"

# The kernel reports a veth end's carrier asynchronously (linkwatch): once one end is set down
# or up, the other end's carrier follows a moment later. A check run before then sees a state
# that depends on how fast the machine is (h1 tb2 still with carrier; the cable not yet up for
# the bandwidth run), so each step waits for the state it means: until HOST PORT has (up) or
# lacks (down) carrier, within 10 s.
wait_carrier() {  # wait_carrier HOST PORT up|down
  local want=$3 now
  for _ in $(seq 200); do
    now=down  # LOWER_UP: the link has carrier
    ip -n "$(ns "$1")" -o link show "$2" | grep -q 'LOWER_UP' && now=up
    [ "$now" = "$want" ] && return 0
    sleep 0.05
  done
  fail "$1 $2: carrier not $want within 10 s"
}

# 3. One cable end down (h3's end of h1-h3): that cable FAILs, naming both ends; the rest pass.
ip -n "$(ns h3)" link set tb1 down
wait_carrier h1 tb2 down
rc=0
health --quick --json --junit "$tmp/down.xml" >"$tmp/down.json" || rc=$?
[ "$rc" -eq 1 ] || fail "quick with a cable down exited $rc"
python3 - "$tmp/down.json" <<'PY' || fail "down results: $(cat "$tmp/down.json")"
import json, sys
j = json.load(open(sys.argv[1]))
bad = [r for r in j["results"] if r["status"] != "PASS"]
assert len(bad) == 1, bad
r = bad[0]
assert (r["status"], r["scope"], r["subject"], r["check"]) == ("FAIL", "cable", "h1:tb2-h3:tb1", "link-up"), r
assert r["detail"] == "cable h1 tb2 - h3 tb1 is down: h1 tb2: no carrier; h3 tb1: administratively down", r
PY
[ "$(junit_counts "$tmp/down.xml")" = "50 1" ] || fail "junit with a cable down: $(junit_counts "$tmp/down.xml")"
[ "$(xmllint --xpath 'string(//testsuite[testcase/failure]/@name)' "$tmp/down.xml")" = "cable h1:tb2-h3:tb1" ] ||
  fail "junit failure in the wrong suite"
ip -n "$(ns h3)" link set tb1 up
wait_carrier h3 tb1 up
wait_carrier h1 tb2 up

# 4. A cable slowed to a trickle on one end: below its baseline, named.
ip netns exec "$(ns h1)" tc qdisc add dev tb1 root tbf rate 200mbit burst 64kb latency 50ms
rc=0
health --thresholds "$limits" --baseline "$tmp/base.json" >"$tmp/slow.txt" || rc=$?
ip netns exec "$(ns h1)" tc qdisc del dev tb1 root
[ "$rc" -eq 1 ] || fail "a slowed cable exited $rc: $(cat "$tmp/slow.txt")"
grep -E 'below baseline' "$tmp/slow.txt"
grep -qE '^          cable h1:tb1-h2:tb1 bandwidth [0-9]+% below baseline' "$tmp/slow.txt" ||
  fail "slowed cable: $(cat "$tmp/slow.txt")"
[ "$(grep -c '^    FAIL' "$tmp/slow.txt")" -eq 1 ] || fail "more than one failure: $(cat "$tmp/slow.txt")"

# 5. A host whose sshd is gone: exit 3, the host and its cables named; the rest still checked.
# (Waited for: an sshd still accepting when health connects made h4 reachable.)
# shellcheck disable=SC2046
kill_and_wait $(ip netns pids "$(ns h4)")
rc=0
health --quick --connect-timeout 3 --json --junit "$tmp/gone.xml" >"$tmp/gone.json" || rc=$?
[ "$rc" -eq 3 ] || fail "an unreachable host exited $rc"
python3 - "$tmp/gone.json" <<'PY' || fail "unreachable results: $(cat "$tmp/gone.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["unreachable"] == ["h4"], j["unreachable"]
bad = sorted((r["status"], r["subject"], r["check"]) for r in j["results"] if r["status"] != "PASS")
assert bad == [("FAIL", "h4", "reachable"), ("SKIP", "h1:tb3-h4:tb1", "link-up"),
               ("SKIP", "h2:tb3-h4:tb2", "link-up"), ("SKIP", "h3:tb3-h4:tb3", "link-up")], bad
assert all("h4 not probed" in r["detail"] for r in j["results"] if r["status"] == "SKIP"), j
assert j["counts"]["fail"] == 1 and j["counts"]["skip"] == 3, j["counts"]
PY
[ "$(junit_counts "$tmp/gone.xml")" = "$(json_counts "$tmp/gone.json")" ] ||
  fail "junit $(junit_counts "$tmp/gone.xml") vs json $(json_counts "$tmp/gone.json")"
[ "$(xmllint --xpath 'count(//testcase/skipped)' "$tmp/gone.xml")" = 3 ] || fail "junit: not 3 skipped"
echo "health: ok"
