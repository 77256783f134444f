#!/usr/bin/env bash
# Each lab host has a data directory of its own at one common path (a tmpfs per host of
# --data-size, bind-mounted there in its sshd's mount namespace): files written there over SSH
# on h1 and h2 stay apart, each is at its host's per-host path in the root namespace, the size
# is the limit (df, ENOSPC), and `lab down` leaves no mount and no runtime directory.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
name=ctldata${CLUSTERCTL_TEST_SUFFIX:-}  # unique per build tree: labs are machine-wide
down_on_exit "$name"
dir=$(labdir "$name")
run=/run/clusterctl/labs/$name
common=$run/data
q=$(printf %q "$common")  # for the remote shell's command line

on() {
  local h=$1
  shift
  ssh -F "$dir/ssh_config" -o BatchMode=yes -o ConnectTimeout=5 "$h" "$@"
}

snapshot_init
before=$(snapshot)

rc=0
out=$("$CLUSTERCTL" lab up --hosts 3 --name "$name" --data-size 64X 2>&1) || rc=$?
[ "$rc" -eq 2 ] || fail "lab up --data-size 64X exited $rc, expected 2"
grep -q -- "--data-size" <<<"$out" || fail "the error does not name --data-size: $out"
same_snapshot "$before" "$(snapshot)" "a refused --data-size left something behind"

"$CLUSTERCTL" lab up --hosts 3 --name "$name" --data-size 64M

for h in h1 h2; do
  echo "written on $h" | on "$h" "cat > $q/file"
done
for h in h1 h2; do
  got=$(on "$h" "cat $q/file")
  [ "$got" = "written on $h" ] || fail "$h reads '$got' at $common/file"
  got=$(cat "$run/hosts/$h/data/file")
  [ "$got" = "written on $h" ] || fail "$run/hosts/$h/data/file holds '$got'"
done
on h3 "test ! -e $q/file" || fail "h3 sees a file it never wrote at $common/file"
[ ! -e "$common/file" ] || fail "the common path holds a file in the root namespace"
echo "h1 and h2 each read their own file at $common"

[ "$(on h1 cat /etc/machine-id)" != "$(on h2 cat /etc/machine-id)" ] ||
  fail "h1 and h2 report the same /etc/machine-id"

read -r source size < <(on h2 "df -k --output=source,size $q" | tail -n 1)
[ "$source" = "clusterctl-lab-$name-h2" ] || fail "df on h2 shows $source at $common"
if [ "$size" -lt 65000 ] || [ "$size" -gt 66000 ]; then fail "df on h2 shows $size KiB, not 64M"; fi
echo "df on h2: $source, $size KiB"

rc=0
out=$(on h2 "dd if=/dev/zero of=$q/big bs=1M count=100 2>&1") || rc=$?
[ "$rc" -ne 0 ] || fail "h2 wrote 100M into a 64M data directory"
grep -q "No space left on device" <<<"$out" || fail "100M on h2 failed, but not with ENOSPC: $out"
[ "$(on h1 "cat $q/file")" = "written on h1" ] || fail "h1's file changed after h2 filled its own"
echo "100M on h2: No space left on device"

st=$("$CLUSTERCTL" lab status --name "$name" --json)
python3 - "$st" "$common" "$run" <<'PY'
import json, sys
st, common, run = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
assert st["data_dir"] == common and st["data_size"] == 64 << 20, st
for h in st["hosts"]:
    assert h["data_dir"] == f"{run}/hosts/{h['name']}/data" and h["data_mounted"], h
PY

"$CLUSTERCTL" lab down --name "$name"
if grep -E "clusterctl-lab-$name-| ${run}[/ ]" /proc/mounts; then
  fail "lab down left the mounts above in /proc/mounts"
fi
[ ! -e "$run" ] || fail "$run is still there"
same_snapshot "$before" "$(snapshot)" "lab down left something behind"
echo "PASS"
