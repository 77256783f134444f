#!/usr/bin/env bash
# clusterctl health --quick over the replayed pair of real MacBook Pros (no root, no lab): the
# Mac-only checks on real outputs. Mac a has RDMA disabled, so b's port waits for it; both have
# the Thunderbolt Bridge active with their cabled port as a member; no addresses applied. The
# bundle holds no health extras (clock, pmset, vm_stat, df, clusterctl): those are WARN unknown.
set -euo pipefail
: "${CLUSTERCTL:?set CLUSTERCTL to the clusterctl binary}"
bundle=$(cd "$(dirname "$0")/../../data/bundles/mac-pair" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
"$CLUSTERCTL" health --quick --from "$bundle" --hosts all --json --junit "$tmp/j.xml" >"$tmp/h.json" || rc=$?
[ "$rc" -eq 1 ] || { echo "FAIL: exit $rc, want 1: $(cat "$tmp/h.json")" >&2; exit 1; }
python3 - "$tmp/h.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
st = {(r["subject"], r["check"]): (r["status"], r["measured"]) for r in j["results"]}
assert st[("a", "macos-version")] == ("PASS", "27.0"), st[("a", "macos-version")]
assert st[("a", "thunderbolt-bridge")] == ("FAIL", "active"), st
assert st[("b", "thunderbolt-bridge")] == ("FAIL", "active"), st
assert st[("a", "rdma")] == ("WARN", "disabled"), st
assert st[("b", "rdma")] == ("PASS", "ready"), st
assert st[("a:en6-b:en6", "link-up")] == ("PASS", "up"), st
assert st[("a:en6-b:en6", "link-speed")] == ("PASS", "80 Gb/s"), st
assert st[("a:en6-b:en6", "addresses")] == ("FAIL", "2 missing"), st
assert st[("a", "sleep")] == ("WARN", "unknown"), st
fails = sorted(k for k, v in st.items() if v[0] == "FAIL")
assert fails == [("a", "thunderbolt-bridge"), ("a:en6-b:en6", "addresses"), ("b", "thunderbolt-bridge")], fails
assert j["counts"]["fail"] == 3 and len(j["results"]) == 26, j["counts"]
# The bundle records each Mac's hardware UUID, and the live probe reads the same.
assert st[("a", "identity")] == ("PASS", "same"), st
assert st[("b", "identity")] == ("PASS", "same"), st
PY
if command -v xmllint >/dev/null; then
  xmllint --noout "$tmp/j.xml"
  [ "$(xmllint --xpath 'count(//testcase)' "$tmp/j.xml")" = 26 ]
  [ "$(xmllint --xpath 'count(//failure)' "$tmp/j.xml")" = 3 ]
fi
echo "health mac-pair: ok"
