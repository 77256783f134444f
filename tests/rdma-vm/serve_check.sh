#!/usr/bin/env bash
# ctest rdma.vm-serve.exec: `serve exec` in the guest that the fixture rdma.vm-serve.up started
# (2 hosts): a command's output, environment and exit status come back; one past its --timeout
# is killed in the guest (124) and the guest goes on serving.
set -uo pipefail
serve=$(cd "$(dirname "$0")" && pwd)/serve
dir=${1:?usage: serve_check.sh DIR}
fails=0 passes=0
check() {
  local what=$1
  shift
  if "$@"; then
    echo "ok: $what"
    passes=$((passes + 1))
  else
    echo "FAIL: $what"
    fails=$((fails + 1))
  fi
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

SERVE_CHECK=passed-through "$serve" exec "$dir" -- bash -c \
  'echo "$SERVE_CHECK $RDMA_VM_HOSTS $RDMA_VM_DEV_1_0"; echo err >&2; exit 3' >"$work/out" 2>"$work/err"
status=$?
if ((status == 77)); then
  cat "$work/out"
  exit 77
fi
check "exit status comes back (3)" [ "$status" -eq 3 ]
check "stdout, with this environment and the mesh's" [ "$(cat "$work/out")" = "passed-through 2 rxe1_0" ]
check "stderr apart" [ "$(cat "$work/err")" = err ]
"$serve" exec "$dir" --timeout 2 -- sleep 100 >"$work/out" 2>"$work/err"
check "a command past --timeout: 124" [ $? -eq 124 ]
"$serve" exec "$dir" -- ibv_devices >"$work/out" 2>"$work/err"
check "the guest still serves after a timeout" [ $? -eq 0 ]
check "the mesh's 2 devices listed" [ "$(grep -c 'rxe[01]_[01]' "$work/out")" -eq 2 ]
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
