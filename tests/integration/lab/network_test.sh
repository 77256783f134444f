#!/usr/bin/env bash
# network plan / apply / verify on a live 4-host lab :
#  - apply --dry-run prints the commands and changes nothing;
#  - apply gives every cable end its address and pings all 6 cables both ways;
#  - a second apply reports no change;
#  - the plan saved in a cluster state file is the one apply and verify use;
#  - a cable end that loses its address: verify names that cable, exit 1.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
name=ctlnet${CLUSTERCTL_TEST_SUFFIX:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; "$CLUSTERCTL" lab down --name "$name" >/dev/null 2>&1 || true' EXIT
"$CLUSTERCTL" lab up --name "$name" --hosts 4 >/dev/null
ns() { echo "cc-$name-$1"; }
addrs() { for h in h1 h2 h3 h4; do ip -n "$(ns $h)" -4 -o addr show | grep -c ' tb' || true; done | paste -sd,; }

"$CLUSTERCTL" --lab "$name" network apply --dry-run >"$tmp/dry" || fail "dry-run exited $?"
[ "$(grep -c '^  ip addr add 10\.231\.' "$tmp/dry")" -eq 12 ] || fail "dry-run commands: $(cat "$tmp/dry")"
[ "$(addrs)" = "0,0,0,0" ] || fail "dry-run changed addresses: $(addrs)"

"$CLUSTERCTL" --lab "$name" network apply >"$tmp/apply" || fail "apply exited $?: $(cat "$tmp/apply")"
grep -q "^6 of 6 cables answer both ways" "$tmp/apply" || fail "apply: $(cat "$tmp/apply")"
[ "$(addrs)" = "3,3,3,3" ] || fail "addresses after apply: $(addrs)"
"$CLUSTERCTL" --lab "$name" network apply >"$tmp/again" || fail "second apply exited $?"
[ "$(grep -c ': no change$' "$tmp/again")" -eq 4 ] || fail "second apply changed: $(cat "$tmp/again")"

"$CLUSTERCTL" --lab "$name" discover -o "$tmp/c.json" >/dev/null
"$CLUSTERCTL" --lab "$name" network plan "$tmp/c.json" >/dev/null
# The file records the lab it was discovered on: without --lab, apply reaches that lab's hosts.
"$CLUSTERCTL" network apply "$tmp/c.json" >"$tmp/withlab" 2>&1 ||
  fail "apply of a state that records its lab, without --lab, exited $?: $(cat "$tmp/withlab")"
grep -q "^6 of 6 cables answer both ways" "$tmp/withlab" || fail "apply without --lab: $(cat "$tmp/withlab")"
# The same file without its lab: no host resolves. That is exit 2 naming the hosts and saying
# to add --lab, found before any host is probed (check_hosts), not a cable "not seen now"
# (exit 1), which sent a new user to re-cable.
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s.pop("lab") == sys.argv[3]; json.dump(s,open(sys.argv[2],"w"))' \
  "$tmp/c.json" "$tmp/nolab.json" "$name" || fail "the cluster state does not record lab $name"
rc=0
"$CLUSTERCTL" network apply "$tmp/nolab.json" >"$tmp/nolab" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "cannot be reached as given (found before connecting to any); nothing was run on any host" "$tmp/nolab" &&
  grep -q "add --lab" "$tmp/nolab" || fail "apply of a state without its lab exited $rc: $(cat "$tmp/nolab")"
python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["network"]; assert len(n) == 6, n' "$tmp/c.json" ||
  fail "plan not saved in the cluster state"
"$CLUSTERCTL" --lab "$name" network verify "$tmp/c.json" >"$tmp/verify" || fail "verify exited $?"

# h2's end of the h1-h2 cable loses its address: only that cable fails, naming h2's port.
ip -n "$(ns h2)" -4 addr flush dev tb1
set +e
"$CLUSTERCTL" --lab "$name" network verify "$tmp/c.json" >"$tmp/broken"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "verify with a broken cable exited $rc: $(cat "$tmp/broken")"
[ "$(grep -c '^FAIL' "$tmp/broken")" -eq 1 ] || fail "failures: $(cat "$tmp/broken")"
grep -q '^FAIL h1 tb1 .* h2 tb1 ' "$tmp/broken" || fail "wrong cable named: $(cat "$tmp/broken")"
grep -q '^5 of 6 cables' "$tmp/broken" || fail "summary: $(cat "$tmp/broken")"
# A cluster state discovered while h2 tb1 has no address: mlx-ring cannot be written from it;
# `network apply` with that file restores the address and saves the fresh facts in it, so the
# hostfile follows without a new discover.
"$CLUSTERCTL" --lab "$name" discover -o "$tmp/c3.json" >/dev/null
if "$CLUSTERCTL" hostfile --format mlx-ring "$tmp/c3.json" >"$tmp/ring0" 2>&1; then
  fail "mlx-ring written with an unaddressed cable end: $(cat "$tmp/ring0")"
fi
grep -q "h2 tb1 has no IPv4 address in this cluster state" "$tmp/ring0" || fail "mlx-ring error: $(cat "$tmp/ring0")"
"$CLUSTERCTL" --lab "$name" network apply "$tmp/c3.json" >"$tmp/apply3" ||
  fail "apply with a state file exited $?: $(cat "$tmp/apply3")"
"$CLUSTERCTL" hostfile --format mlx-ring "$tmp/c3.json" >"$tmp/ring" ||
  fail "mlx-ring after apply exited $?: $(cat "$tmp/ring")"
python3 -c 'import json,sys; h=json.load(open(sys.argv[1]))["hosts"]; assert len(h) == 4 and all(x["ips"] for x in h), h' \
  "$tmp/ring" || fail "mlx-ring after apply: $(cat "$tmp/ring")"
# A cable of the file that went down since: verify and apply fail naming it, the file unchanged.
cp "$tmp/c3.json" "$tmp/c3.before"
ip -n "$(ns h1)" link set tb1 down
for cmd in verify apply; do
  set +e
  "$CLUSTERCTL" --lab "$name" network "$cmd" "$tmp/c3.json" >"$tmp/down" 2>&1
  rc=$?
  set -e
  [ "$rc" -eq 1 ] || fail "$cmd with a cable down exited $rc: $(cat "$tmp/down")"
  grep -q 'h1 tb1 - h2 tb1 of .* is not seen now' "$tmp/down" || fail "$cmd: $(cat "$tmp/down")"
  cmp -s "$tmp/c3.json" "$tmp/c3.before" || fail "$cmd with a cable down rewrote the file"
done
echo "network: ok"
