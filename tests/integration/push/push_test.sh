#!/usr/bin/env bash
# clusterctl push on a live 4-host lab, h1 the source, h2-h4 the targets, each writing to its
# own private data directory (`lab up` mounts one per host at the same path):
#  - a tree with a 3 GiB file, small files, an empty file, a symbolic link (kept a link) and a
#    name with spaces and quotes arrives whole on every host: digests, modes, mtimes, link;
#  - a second push sends 0 bytes and skips every file;
#  - a push interrupted half way (SIGTERM, as Ctrl-C: exit 130) leaves no file under its final name and no
#    rank process, and the next push sends only the rest;
#  - a target with too little space fails the preflight (exit 2, naming every host, what is
#    needed and what is free) and nothing is written anywhere;
#  - shares (--manifest): each file a share names reaches its hosts only, the others every host,
#    over the cables; a share naming no file, or a host that is not a target, is refused (exit 2)
#    with the manifest's file and line;
#  - a destination that is the same directory on two hosts (here: one file system) is refused;
#  - a destination that is not a directory is named (exit 2);
#  - a cable cut mid-push is named at once and ends the push (exit 4) naming it.
set -euo pipefail
source "$(dirname "$0")/../lab/lib.sh"
name=ctlpush${CLUSTERCTL_TEST_SUFFIX:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; "$CLUSTERCTL" lab down --name "$name" >/dev/null 2>&1 || true' EXIT
"$CLUSTERCTL" lab up --name "$name" --hosts 4 --data-size 4G >/dev/null
run=/run/clusterctl/labs/$name
dest=$run/data                       # the same path on every host, a different mount on each
hostdata() { echo "$run/hosts/$1/data"; }
cc() { "$CLUSTERCTL" --lab "$name" "$@"; }
cc discover -o "$tmp/c.json" >/dev/null
cc network apply "$tmp/c.json" >/dev/null

src=$tmp/src/weights
mkdir -p "$src/sub"
head -c $((3 * 1024 * 1024 * 1024)) /dev/urandom >"$src/model.bin"
head -c 100000 /dev/urandom >"$src/sub/small.bin"
echo config >"$src/a b 'q\" c.json"
: >"$src/sub/empty"
ln -s ../model.bin "$src/sub/link"
chmod 0640 "$src/sub/small.bin"
touch -d '2024-01-02 03:04:05.123456789' "$src/sub/small.bin"

# Every target's copy equals the source: content, mode, mtime (ns), link target.
check_copies() {
  local h f
  for h in h2 h3 h4; do
    [ -s "$tmp/want" ] || (cd "$src/.." && find weights -type f -print0 | sort -z | xargs -0 xxhsum -H2) >"$tmp/want"
    (cd "$(hostdata $h)" && find weights -type f -print0 | sort -z | xargs -0 xxhsum -H2) >"$tmp/got" ||
      fail "$h: no tree at $(hostdata $h)"
    diff "$tmp/want" "$tmp/got" >/dev/null || fail "$h: contents differ: $(diff "$tmp/want" "$tmp/got" | head)"
    for f in model.bin sub/small.bin "a b 'q\" c.json" sub/empty; do
      [ "$(stat -c '%a %Y.%y' "$src/$f")" = "$(stat -c '%a %Y.%y' "$(hostdata $h)/weights/$f")" ] ||
        fail "$h: $f: mode/mtime $(stat -c '%a %y' "$(hostdata $h)/weights/$f"), not $(stat -c '%a %y' "$src/$f")"
    done
    [ "$(readlink "$(hostdata $h)/weights/sub/link")" = ../model.bin ] || fail "$h: sub/link is not the link"
    if ls -a "$(hostdata $h)"/weights/ "$(hostdata $h)"/weights/sub | grep -q '\.ccpush-'; then
      fail "$h: a part file is left"
    fi
  done
  [ ! -e "$dest/weights" ] || fail "the root namespace's $dest got a copy: the hosts do not write to their own"
}

cc push --cluster "$tmp/c.json" "$src" --dest "$dest" >"$tmp/out1" 2>&1 ||
  fail "push exited $?: $(cat "$tmp/out1")"
check_copies
grep -q "over tcp on the cables" "$tmp/out1" || fail "push did not use the cables' TCP: $(cat "$tmp/out1")"

cc --json push --cluster "$tmp/c.json" "$src" --dest "$dest" >"$tmp/again.json" 2>"$tmp/again.err" ||
  fail "second push exited $?: $(cat "$tmp/again.err")"
python3 - "$tmp/again.json" <<'PY' || fail "second push: $(cat "$tmp/again.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["code"] == 0 and r["sent_bytes"] == 0, r
assert sorted(t["host"] for t in r["targets"]) == ["h2", "h3", "h4"], r
for t in r["targets"]:
    assert t["bytes"] == 0 and t["files_sent"] == 0 and t["files_skipped"] == 4 and not t["errors"], t
PY

# Interrupted half way, then resumed.
for h in h2 h3 h4; do rm -f "$(hostdata $h)/weights/model.bin"; done
"$CLUSTERCTL" --lab "$name" push --cluster "$tmp/c.json" "$src" --dest "$dest" --chunk 1048576 \
  >"$tmp/int.out" 2>&1 &  # not through cc(): $! must be clusterctl itself
pid=$!
part=""
for _ in $(seq 1 600); do
  part=$(ls "$(hostdata h4)"/weights/.ccpush-*.part 2>/dev/null | head -n 1 || true)
  if [ -n "$part" ] && [ "$(stat -c %s "$part")" -ge $((1024 * 1024 * 1024)) ]; then break; fi
  sleep 0.1
done
kill -TERM "$pid"  # (a background job of a script ignores SIGINT; TERM is handled the same)
rc=0
wait "$pid" || rc=$?
[ "$rc" -eq 130 ] || fail "interrupted push exited $rc, not 130: $(cat "$tmp/int.out")"
for h in h2 h3 h4; do
  [ ! -e "$(hostdata $h)/weights/model.bin" ] || fail "$h: model.bin is under its final name after Ctrl-C"
done
have=$(stat -c %s "$part")
[ "$have" -ge $((1024 * 1024 * 1024)) ] || fail "the part holds only $have bytes"
# The rank processes end once their sockets close; a loaded machine can take a few seconds.
# A <defunct> entry is a rank that has ended and waits for its parent to reap it (here the
# sandbox's pid 1, once the ssh session that started it is gone): dead, so not counted.
# Wait up to 20 s, then name what still runs and in which state.
left=""
for _ in $(seq 1 200); do
  # the name, 15 characters: not a build mentioning it
  left=$(ps -C clusterctl-push -o pid=,stat= | awk '$2 !~ /^Z/ {print $1}' || true)  # ps: 1 if none
  [ -z "$left" ] && break
  sleep 0.1
done
[ -z "$left" ] || fail "rank processes left after 20 s: $(ps -o pid=,ppid=,stat=,args= -p "$(echo $left | tr ' ' ,)")"
cc --json push --cluster "$tmp/c.json" "$src" --dest "$dest" >"$tmp/resume.json" 2>"$tmp/resume.err" ||
  fail "resumed push exited $?: $(cat "$tmp/resume.err")"
python3 - "$tmp/resume.json" "$have" <<'PY' || fail "resumed push: $(cat "$tmp/resume.json")"
import json, sys
r, have = json.load(open(sys.argv[1])), int(sys.argv[2])
size = 3 * 1024 ** 3
assert r["code"] == 0, r
# Every target resumes from the smallest part among them; h4's was at least `have` bytes when
# the push stopped, and the others were written in the same broadcasts.
assert r["sent_bytes"] <= size - have + 64 * 1024 * 1024, (r["sent_bytes"], size - have)
assert r["sent_bytes"] > 0, r
PY
check_copies

# Shares: layers to one host each, the config to all.
shard=$tmp/src/shard
mkdir -p "$shard/layers"
for i in 0 1 2; do head -c $((24 * 1024 * 1024 + i)) /dev/urandom >"$shard/layers/l$i.bin"; done
echo '{"layers": 3}' >"$shard/config.json"
cat >"$tmp/shares.yaml" <<'YAML'
h2: [l0.bin]
h3:
  - "shard/layers/l[12].bin"
h4: [l2.bin]
YAML
cc --json push --cluster "$tmp/c.json" "$shard" --dest "$dest/shares" --manifest "$tmp/shares.yaml" \
  >"$tmp/shares.json" 2>"$tmp/shares.err" || fail "push with shares exited $?: $(cat "$tmp/shares.err")"
want_files() {  # HOST FILE...: exactly these files under HOST's shares/shard
  local h=$1 got want
  shift
  got=$(cd "$(hostdata $h)/shares" && find shard -type f | sort | tr '\n' ' ')
  want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
  [ "$got" = "$want" ] || fail "$h: shares gave '$got', not '$want'"
  for f in "$@"; do
    cmp -s "$tmp/src/$f" "$(hostdata $h)/shares/$f" || fail "$h: $f differs from the source"
  done
}
want_files h2 shard/config.json shard/layers/l0.bin
want_files h3 shard/config.json shard/layers/l1.bin shard/layers/l2.bin
want_files h4 shard/config.json shard/layers/l2.bin
python3 - "$tmp/shares.json" <<'PY' || fail "push with shares: $(cat "$tmp/shares.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["code"] == 0 and r["transport"] == "tcp" and r["network"] == "cables", r
mib = 1024 * 1024
by = {t["host"]: t for t in r["targets"]}
assert by["h2"]["bytes"] == 24 * mib + 14 and by["h2"]["files_sent"] == 2, by["h2"]
assert by["h3"]["bytes"] == 48 * mib + 3 + 14 and by["h3"]["files_sent"] == 3, by["h3"]
assert by["h4"]["bytes"] == 24 * mib + 2 + 14 and by["h4"]["files_sent"] == 2, by["h4"]
PY
printf 'h3: [nothing-like-this*]\nh9: [l0.bin]\nh1: [l1.bin]\n' >"$tmp/bad.yaml"
rc=0
cc push --cluster "$tmp/c.json" "$shard" --dest "$dest/shares" --manifest "$tmp/bad.yaml" >"$tmp/bad.out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "a bad manifest exited $rc, not 2: $(cat "$tmp/bad.out")"
grep -q "bad.yaml:2:1: h9: is not a target of this push (the targets: h2, h3, h4)" "$tmp/bad.out" &&
  grep -q "bad.yaml:3:1: h1: is the source of this push" "$tmp/bad.out" ||
  fail "a bad manifest's hosts are not named with their lines: $(cat "$tmp/bad.out")"
printf 'h3: [nothing-like-this*]\n' >"$tmp/bad.yaml"
rc=0
cc push --cluster "$tmp/c.json" "$shard" --dest "$dest/shares" --manifest "$tmp/bad.yaml" >"$tmp/bad.out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "bad.yaml:1: h3: 'nothing-like-this\*' matches no file of the push" "$tmp/bad.out" ||
  fail "a share naming no file exited $rc: $(cat "$tmp/bad.out")"

# A source written with a trailing slash (tab completion) is the directory itself: by default
# it lands at the same path on every target, not inside itself.
mkdir -p "$(hostdata h1)/sl/tiny"
echo slash >"$(hostdata h1)/sl/tiny/f"
cc push --cluster "$tmp/c.json" "$dest/sl/tiny/" >"$tmp/slash.out" 2>&1 ||
  fail "push of a source with a trailing slash exited $?: $(cat "$tmp/slash.out")"
for h in h2 h3 h4; do
  [ "$(cat "$(hostdata $h)/sl/tiny/f" 2>/dev/null)" = slash ] && [ ! -e "$(hostdata $h)/sl/tiny/tiny" ] ||
    fail "$h: a source with a trailing slash did not land at $dest/sl/tiny: $(find "$(hostdata $h)/sl" | head)"
done

# One directory seen from two hosts (the lab's hosts share this machine's file system outside
# their data directories): refused before anything is written.
rc=0
cc push --cluster "$tmp/c.json" "$shard/config.json" --dest "$tmp/shared" >"$tmp/same.out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "a push to one directory seen by 3 hosts exited $rc: $(cat "$tmp/same.out")"
grep -q "h3: its destination is the very directory h2 writes" "$tmp/same.out" ||
  fail "the shared destination is not named: $(cat "$tmp/same.out")"
[ ! -e "$tmp/shared/config.json" ] || fail "the refused push wrote config.json"

# Too little space: a sparse 20 GiB file (nothing is read: the preflight stops first).
truncate -s 20G "$tmp/src/huge.img"
before=$(for h in h2 h3 h4; do find "$(hostdata $h)" | sort; done | sha256sum)
rc=0
cc push --cluster "$tmp/c.json" "$tmp/src/huge.img" --dest "$dest" >"$tmp/space.out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "push of 20 GiB into 4 GiB exited $rc, not 2: $(cat "$tmp/space.out")"
for h in h2 h3 h4; do
  grep -q "^clusterctl push: $h: needs 21474836480 bytes at the destination and [0-9]* are free" "$tmp/space.out" ||
    fail "the space problem of $h is not named: $(cat "$tmp/space.out")"
done
after=$(for h in h2 h3 h4; do find "$(hostdata $h)" | sort; done | sha256sum)
[ "$before" = "$after" ] || fail "the failed preflight wrote something"
# Only push's own lines: launch's note about the rank program ("clusterctl: rank 0 on h1 failed
# (exit 2): ending the job ...") came first and hid the real message.
if grep -qE "ending the job|^clusterctl: rank " "$tmp/space.out"; then
  fail "launch's own note leaked into push's preflight failure: $(cat "$tmp/space.out")"
fi
grep -v "^clusterctl push: note: " "$tmp/space.out" | head -1 | grep -q "^clusterctl push: h2: needs " ||
  fail "push's first line is not its real message: $(cat "$tmp/space.out")"

rc=0
cc push "$src/sub/small.bin" --dest /dev/null >"$tmp/null.out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "push to /dev/null exited $rc: $(cat "$tmp/null.out")"
grep -q "h2: /dev/null: not a directory" "$tmp/null.out" || fail "/dev/null not named: $(cat "$tmp/null.out")"
# A cable cut mid-push (h1 tb2, the h1-h3 cable, set down once bytes arrive): the cable is
# named at once and the push ends (exit 4) about 20 s later naming it. Before, the ranks waited
# out --timeout (300 s) on the dead cable and push said nothing at all.
for h in h2 h3 h4; do rm -rf "$(hostdata $h)/weights" "$(hostdata $h)/cut"; done
rc=0
cc push --cluster "$tmp/c.json" "$src/model.bin" --dest "$dest/cut" >"$tmp/cut.out" 2>&1 &
pushpid=$!
for _ in $(seq 600); do
  ls -a "$(hostdata h3)/cut" 2>/dev/null | grep -q '\.ccpush-' && break
  sleep 0.1
done
ip netns exec "cc-$name-h1" ip link set tb2 down
cut=$(date +%s)
wait "$pushpid" || rc=$?
took=$(($(date +%s) - cut))
ip netns exec "cc-$name-h1" ip link set tb2 up
[ "$rc" -eq 4 ] || fail "a push whose cable was cut exited $rc, not 4: $(cat "$tmp/cut.out")"
grep -qE "^clusterctl: cable h1 tb2 - h3 tb[0-9] is down: .*h1 tb2: administratively down" "$tmp/cut.out" ||
  fail "the cut cable was not named as it went down: $(cat "$tmp/cut.out")"
grep -qE "the push did not finish \(cable h1 tb2 - h3 tb[0-9] is down" "$tmp/cut.out" ||
  fail "push's error does not name the cut cable: $(cat "$tmp/cut.out")"
[ "$took" -le 60 ] || fail "the push ended $took s after the cut: $(cat "$tmp/cut.out")"
for h in h2 h3 h4; do rm -rf "$(hostdata $h)/cut"; done
echo "push: 3 GiB tree to 3 hosts, skip, resume, space and destination checks passed; a cable cut mid-push is named and ends it in ${took} s"
