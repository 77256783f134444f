#!/usr/bin/env bash
# Topologies: ring (2 ports per host), mesh (tb1..tb(N-1)), --omit, --extra (parallel cable),
# free receptacles (--receptacles; by default hosts - 1 per host) and a topology file. The live namespaces must match lab.json (check_lab.py: interfaces, MACs,
# veth peers, no IPv4 on ports).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
name=ctltopo${CLUSTERCTL_TEST_SUFFIX:-}  # unique per build tree: labs are machine-wide
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; "$CLUSTERCTL" lab down --name "$name" >/dev/null 2>&1 || true' EXIT
json=$(labdir "$name")/lab.json

# up ARGS... ; check CHECK_LAB_ARGS... ; then down
run_case() {
  local label=$1
  shift
  local up=() check=()
  while [ "$1" != "--" ]; do up+=("$1"); shift; done
  shift
  check=("$@")
  echo "== $label: lab up ${up[*]}"
  "$CLUSTERCTL" lab up --name "$name" "${up[@]}" >/dev/null
  python3 "$HERE/check_lab.py" "$json" "${check[@]}" || fail "$label"
  "$CLUSTERCTL" lab down --name "$name" >/dev/null
}

run_case "ring of 5" --hosts 5 --topology ring -- --ports 2 --free 2 --cables 5
run_case "ring of 4, 2 receptacles" --hosts 4 --topology ring --receptacles 2 -- \
  --ports 2 --free 0 --cables 4
run_case "mesh of 4" --hosts 4 -- --ports 3 --free 0 --cables 6
run_case "mesh of 4 without h1-h2" --hosts 4 --omit h1-h2 -- \
  --ports h1=2,h2=2,h3=3,h4=3 --free h1=1,h2=1,h3=0,h4=0 --cables 5
run_case "mesh of 3 with a second h1-h2" --hosts 3 --extra h2-h1 -- \
  --ports h1=3,h2=3,h3=2 --cables 4
printf '# a line of three, h2 doubly cabled to h3\ncables:\n  - [h1, h2]\n  - [h2, h3]\n  - [h3, h2]\n' \
  >"$tmp/line.yaml"
run_case "file" --hosts 3 --topology "$tmp/line.yaml" -- --ports h1=1,h2=3,h3=2 --cables 3

# Receptacle order in a mesh: host i's tbK goes to the K-th other host in ascending order.
"$CLUSTERCTL" lab up --name "$name" --hosts 4 >/dev/null
python3 - "$json" <<'PY'
import json, sys
lab = json.load(open(sys.argv[1]))
peer = {}
for c in lab["cables"]:
    peer[(c["a"]["host"], c["a"]["port"])] = c["b"]["host"]
    peer[(c["b"]["host"], c["b"]["port"])] = c["a"]["host"]
for h in ["h1", "h2", "h3", "h4"]:
    others = [o for o in ["h1", "h2", "h3", "h4"] if o != h]
    got = [peer[(h, f"tb{k}")] for k in (1, 2, 3)]
    assert got == others, (h, got)
print("mesh receptacle order: ok")
PY
"$CLUSTERCTL" lab down --name "$name" >/dev/null
echo "PASS"
