#!/usr/bin/env bash
# `clusterctl hostfile` on the replayed 3-Mac mesh (tests/data/bundles/mac-mesh3, written by
# make-mac-mesh3.py): discover finds the mesh, verify-mesh passes, and each format equals its
# checked-in expected file (tests/data/expected/mac-mesh3.*); then the exit statuses.
set -uo pipefail
cc=${CLUSTERCTL:?set CLUSTERCTL to the clusterctl binary}
data=$(cd "$(dirname "$0")/data" && pwd)
bundle=$data/bundles/mac-mesh3
expected=$data/expected
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect CODE DESCRIPTION -- CMD...
  local want=$1 what=$2; shift 3
  local rc
  "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL: $what: exit $rc, want $want"; head -20 "$tmp/out" "$tmp/err"; fail=1
  fi
}
same() {  # same DESCRIPTION EXPECTED_FILE ACTUAL_FILE
  if ! diff -u "$2" "$3"; then echo "FAIL: $1 differs from $2"; fail=1; fi
}

expect 0 "discover" -- "$cc" discover --from "$bundle"
grep -q "^3 hosts, 4 cables$" "$tmp/out" || { echo "FAIL: discover: $(cat "$tmp/out")"; fail=1; }
expect 0 "verify-mesh" -- "$cc" verify-mesh --from "$bundle"
grep -q "full mesh" "$tmp/out" || { echo "FAIL: verify-mesh: $(cat "$tmp/out")"; fail=1; }

for format in mlx-jaccl mlx-jaccl-ring; do
  expect 0 "hostfile --format $format" -- "$cc" hostfile --format "$format" --from "$bundle"
  same "hostfile --format $format" "$expected/mac-mesh3.$format.json" "$tmp/out"
done
# The bundle's Thunderbolt ports hold only their self-assigned 169.254 addresses (no `network
# apply` yet): mlx-ring wrote them, and a ring connection to one left by whichever port holds the
# Mac's one 169.254/16 route, not its cable (docs/platform.md#self-assigned-addresses).
expect 1 "hostfile --format mlx-ring of unaddressed Macs" -- "$cc" hostfile --format mlx-ring --from "$bundle"
grep -qF "only a self-assigned 169.254 address, and a host routes all of 169.254/16 out of one port" "$tmp/err" &&
  grep -qE "mac[0-9] receptacle [0-9] \(en[0-9]+\) \(169\.254\.[0-9.]+\)" "$tmp/err" &&
  grep -qF "run \`clusterctl network apply" "$tmp/err" && [ ! -s "$tmp/out" ] ||
  { echo "FAIL: hostfile mlx-ring of unaddressed Macs: $(cat "$tmp/out" "$tmp/err")"; fail=1; }
expect 0 "hostfile --format mpi" -- "$cc" hostfile --format mpi --slots 2 --from "$bundle"
same "hostfile --format mpi" "$expected/mac-mesh3.mpi.txt" "$tmp/out"

# -o FILE: the same bytes, written atomically; a state file gives the same as the bundle.
expect 0 "discover -o" -- "$cc" discover --from "$bundle" -o "$tmp/cluster.json"
expect 0 "hostfile -o" -- "$cc" hostfile "$tmp/cluster.json" --format mlx-jaccl -o "$tmp/h.json"
same "hostfile -o" "$expected/mac-mesh3.mlx-jaccl.json" "$tmp/h.json"
# Our own hostfile read back as --hostfile: the same hosts, the same result.
expect 0 "hostfile --hostfile" -- "$cc" --replay "$bundle" hostfile --format mlx-jaccl \
  --hostfile "$expected/mac-mesh3.mlx-jaccl.json"
same "hostfile --hostfile" "$expected/mac-mesh3.mlx-jaccl.json" "$tmp/out"

# A cluster state whose cables name unknown hosts or ports is refused on loading (exit 2),
# every problem named by its JSON path, before verify-mesh or hostfile use it.
python3 - "$tmp/cluster.json" "$tmp/bad-state.json" <<'PY'
import copy, json, sys
s = json.load(open(sys.argv[1]))
c = s["cables"]
c[3]["b"]["host"] = "ghost"
c[2]["a"]["interface"] = "en99"
c[1]["b"]["receptacle"] = -5
c[1]["b"]["interface"] = ""
c.append(copy.deepcopy(c[0]))
s["hosts"].append(copy.deepcopy(s["hosts"][0]))
json.dump(s, open(sys.argv[2], "w"))
PY
for cmd in verify-mesh "hostfile --format mpi"; do
  # shellcheck disable=SC2086
  expect 2 "$cmd on a state with bad references" -- "$cc" $cmd "$tmp/bad-state.json"
  for want in "bad-state.json: 5 problems:" \
      'hosts\[3\].host: "mac1" is already hosts\[0\]' \
      'cables\[3\].b.host: "ghost" is not a host of this state (its hosts: mac1, mac2, mac3)' \
      'cables\[2\].a: interface "en99" is not a port of mac' \
      'cables\[1\].b: receptacle -5 is not a receptacle number' \
      'cables\[4\]: the same cable as cables\[0\]'; do
    grep -q "$want" "$tmp/err" || { echo "FAIL: $cmd: no '$want' in: $(cat "$tmp/err")"; fail=1; }
  done
done

