#!/usr/bin/env bash
# A 4-host lab answers over SSH with 4 distinct hostnames (clusterctl exec and plain OpenSSH
# with the lab's ssh_config); `lab status` tracks sshd; a host whose sshd is killed is reported
# by exec (exit 3) while the other three still answer.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
name=ctl4${CLUSTERCTL_TEST_SUFFIX:-}  # unique per build tree: labs are machine-wide
down_on_exit "$name"
dir=$(labdir "$name")

"$CLUSTERCTL" lab up --hosts 4 --name "$name"

# Plain OpenSSH with the lab's files (strict host key checking against its known_hosts).
for h in h1 h4; do
  got=$(ssh -F "$dir/ssh_config" -o BatchMode=yes -o ConnectTimeout=5 "$h" uname -n)
  [ "$got" = "$h" ] || fail "ssh $h uname -n printed '$got'"
done

out=$("$CLUSTERCTL" --lab "$name" --json exec --hosts all -- uname -n)
python3 - "$out" <<'PY'
import json, sys
res = json.loads(sys.argv[1])
names = {r["host"]: r["stdout"].strip() for r in res}
assert all(r["exit_status"] == 0 and r["error"] is None for r in res), res
assert names == {"h1": "h1", "h2": "h2", "h3": "h3", "h4": "h4"}, names
print("exec: 4 distinct names", sorted(names.values()))
PY
"$CLUSTERCTL" lab status --name "$name" || fail "lab status of a healthy lab exited $?"

pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hosts"][1]["sshd_pid"])' \
  "$dir/lab.json")
kill -TERM "$pid"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done

rc=0
out=$("$CLUSTERCTL" --lab "$name" --json exec --hosts all -- uname -n) || rc=$?
[ "$rc" -eq 3 ] || fail "exec with h2's sshd down exited $rc, expected 3"
python3 - "$out" <<'PY'
import json, sys
res = {r["host"]: r for r in json.loads(sys.argv[1])}
assert res["h2"]["error"], res["h2"]
for h in ("h1", "h3", "h4"):
    assert res[h]["exit_status"] == 0 and res[h]["stdout"].strip() == h, res[h]
print("exec: h2 error:", res["h2"]["error"].splitlines()[0])
PY

rc=0
"$CLUSTERCTL" lab status --name "$name" || rc=$?
[ "$rc" -eq 1 ] || fail "lab status with h2's sshd down exited $rc, expected 1"
rc=0
st=$("$CLUSTERCTL" lab status --name "$name" --json) || rc=$?
[ "$rc" -eq 1 ] || fail "lab status --json with h2's sshd down exited $rc, expected 1"
python3 - "$st" <<'PY'
import json, sys
st = json.loads(sys.argv[1])
assert st["ok"] is False
assert [h["sshd"] for h in st["hosts"]] == ["running", "down", "running", "running"], st
assert [len(h["ports"]) for h in st["hosts"]] == [3, 3, 3, 3], st
PY

"$CLUSTERCTL" lab down --name "$name"
rc=0
"$CLUSTERCTL" lab status --name "$name" 2>/dev/null || rc=$?
[ "$rc" -eq 2 ] || fail "lab status of a removed lab exited $rc, expected 2"
echo "PASS"
