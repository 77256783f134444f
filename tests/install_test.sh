#!/usr/bin/env bash
# `cmake --install` into a prefix under the build tree, then a user's job (tests/install/job)
# built out of tree against it twice, with find_package(clustercomm CONFIG) and with
# pkg-config, each run as 2 and 4 ranks over TCP on loopback, every rank checking its results.
# Usage: install_test.sh BUILD CXX [FLAGS]   (FLAGS: compile and link flags the build used
# that a user of its static library needs too, e.g. the sanitizers or -stdlib=libc++)
# BUILD may be clusterctl's build tree or comm/'s alone (then only the library is checked).
set -euo pipefail
build=$(cd "$1" && pwd) cxx=$2 flags=${3:-}
comm_only=0
grep -q '^CMAKE_PROJECT_NAME:STATIC=clustercomm$' "$build/CMakeCache.txt" && comm_only=1
src=$(cd "$(dirname "$0")" && pwd)/install/job
work="$build/install-test"
prefix="$work/prefix"
rm -rf "$work"
mkdir -p "$work"
fail=0

echo "==> cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" ||
  { cat "$work/install.log"; echo "FAIL: cmake --install failed (above)"; exit 1; }
tools="bin/clusterctl share/clusterctl/templates/allreduce-smoke.yaml
       share/clusterctl/templates/health-thresholds.yaml"
((comm_only)) && tools=""
# shellcheck disable=SC2086  # $tools is a list
for f in $tools lib/libclustercomm.a include/clustercomm/comm/clustercomm.h \
         include/clustercomm/comm/config.h include/clustercomm/comm/error.h \
         include/clustercomm/comm/types.h lib/cmake/clustercomm/clustercommConfig.cmake \
         lib/cmake/clustercomm/clustercommConfigVersion.cmake \
         lib/cmake/clustercomm/clustercommTargets.cmake lib/pkgconfig/clustercomm.pc; do
  [ -e "$prefix/$f" ] || { echo "FAIL: $prefix/$f was not installed"; fail=1; }
done
# Public headers only: clustercomm.h and what it includes.
extra=$(cd "$prefix/include/clustercomm" && find . -type f | sort | grep -vxE \
  './comm/(clustercomm|config|error|types)\.h' || true)
[ -z "$extra" ] || { echo "FAIL: private headers installed: $extra"; fail=1; }
if ((!comm_only)); then
  v=$("$prefix/bin/clusterctl" --version 2>&1) || { echo "FAIL: installed clusterctl --version: $v"; fail=1; }
fi

echo "==> a job built with find_package(clustercomm CONFIG REQUIRED)"
if ! cmake -S "$src" -B "$work/cmake-job" -DCMAKE_CXX_COMPILER="$cxx" \
       -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_FLAGS="$flags" \
       -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$work/cmake-job.log" 2>&1 ||
   ! cmake --build "$work/cmake-job" >>"$work/cmake-job.log" 2>&1; then
  cat "$work/cmake-job.log"; echo "FAIL: the CMake job did not build against $prefix (above)"
  exit 1
fi

echo "==> a job built with pkg-config --cflags --libs clustercomm"
pc_flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs clustercomm) ||
  { echo "FAIL: pkg-config does not find clustercomm in $prefix/lib/pkgconfig"; exit 1; }
# shellcheck disable=SC2086  # flags are words
if ! "$cxx" -std=c++20 $flags "$src/job.cc" $pc_flags -o "$work/pc-job" 2>"$work/pc-job.log"; then
  cat "$work/pc-job.log"; echo "FAIL: the pkg-config job did not build: $cxx ... $pc_flags"
  exit 1
fi

# run_ranks PROGRAM N: N ranks on 127.0.0.1, each must print its ok line within 120 s.
run_ranks() {
  local prog=$1 n=$2 port r pids=() deadline
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  for ((r = 0; r < n; r++)); do
    env CLUSTERCOMM_RANK=$r CLUSTERCOMM_SIZE="$n" CLUSTERCOMM_COORDINATOR="127.0.0.1:$port" \
      CLUSTERCOMM_TOKEN=install-test CLUSTERCOMM_TRANSPORT=tcp CLUSTERCOMM_TIMEOUT_MS=30000 \
      "$prog" >"$work/out.$n.$r" 2>&1 &
    pids+=($!)
  done
  deadline=$((SECONDS + 120))
  for ((r = 0; r < n; r++)); do
    while kill -0 "${pids[r]}" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    if kill -0 "${pids[r]}" 2>/dev/null; then
      kill -9 "${pids[@]}" 2>/dev/null || true
      echo "FAIL: $prog with $n ranks: rank $r still running after 120 s"; fail=1; return
    fi
    wait "${pids[r]}" || true
  done
  local want=$((n * (n + 1) / 2))
  for ((r = 0; r < n; r++)); do
    if ! grep -qx "rank $r of $n: ok sum=$want transport=tcp" "$work/out.$n.$r"; then
      echo "FAIL: $(basename "$prog") rank $r of $n: $(cat "$work/out.$n.$r")"; fail=1
    fi
  done
  echo "$(basename "$prog"): $n ranks: $(grep -h ' ok ' "$work"/out."$n".* | wc -l) of $n ok"
}
for n in 2 4; do
  run_ranks "$work/cmake-job/user_job" "$n"
  run_ranks "$work/pc-job" "$n"
done
((fail == 0)) && echo "install: ok"
exit "$fail"
