#!/usr/bin/env bash
# The shared-memory transport when /dev/shm is too small for its segment (a container's 64 MiB
# default with many ranks): in a private mount namespace whose /dev/shm is a 64 KiB tmpfs,
#  - CLUSTERCOMM_TRANSPORT unset (auto): both ranks print one line saying why (naming /dev/shm
#    and ENOSPC) and the job runs on TCP (exit 0);
#  - CLUSTERCOMM_TRANSPORT=shm: both ranks fail (exit 3) with that reason;
#  - nothing is left in that /dev/shm either way.
# Needs root and unshare(1) (util-linux); prints SKIPPED and exits 77 without them.
#   comm/tests/shm_full_test.sh PATH/clustercomm_test_rank
set -euo pipefail
rank_bin=$1
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! unshare -m true 2>/dev/null; then
  echo "SKIPPED: needs root and unshare -m (a private mount namespace for a small /dev/shm)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for mode in auto shm; do
  port=$((port + 1))
  # Both ranks in one mount namespace (one host), its /dev/shm a 64 KiB tmpfs.
  unshare -m bash -c '
    mount -t tmpfs -o size=64k tmpfs /dev/shm
    for r in 0 1; do
      CLUSTERCOMM_RANK=$r CLUSTERCOMM_SIZE=2 CLUSTERCOMM_COORDINATOR=127.0.0.1:'"$port"' \
        CLUSTERCOMM_TOKEN=t CLUSTERCOMM_TIMEOUT_MS=10000 CLUSTERCOMM_TRANSPORT='"$mode"' \
        timeout 60 "$0" join >"$1/$r.log" 2>&1 &
      pids[$r]=$!
    done
    st=0
    for r in 0 1; do wait "${pids[$r]}" || echo "$r $?" >>"$1/status"; done
    ls -A /dev/shm >"$1/left"
  ' "$rank_bin" "$out" || true
  for r in 0 1; do
    log=$(cat "$out/$r.log")
    st=$(awk -v r="$r" '$1 == r {print $2}' "$out/status" 2>/dev/null || true)
    st=${st:-0}
    want_st=0 want="the ranks on this host use TCP, not shared memory: rank 0: reserving"
    if [ "$mode" = shm ]; then
      want_st=3 want="CLUSTERCOMM_TRANSPORT=shm, but the ranks on this host cannot share memory: rank 0: reserving"
    fi
    if [ "$st" = "$want_st" ] && [[ $log == *"$want"* ]] && [[ $log == *"No space left on device (/dev/shm is too small"* ]]; then
      echo "ok: $mode, rank $r: exit $st, said why: $(grep -m1 'shared memory' "$out/$r.log" | cut -c1-160)"
    else
      echo "FAIL: $mode, rank $r: exit $st (want $want_st), log: $log"; fail=1
    fi
  done
  if [ -s "$out/left" ]; then echo "FAIL: $mode: left in /dev/shm: $(cat "$out/left")"; fail=1; fi
  rm -f "$out/status" "$out/left"
done
exit "$fail"
