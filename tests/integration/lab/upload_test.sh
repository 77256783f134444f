#!/usr/bin/env bash
# A job's `upload:` with an absolute dest on a lab, whose hosts share this machine's file system:
# every host uploads the same file to the same path at once. Each launch succeeds (about 1 in 6
# failed "renaming into place ...: failure (disk full, or the target exists ...)", exit 2: one
# host's upload removed the target while another renamed its copy there), the file holds what
# was uploaded (an absolute dest replaces the file on every host: README, "upload"), and no
# temporary file is left beside it. A dest that is a directory is not replaced: exit 3 (the
# host, not the job file, could not take it), naming what the dest is.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
name=ctlupl${CLUSTERCTL_TEST_SUFFIX:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; "$CLUSTERCTL" lab down --name "$name" >/dev/null 2>&1 || true' EXIT

"$CLUSTERCTL" lab up --name "$name" --hosts 4 >/dev/null
mkdir "$tmp/x"
echo "the launching machine's own file" >"$tmp/x/absdest.txt"
printf 'print("train")\n' >"$tmp/train.py"
job() {  # job FILE DEST
  printf '{"name": "upl", "cluster": "lab:%s", "command": ["true"], "logs": "%s/logs",
    "upload": [{"src": "%s/train.py", "dest": "%s"}]}\n' "$name" "$tmp" "$tmp" "$2" >"$1"
}
job "$tmp/job.yaml" "$tmp/x/absdest.txt"
for i in $(seq 10); do
  rc=0
  "$CLUSTERCTL" launch "$tmp/job.yaml" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" -eq 0 ] || fail "launch $i with an absolute upload dest on 4 hosts exited $rc: $(cat "$tmp/err")"
done
cmp -s "$tmp/train.py" "$tmp/x/absdest.txt" || fail "absdest.txt is not the upload: $(cat "$tmp/x/absdest.txt")"
[ "$(ls -A "$tmp/x")" = "absdest.txt" ] || fail "left beside the dest: $(ls -A "$tmp/x")"

mkdir "$tmp/x/adir"
job "$tmp/dirjob.yaml" "$tmp/x/adir"
rc=0
"$CLUSTERCTL" launch "$tmp/dirjob.yaml" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 3 ] || fail "launch with a directory as upload dest exited $rc, want 3: $(cat "$tmp/err")"
grep -q "upload of $tmp/train.py to $tmp/x/adir failed (renaming .* into place): .*; $tmp/x/adir is a directory now: it is not replaced; remove it or choose another \`dest:\`" "$tmp/err" ||
  fail "no message naming the directory: $(cat "$tmp/err")"
[ -d "$tmp/x/adir" ] && [ -z "$(ls -A "$tmp/x/adir")" ] || fail "the directory was changed"
[ "$(ls -A "$tmp/x" | sort | tr '\n' ' ')" = "absdest.txt adir " ] || fail "left beside the dest: $(ls -A "$tmp/x")"
echo "PASS"