# The same Mac under a second name (same address, same Thunderbolt domain UUIDs): discovery
# refuses it (exit 2, naming both) instead of planning a cable from mac1 to itself.
cp -R "$bundle" "$tmp/twice"
cp -R "$bundle/mac1" "$tmp/twice/studio1.local"
for cmd in discover verify-mesh "hostfile --format mpi"; do
  # shellcheck disable=SC2086
  expect 2 "$cmd with one Mac under two names" -- "$cc" $cmd --from "$tmp/twice" \
    --hosts mac1,mac2,mac3,studio1.local
  grep -q "mac1 and studio1.local are the same machine (both have Thunderbolt domain UUID" \
    "$tmp/err" || { echo "FAIL: $cmd: same machine not named: $(cat "$tmp/err")"; fail=1; }
  grep -q "list each machine once, under one name" "$tmp/err" ||
    { echo "FAIL: $cmd: no fix: $(cat "$tmp/err")"; fail=1; }
done

# Exit statuses: 2 usage, 1 the cluster cannot give the format, 3 a host unreachable.
expect 2 "unknown format" -- "$cc" hostfile --format slurm --from "$bundle"
expect 2 "--slots with an MLX format" -- "$cc" hostfile --format mlx-jaccl --slots 2 --from "$bundle"
expect 2 "bad --env" -- "$cc" hostfile --format mlx-jaccl --env NOVALUE --from "$bundle"
grep -q -- "--env NOVALUE: expected NAME=VALUE" "$tmp/err" || { echo "FAIL: env message"; fail=1; }
# Every bad --env is named in one run, not only the first.
expect 2 "two bad --env" -- "$cc" hostfile --format mlx-jaccl --env FOO --env OK=1 \
  --env CLUSTERCOMM_TOKEN=x --from "$bundle"
grep -q -- "--env FOO: expected NAME=VALUE" "$tmp/err" &&
  grep -q -- "^--env CLUSTERCOMM_TOKEN=x: 'CLUSTERCOMM_TOKEN'" "$tmp/err" ||
  { echo "FAIL: two bad --env: not both named: $(cat "$tmp/err")"; fail=1; }
echo '[{"ssh": "mac1", "rdma": [null, "rdma_en1"]}, {"ssh": "mac2", "rdma": [null, null]}]' \
  >"$tmp/bad.json"
expect 2 "inconsistent --hostfile" -- "$cc" --replay "$bundle" hostfile --format mpi \
  --hostfile "$tmp/bad.json"
grep -q "bad.json: rdma\[0\]\[1\] lists 1 device(s) but rdma\[1\]\[0\] lists 0" "$tmp/err" ||
  { echo "FAIL: --hostfile message: $(cat "$tmp/err")"; fail=1; }
expect 1 "mlx-jaccl without RDMA on one Mac" -- "$cc" hostfile --format mlx-jaccl \
  --from "$data/bundles/mac-pair"
grep -q "no mlx-jaccl hostfile: no RDMA cable between a-b" "$tmp/err" ||
  { echo "FAIL: missing RDMA message: $(cat "$tmp/err")"; fail=1; }
expect 3 "unreachable host" -- "$cc" hostfile --format mpi --from "$bundle" \
  --hosts mac1,mac2,mac3,mac4

# --from combines with --hostfile: the hostfile names the hosts, the bundle answers for them.
expect 0 "discover --from with --hostfile" -- "$cc" discover --from "$bundle" \
  --hostfile "$expected/mac-mesh3.mlx-jaccl.json"
grep -q "^3 hosts, 4 cables$" "$tmp/out" || { echo "FAIL: --from --hostfile: $(cat "$tmp/out")"; fail=1; }
# A hostfile whose rank order disagrees with the cabling (mac1 and mac2 swapped) is refused by
# launch before anything starts (exit 1, naming the mismatch); the right one gets past the check.
python3 - "$expected/mac-mesh3.mlx-jaccl.json" "$tmp/swapped.json" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
a, b = h["hosts"][0], h["hosts"][1]
a["ssh"], b["ssh"] = b["ssh"], a["ssh"]
a["ips"], b["ips"] = b["ips"], a["ips"]
json.dump(h, open(sys.argv[2], "w"), indent=2)
PY
printf 'name: swapped\ncluster: hostfile:%s\nruntime: mlx-jaccl\ncommand: [true]\nlogs: %s/logs\n' \
  "$tmp/swapped.json" "$tmp" >"$tmp/swapped.yaml"
expect 1 "launch with a swapped jaccl hostfile" -- env XDG_STATE_HOME="$tmp/state" "$cc" \
  --replay "$bundle" launch "$tmp/swapped.yaml"
grep -q "does not match the cabling its hosts report" "$tmp/err" ||
  { echo "FAIL: swapped hostfile not refused: $(cat "$tmp/err")"; fail=1; }
grep -qE " ranks? on " "$tmp/err" && { echo "FAIL: the swapped job started: $(cat "$tmp/err")"; fail=1; }
# One fix, runnable as printed: to a new path (-o the file it reads is refused), nothing else.
grep -qF "write a matching one with \`clusterctl hostfile --hostfile $tmp/swapped.json --format mlx-jaccl -o $tmp/swapped.new.json\`, then name $tmp/swapped.new.json in \`cluster:\`" "$tmp/err" ||
  { echo "FAIL: swapped hostfile: not the one fix: $(cat "$tmp/err")"; fail=1; }
[ "$(grep -o '`clusterctl ' "$tmp/err" | wc -l)" = 1 ] ||
  { echo "FAIL: swapped hostfile: more than one fix: $(cat "$tmp/err")"; fail=1; }
[ -d "$tmp/logs" ] && { echo "FAIL: the refused job wrote logs"; fail=1; }

[ "$fail" -eq 0 ] && echo "hostfile mac-mesh3: ok"
exit "$fail"
