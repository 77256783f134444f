#!/usr/bin/env bash
# Host identity (one machine under two names) through the real binary, on the linux-two-names support bundle
# (tests/data/bundles/make-linux-two-names.py): gpu1 and gpu1-ts are one Linux machine reached
# over two addresses, without Thunderbolt; gpu2 is another machine.
#  - discover --from: exit 2, both named, with the evidence (machine ID, SSH host key) and how
#    to give a clone its own; no cluster state written.
#  - --hosts gpu1,gpu2: exit 0, each host's machine_id and ssh_host_key as recorded.
#  - collect from it: the host key kept in the new bundle (ssh-host-key).
#  - a state file listing the machine twice: verify-mesh exits 2 naming both JSON paths.
#  - a state file written before the identity fields (none of them): still read (exit 1 there,
#    no full mesh; never 2).
set -euo pipefail
cc=${CLUSTERCTL:?set CLUSTERCTL to the clusterctl binary}
bundle="$(cd "$(dirname "$0")" && pwd)/data/bundles/linux-two-names"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
id1=4c0e2b6f9a1d4e3f8b7a6c5d4e3f2a1b
key1=SHA256:Zk3r8pQwVh2mB9xTn4LsYc7uJd1eGf6aHk0oPi5vRtE

set +e
"$cc" discover --from "$bundle" -o "$tmp/all.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "discover --from with gpu1 twice exited $rc, want 2: $(cat "$tmp/err")"
grep -qF "gpu1 and gpu1-ts are the same machine (both have machine ID $id1 (/etc/machine-id); both have SSH host key $key1)" \
  "$tmp/err" || fail "the pair and its evidence are not named: $(cat "$tmp/err")"
grep -qF "sudo rm /etc/machine-id && sudo systemd-machine-id-setup" "$tmp/err" ||
  fail "no advice for a cloned machine ID: $(cat "$tmp/err")"
grep -qF "sudo ssh-keygen -A" "$tmp/err" || fail "no advice for cloned host keys: $(cat "$tmp/err")"
grep -q "gpu2" "$tmp/err" && fail "gpu2 is named, but it is another machine: $(cat "$tmp/err")"
[ ! -e "$tmp/all.json" ] || fail "a cluster state was written with one machine twice"

"$cc" --json discover --from "$bundle" --hosts gpu1,gpu2 -o "$tmp/two.json" >"$tmp/two.out" ||
  fail "discover --hosts gpu1,gpu2 exited $?"
python3 - "$tmp/two.json" <<'PY' || fail "identity fields of gpu1 and gpu2"
import json, sys
s = json.load(open(sys.argv[1]))
got = [(h["host"], h["management_address"], h["machine_id"], h["ssh_host_key"]) for h in s["hosts"]]
want = [("gpu1", "10.0.0.5", "4c0e2b6f9a1d4e3f8b7a6c5d4e3f2a1b",
         "SHA256:Zk3r8pQwVh2mB9xTn4LsYc7uJd1eGf6aHk0oPi5vRtE"),
        ("gpu2", "10.0.0.6", "9d8c7b6a5f4e4d3c8b2a19f8e7d6c5b4",
         "SHA256:Qm7tX2wLp9sVb4nHc8rKz1yJf6uDg3eAo5iWq0xNvPk")]
assert got == want, got
assert s["problems"] == [], s["problems"]
PY

"$cc" collect --from "$bundle" --hosts gpu1,gpu2 -o "$tmp/again" >/dev/null || fail "collect exited $?"
[ "$(cat "$tmp/again/gpu2/ssh-host-key")" = "SHA256:Qm7tX2wLp9sVb4nHc8rKz1yJf6uDg3eAo5iWq0xNvPk" ] ||
  fail "collect did not keep gpu2's host key: $(cat "$tmp/again/gpu2/ssh-host-key" 2>&1)"

python3 - "$tmp/two.json" "$tmp/twice.json" "$tmp/old.json" <<'PY'
import copy, json, sys
s = json.load(open(sys.argv[1]))
twice = copy.deepcopy(s)
alias = copy.deepcopy(s["hosts"][0])
alias["host"], alias["management_address"] = "gpu1-ts", "100.64.0.5"
twice["hosts"].append(alias)
json.dump(twice, open(sys.argv[2], "w"))
old = copy.deepcopy(twice)
for h in old["hosts"]:
    del h["machine_id"], h["ssh_host_key"]
json.dump(old, open(sys.argv[3], "w"))
PY
set +e
"$cc" verify-mesh "$tmp/twice.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "verify-mesh on a state with gpu1 twice exited $rc, want 2: $(cat "$tmp/err")"
grep -qF "hosts[2].host: \"gpu1-ts\" is the same machine as hosts[0] (\"gpu1\": both have machine ID $id1 (/etc/machine-id); both have SSH host key $key1)" \
  "$tmp/err" || fail "the state's pair is not named: $(cat "$tmp/err")"
set +e
"$cc" verify-mesh "$tmp/old.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "verify-mesh on a state without identity fields exited $rc, want 1 (no cables): $(cat "$tmp/out" "$tmp/err")"
echo "same machine (identity): ok"
