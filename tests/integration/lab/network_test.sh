#!/usr/bin/env bash
# network plan / apply / verify on a live 4-host lab :
#  - apply --dry-run prints the commands and changes nothing;
#  - apply gives every cable end its address and pings all 6 cables both ways;
#  - a second apply reports no change;
#  - a port down: verify and apply without a state file judge the live cables against the full
#    mesh and name the pair and the port (exit 1); verify-mesh says the port is down and its
#    plan brings it up, never re-plugs it; all give the command that brings it up;
#  - a port down with a state file that has no plan: apply keeps the down cable's entry (and
#    says so), verify-mesh then names its pair from that record, and a later apply addresses it;
#  - the plan saved in a cluster state file is the one apply and verify use;
#  - a cable end that loses its address: verify names that cable, exit 1;
#  - a cable down: verify and apply do the others, name it and exit 1; discover -o keeps the
#    rest of the plan.
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


# A port down, no state file: the cable it hides is not discovered, so verify judges the live
# cables against the full mesh of 4 hosts (6 pairs) and names the pair and the port that is
# down, with the command that brings it up (exit 1). It said "5 of 5 cables answer", exit 0;
# then, exit 1, still "5 of 5" on stdout: the count is of the 6 cables the mesh needs.
# verify-mesh says the same: the port is down, not a cable missing.
ip -n "$(ns h2)" link set tb3 down
rc=0
"$CLUSTERCTL" --lab "$name" network verify >"$tmp/portdown" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "verify without a file, h2 tb3 down, exited $rc: $(cat "$tmp/portdown")"
grep -q '^5 of 6 cables answer both ways over their own interfaces; 1 left out: h2 - h4 (no working cable)$' "$tmp/portdown" &&
  grep -q '^FAIL port-down: h2 and h4 have no cable that answers, and h2 tb3 is administratively down' "$tmp/portdown" &&
  grep -q 'on h2 `sudo ip link set dev tb3 up`' "$tmp/portdown" &&
  grep -q '^1 of the 6 host pairs of a full mesh of 4 hosts has no working cable: `clusterctl .*verify-mesh' "$tmp/portdown" ||
  fail "verify without a file, h2 tb3 down: $(cat "$tmp/portdown")"
# apply without a file judges the full mesh the same way (it applied the 5 cables it saw,
# exit 0, and never said a pair was missing): it names the pair and exits 1.
rc=0
"$CLUSTERCTL" --lab "$name" network apply >"$tmp/applydown" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "apply without a file, h2 tb3 down, exited $rc: $(cat "$tmp/applydown")"
grep -q '^5 of 6 cables answer both ways over their own interfaces; 1 left out: h2 - h4 (no working cable)$' "$tmp/applydown" &&
  grep -q '^FAIL port-down: h2 and h4 have no cable that answers, and h2 tb3 is administratively down' "$tmp/applydown" &&
  grep -q 'on h2 `sudo ip link set dev tb3 up`' "$tmp/applydown" &&
  grep -q '^1 of the 6 host pairs of a full mesh of 4 hosts has no working cable: .*run `clusterctl .*network apply' "$tmp/applydown" ||
  fail "apply without a file, h2 tb3 down: $(cat "$tmp/applydown")"
# verify-mesh: the port is down, not a cable missing; its cabling plan brings the port up and
# never moves its cable (it said "plug h2 tb3 into h4 tb2"); nothing records the peer of h2
# tb3 here, so the pair is said to be a guess.
rc=0
"$CLUSTERCTL" --lab "$name" verify-mesh >"$tmp/mesh" 2>&1 || rc=$?
[ "$rc" -eq 1 ] && grep -q 'port-down.*h2 tb3 is administratively down' "$tmp/mesh" &&
  grep -q 'sudo ip link set dev tb3 up' "$tmp/mesh" && ! grep -q 'missing-cable' "$tmp/mesh" &&
  grep -q 'is a guess' "$tmp/mesh" &&
  grep -q '^  1\. bring up h2 tb3: on h2 `sudo ip link set dev tb3 up`; it may hold the cable of h2-h4 (a guess' "$tmp/mesh" &&
  ! grep -q '^  [0-9]*\. plug ' "$tmp/mesh" ||
  fail "verify-mesh with h2 tb3 down exited $rc: $(cat "$tmp/mesh")"
