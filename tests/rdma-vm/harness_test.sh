#!/bin/bash
# The harness's own test, run in the guest by `run` (ctest rdma.vm-harness: 4 hosts, 2 cables):
#   tests/rdma-vm/run --hosts N [--cables-per-pair K] -- tests/rdma-vm/harness_test.sh VERBS_PROBE [--perftest]
# Checks the mesh description against an expectation computed here, runs (with --perftest)
# perftest UC latency and bandwidth between hosts 0 and 1 (checking the traffic crossed their
# veth), the
# host-built verbs program on every cable, and that program's refusals. One boot, many cases.
set -uo pipefail
here=$(dirname "$0")
# shellcheck source=tests/rdma-vm/guest-lib.sh
source "$here/guest-lib.sh"
probe=${1:?usage: harness_test.sh VERBS_PROBE [--perftest]}
n=$RDMA_VM_HOSTS
kk=$RDMA_VM_CABLES_PER_PAIR
sfx0=""
((kk == 1)) || sfx0=_0

# want_matrix M CABLES: the expected device matrix of the first M hosts with CABLES cables per
# pair, as the README spells the names.
want_matrix() {
  local m=$1 cables=$2 i j k row rows="" cell
  for ((i = 0; i < m; i++)); do
    row=""
    for ((j = 0; j < m; j++)); do
      if ((i == j)); then
        cell=null
      elif ((kk == 1)); then
        cell="\"rxe${i}_$j\""
      elif ((cables == 1)); then
        cell="\"rxe${i}_${j}_0\""
      else
        cell=""
        for ((k = 0; k < cables; k++)); do cell+="${cell:+, }\"rxe${i}_${j}_$k\""; done
        cell="[$cell]"
      fi
      row+="${row:+, }$cell"
    done
    rows+="${rows:+,$'\n'}  [$row]"
  done
  printf '[\n%s\n]' "$rows"
}
same_file() { # same_file FILE TEXT
  local got
  got=$(<"$1")
  [ "$got" = "$2" ] || { echo "$1 is:"$'\n'"$got"$'\n'"expected:"$'\n'"$2"; return 1; }
}

# The matrices and variables the README promises, computed independently of guest.sh.
check_description() {
  local i k m want got
  same_file "$RDMA_VM_DEVICES_FILE" "$(want_matrix "$n" "$kk")" || return 1
  for ((m = 2; m <= n; m++)); do
    same_file "$RDMA_VM_OUT/devices-$m.json" "$(want_matrix "$m" "$kk")" || return 1
    if ((kk > 1)); then same_file "$RDMA_VM_OUT/devices-$m-1.json" "$(want_matrix "$m" 1)" || return 1; fi
  done
  want="" got=""
  for ((k = 0; k < kk; k++)); do
    if ((kk == 1)); then want="rxe0_1"; else want+="${want:+ }rxe0_1_$k"; fi
    got+="${got:+ }10.231.$k.2" # cable k of the pair 0-1 is cable number k; host 1 is its .2
  done
  [ "$RDMA_VM_DEV_0_1" = "$want" ] || { echo "RDMA_VM_DEV_0_1='$RDMA_VM_DEV_0_1', expected '$want'"; return 1; }
  [ "$RDMA_VM_ADDR_1_0" = "$got" ] || { echo "RDMA_VM_ADDR_1_0='$RDMA_VM_ADDR_1_0', expected '$got'"; return 1; }
  local count=0 d netdev
  for ((i = 0; i < n; i++)); do
    local var=RDMA_VM_HOST_${i}_DEVICES
    for d in ${!var}; do
      [ -d "/sys/class/infiniband/$d" ] || { echo "$d (in $var) is not an RDMA device"; return 1; }
      read -r netdev <"/sys/class/infiniband/$d/ports/1/gid_attrs/ndevs/1"
      [ "$netdev" = "e${d#rxe}" ] || { echo "$d's GID 1 is on $netdev, not e${d#rxe}"; return 1; }
      count=$((count + 1))
    done
  done
  ((count == n * (n - 1) * kk)) || { echo "$count devices in RDMA_VM_HOST_*_DEVICES, expected $((n * (n - 1) * kk))"; return 1; }
  echo "devices matrix, variables and $count rxe devices as documented"
}

# perftest between the two ends of host 0's first cable to host 1; the bytes must cross the veth.
# At least MIN_BYTES must leave host 1's veth: proof that the policy routing sends rxe's UDP
# over the cable, not over the loopback.
perftest_over_cable() {
  local min=$1 tool=$2
  shift 2
  local s=${RDMA_VM_DEV_0_1%% *} c=${RDMA_VM_DEV_1_0%% *} tx0 tx1
  read -r tx0 <"/sys/class/net/e${c#rxe}/statistics/tx_bytes"
  rvm_perftest "$tool" "$s" "$c" "${RDMA_VM_ADDR_0_1%% *}" "$@" || return 1
  read -r tx1 <"/sys/class/net/e${c#rxe}/statistics/tx_bytes"
  echo "$tool: e${c#rxe} sent $((tx1 - tx0)) B"
  ((tx1 - tx0 >= min)) || { echo "$tool: under $min B crossed e${c#rxe}: the traffic did not take the cable"; return 1; }
}

# The probe must refuse what is wrong, naming it: exit 1 and the expected message.
expect_refusal() {
  local want=$1 out status
  shift
  out=$("$probe" "$@" 2>&1)
  status=$?
  echo "$out"
  ((status == 1)) || { echo "expected exit 1, got $status"; return 1; }
  [[ $out == *"$want"* ]] || { echo "expected the message to contain: $want"; return 1; }
}
wrong_gid() { # the mesh file with cable 0's two addresses swapped
  sed -e 's/"10\.231\.0\.1"/"X"/; s/"10\.231\.0\.2"/"10.231.0.1"/; s/"X"/"10.231.0.2"/' \
    "$RDMA_VM_MESH_FILE" >/run/mesh-swapped.json
  expect_refusal "cable 0: host 0 rxe0_1$sfx0: GID index 1 is ::ffff:10.231.0.1, expected ::ffff:10.231.0.2" \
    --mesh /run/mesh-swapped.json --cable 0
}
wrong_matrix() { # host 0's devices named as host 1's
  sed -e 's/rxe0_1/X/g; s/rxe1_0/rxe0_1/g; s/X/rxe1_0/g' "$RDMA_VM_DEVICES_FILE" >/run/devices-swapped.json
  expect_refusal "cable 0: the matrix names rxe1_0$sfx0 for host 0, the mesh file rxe0_1$sfx0" \
    --devices /run/devices-swapped.json --cable 0
}

echo "harness_test: $n hosts, $kk cable(s) per pair; probe $probe"
rvm_case mesh-description -- check_description
if [ "${2:-}" = --perftest ]; then
  # 1000 x 2 B (~60 B a packet with headers); 200 x 64 KiB.
  rvm_case ib_send_lat-UC --timeout 120 -- perftest_over_cable 50000 ib_send_lat -c UC -n 1000
  rvm_case ib_send_bw-UC --timeout 90 -- perftest_over_cable 13107200 ib_send_bw -c UC -s 65536 -n 200
fi
rvm_case verbs_probe-every-cable --timeout 180 -- "$probe"
rvm_case verbs_probe-refuses-wrong-gid -- wrong_gid
rvm_case verbs_probe-refuses-wrong-matrix -- wrong_matrix
rvm_finish
