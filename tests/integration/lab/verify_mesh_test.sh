#!/usr/bin/env bash
# verify-mesh on live lab hosts :
#  - a full 4-host mesh: exit 0, "full mesh", 6 of 6 pairs;
#  - 5 hosts without h2-h4 and with a second h1-h3: exit 1, h2-h4 missing, h1-h3 multi-rail, and a
#    cabling plan whose ports are really free (lab.json's free_ports, and no carrier on the host);
#  - the same from a saved cluster state file, and --dot naming the missing pair;
#  - --expect-hosts 6 on 5 hosts fails; a host down gives exit 3.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
name=ctlmesh${CLUSTERCTL_TEST_SUFFIX:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; "$CLUSTERCTL" lab down --name "$name" >/dev/null 2>&1 || true' EXIT
json=$(labdir "$name")/lab.json

"$CLUSTERCTL" lab up --name "$name" --hosts 4 >/dev/null
"$CLUSTERCTL" --lab "$name" verify-mesh >"$tmp/out" || fail "full mesh: exit $?: $(cat "$tmp/out")"
head -1 "$tmp/out" | grep -q "^4 hosts, 6 of 6 cables: full mesh" || fail "summary: $(head -1 "$tmp/out")"
"$CLUSTERCTL" lab down --name "$name" >/dev/null

"$CLUSTERCTL" lab up --name "$name" --hosts 5 --omit h2-h4 --extra h1-h3 >/dev/null
set +e
"$CLUSTERCTL" --lab "$name" --json verify-mesh >"$tmp/report.json"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "omit/extra: exit $rc, want 1"
python3 - "$tmp/report.json" "$json" <<'PY' || fail "omit/extra report"
import json, subprocess, sys
r = json.load(open(sys.argv[1]))
lab = json.load(open(sys.argv[2]))
assert r["schema"] == "clusterctl.verify-mesh/1", r["schema"]
assert r["exit_code"] == 1
missing = [f for f in r["findings"] if f["check"] == "missing-cable"]
assert [f["hosts"] for f in missing] == [["h2", "h4"]], missing
assert missing[0]["severity"] == "fail"
multi = [f for f in r["findings"] if f["check"] == "multi-rail"]
assert [f["hosts"] for f in multi] == [["h1", "h3"]], multi
assert r["summary"]["pairs_cabled"] == 9 and r["summary"]["cables"] == 10, r["summary"]
steps = r["plan"]["steps"]
assert len(steps) == 1 and steps[0]["action"] == "plug", steps
free = {h["name"]: h.get("free_ports", []) for h in lab["hosts"]}
ns = {h["name"]: h["namespace"] for h in lab["hosts"]}
for end in (steps[0]["a"], steps[0]["b"]):
    assert end["host"] in ("h2", "h4"), end
    assert end["interface"] in free[end["host"]], (end, free)
    link = json.loads(subprocess.run(["ip", "-j", "-n", ns[end["host"]], "link", "show",
                                      end["interface"]], check=True, capture_output=True,
                                     text=True).stdout)[0]
    assert "LOWER_UP" not in link["flags"], (end, link["flags"])  # no cable in it
print("plan:", steps[0]["text"])
PY

"$CLUSTERCTL" --lab "$name" discover -o "$tmp/c5.json" >/dev/null
set +e
"$CLUSTERCTL" verify-mesh "$tmp/c5.json" >"$tmp/out"; rc=$?
"$CLUSTERCTL" verify-mesh "$tmp/c5.json" --dot >"$tmp/mesh.dot"; rc_dot=$?
"$CLUSTERCTL" verify-mesh "$tmp/c5.json" --expect-hosts 6 >"$tmp/out6"; rc6=$?
set -e
[ "$rc" -eq 1 ] || fail "from the state file: exit $rc"
grep -q "h2 and h4 have no direct cable" "$tmp/out" || fail "text report: $(cat "$tmp/out")"
grep -q "plug h2 tb4 into h4 tb4" "$tmp/out" || fail "plan text: $(cat "$tmp/out")"
[ "$rc_dot" -eq 1 ] || fail "--dot: exit $rc_dot"
grep -q '"h2" -- "h4" \[style=dashed' "$tmp/mesh.dot" || fail "dot: $(cat "$tmp/mesh.dot")"
[ "$rc6" -eq 1 ] && grep -q "host-count" "$tmp/out6" || fail "--expect-hosts 6: exit $rc6"

pid=$(python3 -c 'import json,sys; print([h for h in json.load(open(sys.argv[1]))["hosts"] if h["name"] == "h3"][0]["sshd_pid"])' "$json")
kill_and_wait "$pid"
set +e
"$CLUSTERCTL" --lab "$name" --connect-timeout 3 verify-mesh >"$tmp/out" 2>&1; rc=$?
set -e
[ "$rc" -eq 3 ] || fail "h3 down: exit $rc, want 3: $(cat "$tmp/out")"
grep -q "h3" "$tmp/out" || fail "h3 not named: $(cat "$tmp/out")"
echo "verify-mesh: ok"