ip -n "$(ns h2)" link set tb3 up
ok=0
for _ in 1 2 3 4 5 6 7 8 9 10; do
  if "$CLUSTERCTL" --lab "$name" network verify >"$tmp/portup" 2>&1; then ok=1; break; fi
  sleep 1
done
[ "$ok" -eq 1 ] && grep -q '^6 of 6 cables answer both ways' "$tmp/portup" ||
  fail "verify without a file, h2 tb3 up again: $(cat "$tmp/portup")"

# A cluster state without a network plan, h2 tb3 down: apply names the down cable, plans it
# with the others and keeps its entry in the file (it was lost: the next apply, once the port
# is up, could not address it), and says so. verify-mesh on that file then knows which pair
# the down port explains (the plan's record), not a guess.
"$CLUSTERCTL" --lab "$name" discover -o "$tmp/c5.json" >/dev/null
ip -n "$(ns h2)" link set tb3 down
rc=0
"$CLUSTERCTL" --lab "$name" network apply "$tmp/c5.json" >"$tmp/noplan" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "apply of a file without a plan, h2 tb3 down, exited $rc: $(cat "$tmp/noplan")"
# One line for the down cable, in health's and verify-mesh's words (administratively down, the
# command that brings it up), saying that its entry was kept: no second "kept ..." line.
grep -qE '^cable down: h2 tb3 - h4 tb2 \(10\.231\.[0-9.]*/31\): the cable is not seen now: h2 tb3: administratively down(; h4 tb2: no carrier)?; nothing was applied to it\. Fix: bring the port that is down up: on h2 `sudo ip link set dev tb3 up`' "$tmp/noplan" &&
  grep -q "(kept in the network plan of $tmp/c5.json, though the cable is down now" "$tmp/noplan" &&
  [ "$(grep -v '^[0-9]* of [0-9]* cables answer' "$tmp/noplan" | grep -c 'h2 tb3 - h4 tb2')" -eq 1 ] &&
  grep -q '^5 of 6 cables answer both ways over their own interfaces; 1 left out: h2 tb3 - h4 tb2$' "$tmp/noplan" ||
  fail "apply of a file without a plan, h2 tb3 down: $(cat "$tmp/noplan")"
python3 - "$tmp/c5.json" <<'PY' || fail "the state after apply without a plan, a cable down: $(cat "$tmp/c5.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert len(s["network"]) == 6, s["network"]    # the down cable's entry is kept
assert len(s["cables"]) == 5, s["cables"]
assert any(l["a"]["host"] == "h2" and l["a"]["interface"] == "tb3" and l["b"]["interface"] == "tb2"
           for l in s["network"]), s["network"]
PY
rc=0
"$CLUSTERCTL" verify-mesh "$tmp/c5.json" >"$tmp/mesh5" 2>&1 || rc=$?
[ "$rc" -eq 1 ] &&
  grep -q 'port-down.*h2 tb3 is administratively down: .*(the network plan of the cluster state records it: h2 tb3 faced h4 tb2)' "$tmp/mesh5" &&
  grep -q 'bring up h2 tb3: .*the network plan records its cable to h4 tb2' "$tmp/mesh5" &&
  ! grep -q 'guess\|^  [0-9]*\. plug ' "$tmp/mesh5" || fail "verify-mesh of the kept plan exited $rc: $(cat "$tmp/mesh5")"
ip -n "$(ns h2)" link set tb3 up
ok=0
for _ in 1 2 3 4 5 6 7 8 9 10; do
  if "$CLUSTERCTL" --lab "$name" network apply "$tmp/c5.json" >"$tmp/back5" 2>&1; then ok=1; break; fi
  sleep 1
