#!/usr/bin/env bash
# verify-mesh and discover on real Mac outputs, through the real binary: the mac-pair support bundle
# (tests/data/bundles, built from two MacBook Pros' recorded outputs) replayed offline.
#  - discover --from: one 80 Gb/s cable, receptacle 2 (en6) on both Macs; the docks are no cable;
#    each Mac's hardware UUID.
#  - verify-mesh --from: exit 1; Mac a has RDMA disabled; b's rdma_en6 is down because of a.
set -euo pipefail
cc=${CLUSTERCTL:?set CLUSTERCTL to the clusterctl binary}
bundle="$(cd "$(dirname "$0")" && pwd)/data/bundles/mac-pair"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$cc" --json discover --from "$bundle" >/tmp/mac-bundle-$$.json || fail "discover --from exited $?"
python3 - /tmp/mac-bundle-$$.json <<'PY' || fail "discover --from result"
import json, sys
s = json.load(open(sys.argv[1]))
assert [h["host"] for h in s["hosts"]] == ["a", "b"], s["hosts"]
assert s["problems"] == [], s["problems"]
# Each Mac's hardware UUID (ioreg IOPlatformUUID); the bundle recorded no SSH connection.
assert [h["machine_id"] for h in s["hosts"]] == [
    "A1B2C3D4-0000-4A00-8000-00000000000A", "A1B2C3D4-0000-4A00-8000-00000000000B"], s["hosts"]
assert [h["ssh_host_key"] for h in s["hosts"]] == [None, None], s["hosts"]
assert len(s["cables"]) == 1, s["cables"]
c = s["cables"][0]
assert (c["a"]["host"], c["a"]["receptacle"], c["a"]["interface"]) == ("a", 2, "en6"), c
assert (c["b"]["host"], c["b"]["receptacle"], c["b"]["interface"]) == ("b", 2, "en6"), c
assert c["link_speed_gbps"] == 80 and c["sources"] == ["thunderbolt"], c
assert c["seen_from_a"] and c["seen_from_b"], c
PY
rm -f /tmp/mac-bundle-$$.json

set +e
out=$("$cc" verify-mesh --from "$bundle" 2>&1)
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "verify-mesh exited $rc, want 1: $out"
grep -q "rdma-disabled: a: RDMA is disabled" <<<"$out" || fail "Mac a not reported disabled: $out"
grep -q "rdma-port-down: b rdma_en6 is PORT_DOWN because its peer a has RDMA disabled" <<<"$out" ||
  fail "b's rdma_en6 not reported down because of a: $out"
echo "mac bundle: ok"
