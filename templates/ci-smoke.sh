#!/usr/bin/env bash
# A CI smoke check for any CI system (root on a Linux runner): bring up an emulated cluster,
# discover it, verify the mesh, address the cables, run `clusterctl health --quick` with a JUnit
# report, and always take the lab down again, whatever happened (trap on EXIT), once its own
# `lab up` made it.
#
# Settings (environment):
#   CLUSTERCTL      the clusterctl binary (default: clusterctl on PATH)
#   CI_SMOKE_LAB    lab name (default ci-smoke); must not be in use
#   CI_SMOKE_HOSTS  hosts in the lab (default 4)
#   CI_SMOKE_OUT    where cluster.json and health-junit.xml go (default ./ci-smoke-out); point
#                   your CI's JUnit reader at $CI_SMOKE_OUT/health-junit.xml
# Exit status: that of the first failing step (health: 0 all pass, 1 a check failed, 3 a host
# unreachable); lab down's own failure is reported but does not hide an earlier one.
set -euo pipefail
CLUSTERCTL=${CLUSTERCTL:-clusterctl}
lab=${CI_SMOKE_LAB:-ci-smoke}
hosts=${CI_SMOKE_HOSTS:-4}
out=${CI_SMOKE_OUT:-./ci-smoke-out}
clusterctl_path=$(command -v "$CLUSTERCTL") || {
  echo "ci-smoke: $CLUSTERCTL not found: set CLUSTERCTL to the clusterctl binary" >&2
  exit 2
}
mkdir -p "$out"

# Only a lab this run made is taken down: a `lab up` that failed rolled back what it made
# itself, and one refused because lab $lab exists (another job's, another user's) must leave
# that lab alone.
made_lab=no
down() {
  local rc=$?
  if [ "$made_lab" = yes ]; then
    echo "== lab down $lab"
    "$CLUSTERCTL" lab down --name "$lab" || echo "ci-smoke: lab down failed (exit $?)" >&2
  fi
  exit "$rc"
}
trap down EXIT

step() {
  echo "== $*"
}

step "lab up --hosts $hosts --name $lab"
"$CLUSTERCTL" lab up --hosts "$hosts" --name "$lab" >/dev/null
made_lab=yes
step "discover"
"$CLUSTERCTL" --lab "$lab" discover -o "$out/cluster.json"
step "verify-mesh"
"$CLUSTERCTL" verify-mesh "$out/cluster.json" --expect-hosts "$hosts"
step "network apply + plan"
"$CLUSTERCTL" --lab "$lab" network apply
"$CLUSTERCTL" --lab "$lab" network plan "$out/cluster.json" >/dev/null
step "health --quick"
# The lab's hosts share this machine's file system, so they run this very clusterctl.
"$CLUSTERCTL" --lab "$lab" health --quick "$out/cluster.json" --junit "$out/health-junit.xml" \
  --remote-clusterctl "$clusterctl_path"