done
[ "$ok" -eq 1 ] && grep -q '^6 of 6 cables answer both ways' "$tmp/back5" ||
  fail "apply of the kept plan with h2 tb3 up: $(cat "$tmp/back5")"

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
# A cable of the file that went down since (h1 tb1 - h2 tb1) while another cable end (h3 tb3,
# of h3 - h4) lost its address. verify checks the cables that are up and names the down one,
# exit 1, the file unchanged. apply gives h3 tb3 its address back (the fix a report prints for
# it must work while some other cable is down), names the down cable with both ends and what
# to do, keeps the cable's plan entry in the file, and exits 1.
cp "$tmp/c3.json" "$tmp/c3.before"
ip -n "$(ns h3)" -4 addr flush dev tb3
ip -n "$(ns h1)" link set tb1 down
set +e
"$CLUSTERCTL" --lab "$name" network verify "$tmp/c3.json" >"$tmp/down" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "verify with a cable down exited $rc: $(cat "$tmp/down")"
grep -qE '^cable down: h1 tb1 - h2 tb1 \(10\.231\.[0-9.]*/31\): the cable is not seen now: h1 tb1: administratively down(; h2 tb1: no carrier)?; it was not checked\. Fix: bring the port that is down up: on h1 `sudo ip link set dev tb1 up`' "$tmp/down" &&
  grep -q 'then run `clusterctl .*network verify' "$tmp/down" &&
  grep -q '^FAIL h3 tb3 ' "$tmp/down" && grep -q '^4 of 6 cables answer both ways over their own interfaces; 1 left out: h1 tb1 - h2 tb1$' "$tmp/down" ||
  fail "verify with a cable down: $(cat "$tmp/down")"
cmp -s "$tmp/c3.json" "$tmp/c3.before" || fail "verify with a cable down rewrote the file"
set +e
"$CLUSTERCTL" --lab "$name" network apply "$tmp/c3.json" >"$tmp/down" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "apply with a cable down exited $rc: $(cat "$tmp/down")"
grep -q '^cable down: h1 tb1 - h2 tb1 (10\.231\.[0-9.]*/31): .*h1 tb1: administratively down.*; nothing was applied to it' "$tmp/down" &&
  grep -q "(kept in the network plan of $tmp/c3.json, though the cable is down now" "$tmp/down" &&
  grep -q 'then run `clusterctl .*network apply' "$tmp/down" &&
  [ "$(grep -v '^[0-9]* of [0-9]* cables answer' "$tmp/down" | grep -c 'h1 tb1 - h2 tb1')" -eq 1 ] &&
  grep -q '^5 of 6 cables answer both ways over their own interfaces; 1 left out: h1 tb1 - h2 tb1$' "$tmp/down" &&
  grep -q '^1 cable left out: every other cable was applied' "$tmp/down" ||
  fail "apply with a cable down: $(cat "$tmp/down")"
ip -n "$(ns h3)" -4 -o addr show dev tb3 | grep -q ' 10\.231\.' || fail "apply did not restore h3 tb3"
python3 - "$tmp/c3.json" <<'PY' || fail "the state after apply with a cable down: $(cat "$tmp/c3.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert len(s["network"]) == 6, s["network"]    # the down cable's plan entry is kept
assert len(s["cables"]) == 5, s["cables"]      # the facts as they are now
h3 = [h for h in s["hosts"] if h["host"] == "h3"][0]
tb3 = [p for p in h3["ports"] if (p.get("interface") or {}).get("name") == "tb3"][0]
assert tb3["interface"]["ipv4"], tb3           # h3 tb3's address is recorded
PY
# discover -o over a state with a plan, while the cable is down: the plan's other entries are
# kept, the dropped one is named with why.
cp "$tmp/c3.json" "$tmp/c4.json"
"$CLUSTERCTL" --lab "$name" discover -o "$tmp/c4.json" >/dev/null 2>"$tmp/rediscover" ||
  fail "discover -o over a planned state exited $?: $(cat "$tmp/rediscover")"
grep -q '^discover: kept 5 of the 6 cables of the network plan in ' "$tmp/rediscover" &&
  grep -q '^  dropped h1 tb1 - h2 tb1 (10\.231\.[0-9.]*/31): the cable is not seen now' "$tmp/rediscover" &&
  grep -q 'network plan' "$tmp/rediscover" || fail "discover -o over a plan: $(cat "$tmp/rediscover")"
python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["network"]; assert len(n) == 5, n' "$tmp/c4.json" ||
  fail "discover -o dropped the plan: $(cat "$tmp/c4.json")"
# The cable back: the same file's apply now gives it its addresses (its entry was kept).
ip -n "$(ns h1)" link set tb1 up
ok=0
for _ in 1 2 3 4 5 6 7 8 9 10; do
  if "$CLUSTERCTL" --lab "$name" network apply "$tmp/c3.json" >"$tmp/back" 2>&1; then ok=1; break; fi
  sleep 1
done
[ "$ok" -eq 1 ] && grep -q '^6 of 6 cables answer both ways' "$tmp/back" ||
  fail "apply with the cable back: $(cat "$tmp/back")"
echo "network: ok"
