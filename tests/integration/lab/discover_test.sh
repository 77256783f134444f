#!/usr/bin/env bash
# discover and collect on live lab hosts, compared with the lab's own records (check_discover.py;
# discovery itself never reads them):
#  - a 4-host mesh: 4 hosts, 6 cables with the right port pairs, seen from both ends;
#  - --hosts h1,h3: two hosts and their one cable;
#  - collect -o DIR, then discover --from DIR: the same hosts and cables, offline (machine IDs
#    and SSH host keys too: the bundle keeps each host's key in ssh-host-key);
#  - two hosts cloned from one image (h3 given h1's /etc/machine-id): exit 2, both named, the
#    machine ID named, and how to give one of them its own;
#  - a 5-host mesh without h2-h4 and with a second h1-h3: 10 cables, h2 and h4 with a free port;
#  - a host whose sshd is gone: exit 3, its error named, the other hosts still discovered.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
name=ctldisc${CLUSTERCTL_TEST_SUFFIX:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; "$CLUSTERCTL" lab down --name "$name" >/dev/null 2>&1 || true' EXIT
json=$(labdir "$name")/lab.json

"$CLUSTERCTL" lab up --name "$name" --hosts 4 >/dev/null
"$CLUSTERCTL" --lab "$name" discover -o "$tmp/c4.json" >"$tmp/out" ||
  fail "discover on a healthy 4-host lab exited $?: $(cat "$tmp/out")"
python3 "$HERE/check_discover.py" "$json" "$tmp/c4.json" || fail "4-host mesh"
grep -q "^4 hosts, 6 cables" "$tmp/out" || fail "summary line: $(tail -3 "$tmp/out")"

"$CLUSTERCTL" --lab "$name" --json discover --hosts h1,h3 >"$tmp/c13.json"
python3 "$HERE/check_discover.py" "$json" "$tmp/c13.json" --hosts h1,h3 || fail "--hosts h1,h3"

"$CLUSTERCTL" --lab "$name" collect -o "$tmp/bundle" >/dev/null || fail "collect exited $?"
[ -s "$tmp/bundle/h2/uname_-s.out" ] || fail "collect wrote no uname output for h2"
[ -s "$tmp/bundle/cluster.json" ] || fail "collect wrote no cluster.json"
if "$CLUSTERCTL" --lab "$name" collect -o "$tmp/bundle" >/dev/null 2>"$tmp/err"; then
  fail "collect into a non-empty directory succeeded"
fi
grep -q "not empty" "$tmp/err" || fail "collect into a non-empty dir: $(cat "$tmp/err")"
"$CLUSTERCTL" discover --from "$tmp/bundle" -o "$tmp/replayed.json" >/dev/null ||
  fail "discover --from exited $?"
python3 - "$tmp/c4.json" "$tmp/replayed.json" <<'PY' || fail "discover --from differs from live"
import json, sys
live, replayed = (json.load(open(p)) for p in sys.argv[1:])
for k in ("cables", "problems"):
    assert live[k] == replayed[k], (k, live[k], replayed[k])
strip = lambda hosts: [{k: v for k, v in h.items() if k != "management_address"} for h in hosts]
assert strip(live["hosts"]) == strip(replayed["hosts"])
PY

[ -s "$tmp/bundle/h2/ssh-host-key" ] || fail "collect kept no host key for h2"

# A clone: h3's /etc/machine-id becomes h1's (written in place: sshd's mount namespace bound
# this very file over /etc/machine-id when the lab started it).
h1_id=$(python3 -c 'import json,sys; print([h for h in json.load(open(sys.argv[1]))["hosts"] if h["name"] == "h1"][0]["machine_id"])' "$json")
h3_ns=$(python3 -c 'import json,sys; print([h for h in json.load(open(sys.argv[1]))["hosts"] if h["name"] == "h3"][0]["namespace"])' "$json")
printf '%s\n' "$h1_id" >"/etc/netns/$h3_ns/machine-id"
set +e
"$CLUSTERCTL" --lab "$name" discover -o "$tmp/clone.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "discover with h3 a clone of h1 exited $rc, want 2: $(cat "$tmp/err")"
grep -qF "h1 and h3 are the same machine (both have machine ID $h1_id (/etc/machine-id))" \
  "$tmp/err" || fail "the clone is not named: $(cat "$tmp/err")"
grep -qF "sudo systemd-machine-id-setup" "$tmp/err" || fail "no advice for clones: $(cat "$tmp/err")"
[ ! -e "$tmp/clone.json" ] || fail "a cluster state was written for a cluster with a clone"

"$CLUSTERCTL" lab down --name "$name" >/dev/null
"$CLUSTERCTL" lab up --name "$name" --hosts 5 --omit h2-h4 --extra h1-h3 >/dev/null
"$CLUSTERCTL" --lab "$name" discover -o "$tmp/c5.json" >/dev/null || fail "5-host discover"
python3 "$HERE/check_discover.py" "$json" "$tmp/c5.json" || fail "5-host mesh, omit and extra"

pid=$(python3 -c 'import json,sys; print([h for h in json.load(open(sys.argv[1]))["hosts"] if h["name"] == "h2"][0]["sshd_pid"])' "$json")
kill_and_wait "$pid"
set +e
"$CLUSTERCTL" --lab "$name" --connect-timeout 3 discover -o "$tmp/down.json" >"$tmp/out" 2>&1
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "discover with h2 down exited $rc, want 3: $(cat "$tmp/out")"
grep -q "^  h2: " "$tmp/out" || fail "h2's error is not reported: $(cat "$tmp/out")"
python3 - "$tmp/down.json" <<'PY' || fail "the cluster state without h2"
import json, sys
s = json.load(open(sys.argv[1]))
assert [h["host"] for h in s["hosts"]] == ["h1", "h3", "h4", "h5"], s["hosts"]
assert [p["host"] for p in s["problems"]] == ["h2"] and s["problems"][0]["exit_code"] == 3
# h1-h3 twice, h1-h4, h1-h5, h3-h4, h3-h5, h4-h5: every cable not involving h2
assert len(s["cables"]) == 7, s["cables"]
PY
echo "discover: ok"
