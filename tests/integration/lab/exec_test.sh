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
# `lab list` names it, up, with its 4 hosts and their sshd (other labs of this state directory
# may be listed beside it).
list=$("$CLUSTERCTL" lab list) || fail "lab list exited $?"
grep -qE "^$name +up +4  4 of 4 sshd running$" <<<"$list" || fail "lab list: $list"
[ "$("$CLUSTERCTL" lab list --json | python3 -c 'import json,sys; print([(l["state"], l["hosts"], l["sshd_running"]) for l in json.load(sys.stdin) if l["name"] == sys.argv[1]])' "$name")" = "[('up', 4, 4)]" ] ||
  fail "lab list --json: $("$CLUSTERCTL" lab list --json)"

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

# Operator SSH configs from public bug reports (a second trial), against the lab's sshd:
#  - ProxyJump (a cluster reached through a head node): libssh 0.10 runs `ssh -W ... JUMP`
#    with ~/.ssh/config, so a jump host that only -F's file names failed as "Connection reset
#    by peer"; now it goes through h2 with the same files, and sshd on h1 sees h2's address;
#  - a passphrase-protected IdentityFile without an agent, one that does not exist, and a
#    stale SSH_AUTH_SOCK: the message names the file or socket and what to do, where it said
#    only "no key was accepted" and to add the key to authorized_keys.
own=$(mktemp -d)
trap 'rm -rf "$own"; "$CLUSTERCTL" lab down --name "$name" >/dev/null 2>&1 || true' EXIT
addr() { awk -v h="$1" '$1 == "Host" { cur = $2 } cur == h && $1 == "HostName" { print $2 }' "$dir/ssh_config"; }
h1=$(addr h1)
h2=$(addr h2)
printf 'Host h1\n  HostName %s\n  User root\n  ProxyJump h2\n  IdentityFile %s\n  UserKnownHostsFile %s\n' \
  "$h1" "$dir/id_ed25519" "$dir/known_hosts" >"$own/jump"
printf 'Host h2\n  HostName %s\n  User root\n  IdentityFile %s\n  UserKnownHostsFile %s\n' \
  "$h2" "$dir/id_ed25519" "$dir/known_hosts" >>"$own/jump"
rc=0
out=$("$CLUSTERCTL" -F "$own/jump" exec --hosts h1 --timeout 20 -- sh -c 'uname -n; echo "$SSH_CONNECTION"' 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "exec through ProxyJump h2 exited $rc: $out"
grep -qx h1 <<<"$out" || fail "exec through ProxyJump did not reach h1: $out"
grep -q "^$h2 " <<<"$out" || fail "exec through ProxyJump did not come from h2 ($h2): $out"
cp "$dir/id_ed25519" "$own/key_pp"
chmod 600 "$own/key_pp"
ssh-keygen -q -p -P '' -N 'a passphrase' -f "$own/key_pp" >/dev/null
for key in key_pp no_such_key; do
  printf 'Host h1\n  HostName %s\n  User root\n  IdentityFile %s\n  UserKnownHostsFile %s\n' \
    "$h1" "$own/$key" "$dir/known_hosts" >"$own/cfg_$key"
  rc=0
  out=$(env -u SSH_AUTH_SOCK "$CLUSTERCTL" -F "$own/cfg_$key" exec --hosts h1 -- true 2>&1) || rc=$?
  [ "$rc" -eq 3 ] || fail "exec with IdentityFile $key exited $rc, expected 3: $out"
  grep -q "no ssh-agent (SSH_AUTH_SOCK is not set)" <<<"$out" || fail "$key: agent not named: $out"
  case $key in
    key_pp) want="IdentityFile $own/key_pp could not be loaded: it is protected by a passphrase" ;;
    *) want="IdentityFile $own/no_such_key does not exist" ;;
  esac
  grep -qF "$want" <<<"$out" || fail "$key: no '$want' in: $out"
done
rc=0
out=$(SSH_AUTH_SOCK=$own/gone "$CLUSTERCTL" -F "$own/cfg_key_pp" exec --hosts h1 -- true 2>&1) || rc=$?
[ "$rc" -eq 3 ] || fail "exec with a stale SSH_AUTH_SOCK exited $rc, expected 3: $out"
grep -qF "SSH_AUTH_SOCK names $own/gone, which is no socket" <<<"$out" || fail "stale agent not named: $out"
# A doubled '@' (openpmix/prrte#2714's typo in a hostfile): ssh takes all before the last '@'
# as the user, so root@x@h1 logs in as 'root@x' and was told only to add its key.
rc=0
out=$(env -u SSH_AUTH_SOCK "$CLUSTERCTL" -F "$dir/ssh_config" exec --hosts 'root@x@h1' -- true 2>&1) || rc=$?
[ "$rc" -eq 3 ] || fail "exec --hosts root@x@h1 exited $rc, expected 3: $out"
grep -qF "the user name is 'root@x', which holds an '@' (ssh takes all before the last '@' of 'root@x@h1' as the user): if an '@' there is a typo, correct it" <<<"$out" ||
  fail "the '@' in the user name is not named: $out"
# A wrong user (`User nobody`) with the right key is refused as an unknown key is: the message
# names the user it tried, not only ssh-copy-id.
printf 'Host h1\n  HostName %s\n  User nobody\n  IdentityFile %s\n  UserKnownHostsFile %s\n' \
  "$h1" "$dir/id_ed25519" "$dir/known_hosts" >"$own/cfg_nobody"
rc=0
out=$(env -u SSH_AUTH_SOCK "$CLUSTERCTL" -F "$own/cfg_nobody" exec --hosts h1 -- true 2>&1) || rc=$?
[ "$rc" -eq 3 ] || fail "exec as User nobody exited $rc, expected 3: $out"
grep -qF "Also check the user name it tried, 'nobody'" <<<"$out" || fail "wrong user not named: $out"
echo "exec: ProxyJump, IdentityFile and user name cases pass"

pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hosts"][1]["sshd_pid"])' \
  "$dir/lab.json")
kill_and_wait "$pid"

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
[ "$rc" -eq 1 ] || fail "lab status of a removed lab exited $rc, expected 1 (not running)"
echo "PASS"
