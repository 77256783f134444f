# Shared by the host-side scripts of tests/rdma-vm.
# shellcheck shell=bash disable=SC2034

RDMA_VM_CACHE=${RDMA_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clusterctl/rdma-vm}
RDMA_VM_EXIT_SKIP=77     # ctest SKIP_RETURN_CODE
RDMA_VM_EXIT_TIMEOUT=124 # the guest did not finish in time (as timeout(1))
RDMA_VM_EXIT_HARNESS=125 # the harness itself failed (image, boot, mesh)

log() { echo "rdma-vm: $*" >&2; }
die() {
  echo "rdma-vm: error: $*" >&2
  exit "$RDMA_VM_EXIT_HARNESS"
}
skip() {
  echo "SKIPPED: $*"
  exit "$RDMA_VM_EXIT_SKIP"
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
