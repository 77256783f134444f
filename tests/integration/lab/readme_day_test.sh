#!/usr/bin/env bash
# README's "A day on the lab, start to end": every command of its block runs as written and
# exits 0, and prints every "quoted" text of its comment. Run in a copy of the checkout's layout
# (templates/, build/release/bench/clustercomm-perf as ./scripts/demo builds it) on a lab whose
# name is this build tree's, not `default` (lab names are machine-wide: a `default` lab of the
# machine's owner is never touched): `lab up`/`lab down` get --name NAME, `--lab default`
# becomes `--lab NAME`, and the job file's `cluster: lab:default` names it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
root=$(cd "$HERE/../../.." && pwd)
name="rd${CLUSTERCTL_TEST_SUFFIX:-$$}"
perf="$(dirname "$CLUSTERCTL")/../bench/clustercomm-perf"
[ -x "$perf" ] || fail "no clustercomm-perf beside $CLUSTERCTL (build the clustercomm-perf target)"
tmp=$(mktemp -d)
trap '"$CLUSTERCTL" lab down --name "$name" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/templates" "$tmp/build/release/bench" "$tmp/bin"
sed "s/^cluster: lab:default$/cluster: lab:$name/" "$root/templates/allreduce-smoke.yaml" \
  >"$tmp/templates/allreduce-smoke.yaml"
grep -q "^cluster: lab:$name$" "$tmp/templates/allreduce-smoke.yaml" || fail "the template names no lab:default"
ln -s "$perf" "$tmp/build/release/bench/clustercomm-perf"
ln -s "$CLUSTERCTL" "$tmp/bin/clusterctl"

# The block: the first ```sh after the heading, up to its closing ```.
block=$(awk '/^### A day on the lab, start to end$/ {s=1} s && /^```sh$/ {b=1; next} b && /^```$/ {exit} b' \
  "$root/README.md")
[ "$(grep -c '^clusterctl ' <<<"$block")" -ge 10 ] || fail "README's block is missing or short: $block"
grep -qx 'clusterctl lab up .*' <<<"$block" || fail "the block does not start a lab"

cd "$tmp"
n=0
while IFS= read -r line; do
  cmd=${line%%  #*}
  cmd=$(sed 's/ *$//' <<<"$cmd")
  comment=${line#"$cmd"}
  run=$(sed -e "s/^clusterctl lab up\$/clusterctl lab up --name $name/" \
            -e "s/^clusterctl lab down\$/clusterctl lab down --name $name/" \
            -e "s/--lab default /--lab $name /" <<<"$cmd")
  rc=0
  out=$(PATH="$tmp/bin:$PATH" bash -c "$run" 2>&1) || rc=$?
  [ "$rc" -eq 0 ] || fail "README: \`$cmd\` (run as \`$run\`) exited $rc: $out"
  while IFS= read -r want; do
    [ -n "$want" ] || continue
    grep -qF -- "$want" <<<"$out" || fail "README: \`$cmd\` does not print \"$want\" (its comment says so): $out"
  done < <(grep -o '"[^"]*"' <<<"$comment" | sed 's/^"//; s/"$//')
  n=$((n + 1))
  echo "ok: $cmd"
done <<<"$block"
[ -z "$(ip netns list | grep "cc-$name-")" ] || fail "the block's lab down left namespaces"
echo "PASS: README's day on the lab, $n commands as written"
