#!/usr/bin/env bash
# `lab down` removes everything `lab up` made (namespaces, interfaces, mounts, processes, files,
# each host's /etc/netns/NS/machine-id)
# and is safe to run twice. Also prints how long `lab up --hosts 8` took (a goal: under 10 s).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
name=ctlclean${CLUSTERCTL_TEST_SUFFIX:-}  # unique per build tree: labs are machine-wide
down_on_exit "$name"

snapshot_init
before=$(snapshot)
start=$(now_ms)
"$CLUSTERCTL" lab up --hosts 8 --name "$name"
echo "lab up --hosts 8: $(($(now_ms) - start)) ms"
during=$(snapshot)
[ "$during" != "$before" ] || fail "the snapshot does not see the lab at all"
grep -qx "cc-$name-h8" <<<"$during" || fail "no namespace cc-$name-h8"
grep -qx "/etc/netns/cc-$name-h8/machine-id" <<<"$during" || fail "no machine-id for h8"
[ -f "$(labdir "$name")/lab.json" ] || fail "no lab.json"

start=$(now_ms)
"$CLUSTERCTL" lab down --name "$name"
echo "lab down (8 hosts): $(($(now_ms) - start)) ms"
same_snapshot "$before" "$(snapshot)" "lab down left something behind"
[ ! -e "$(labdir "$name")" ] || fail "lab directory $(labdir "$name") is still there"
[ ! -e "/run/clusterctl/labs/$name" ] || fail "/run/clusterctl/labs/$name is still there"

out=$("$CLUSTERCTL" lab down --name "$name") || fail "a second lab down failed"
grep -q "nothing to remove" <<<"$out" || fail "second lab down said: $out"
echo "PASS"
