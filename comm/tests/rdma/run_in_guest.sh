#!/bin/bash
# ctest entry of the verbs suite: boots the rdma-vm guest once (4 hosts, 2 cables per pair,
# Soft-RoCE) and runs verbs_suite.sh there against BUILD_DIR's test binaries.
# Usage: run_in_guest.sh BUILD_DIR [full|quick]
# Exit 77 (ctest SKIP) with one "SKIPPED: why" line where the guest cannot run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=${1:?usage: run_in_guest.sh BUILD_DIR}
runner=$root/tests/rdma-vm/run
if [ ! -x "$runner" ]; then
  echo "SKIPPED: $runner is missing (the rdma-vm harness is not in this tree)"
  exit 77
fi
cd "$root" || exit 2
exec "$runner" --hosts 4 --cables-per-pair 2 --timeout "${RDMA_VM_TIMEOUT:-1140}" -- \
  "$here/verbs_suite.sh" "$build" "${2:-full}"
