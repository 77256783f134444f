#!/usr/bin/env bash
# The promises of tests/rdma-vm/run (README.md, "Interface"), from the outside (ctest
# rdma.vm-run-contract): usage errors exit 2; one SKIPPED line and exit 77 without QEMU;
# COMMAND's stdout, stderr and exit status come back apart; a guest that outlives --timeout is
# killed with exit 124 and a message; nothing is left behind (run directories, QEMU).
set -uo pipefail
run=$(cd "$(dirname "$0")" && pwd)/run
fails=0 passes=0
check() { # check WHAT CONDITION...
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
export TMPDIR=$work/tmp # run's temporary run directories land here: it must be empty after
mkdir -p "$TMPDIR"

"$run" --hosts 2 >"$work/out" 2>"$work/err"
check "no COMMAND: exit 2" [ $? -eq 2 ]
"$run" --hosts 1 -- true >"$work/out" 2>"$work/err"
check "--hosts 1: exit 2" [ $? -eq 2 ]
check "--hosts 1: the message names the flag" grep -q -- "--hosts 1: must be 2..8" "$work/err"
"$run" --hosts 2 --mtu 100 -- true >"$work/out" 2>"$work/err"
check "--mtu 100: exit 2" [ $? -eq 2 ]
check "--mtu 100: the message names the flag and the range" grep -q -- "--mtu 100: must be 1280..9000" "$work/err"

RDMA_VM_QEMU=/nonexistent/qemu-system-x86_64 "$run" --hosts 2 -- true >"$work/out" 2>"$work/err"
check "without QEMU: exit 77" [ $? -eq 77 ]
check "without QEMU: exactly one SKIPPED line on stdout" \
  [ "$(wc -l <"$work/out")" -eq 1 -a "$(grep -c '^SKIPPED: qemu-system-x86_64 is not installed' "$work/out")" -eq 1 ]

# From here on QEMU must run: where it cannot, this test is skipped as a whole.
# (the cables' default MTU 9000 makes the rxe ports' active_mtu 4096, as on a Mac)
"$run" --hosts 2 -- bash -c 'echo "out $RDMA_VM_HOSTS mtu $RDMA_VM_MTU active_mtu $(ibv_devinfo -d rxe0_1 | awk "/active_mtu/ {print \$2}")"; echo err >&2; tr -d " \n" <"$RDMA_VM_DEVICES_FILE"; exit 7' \
  >"$work/out" 2>"$work/err"
status=$?
if [ "$status" -eq 77 ]; then
  cat "$work/out"
  exit 77
fi
check "COMMAND's exit status comes back (7)" [ "$status" -eq 7 ]
check "COMMAND's stdout alone on stdout, with MTU 9000, active_mtu 4096 and the 2-host matrix" \
  [ "$(cat "$work/out")" = "out 2 mtu 9000 active_mtu 4096"$'\n''[[null,"rxe0_1"],["rxe1_0",null]]' ]
[ "$(head -1 "$work/out")" = "out 2 mtu 9000 active_mtu 4096" ] || head -1 "$work/out"
check "COMMAND's stderr on stderr" grep -qx err "$work/err"
check "the timings line on stderr" grep -q "^rdma-vm: image .* s, guest boot to chroot .* exit status 7$" "$work/err"
grep "^rdma-vm: image" "$work/err"

"$run" --hosts 2 --timeout 8 -- sleep 600 >"$work/out" 2>"$work/err"
status=$?
check "a guest past --timeout: exit 124" [ "$status" -eq 124 ]
check "a guest past --timeout: the message says so" grep -q "did not finish within 8 s (--timeout); QEMU was killed" "$work/err"
check "no run directory left" [ -z "$(ls -A "$TMPDIR")" ]
check "no QEMU left" [ -z "$(pgrep -f "mount_tag=out0.*$work" || true)" ]

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
