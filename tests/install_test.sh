#!/usr/bin/env bash
# `cmake --install` into a prefix under the build tree, checked file by file, then a user's
# job (tests/install/job) built out of tree against it four ways: find_package(clustercomm
# CONFIG) with clustercomm::clustercomm (the shared library) and clustercomm::clustercomm_static,
# and pkg-config with clustercomm.pc (shared) and clustercomm-static.pc; each run as 2 and 4
# ranks over TCP on loopback, every rank checking its results. The same job is then built
# against the build tree itself (its own clustercommConfig.cmake and clustercomm-uninstalled.pc)
# and run as 2 ranks.
# The prefix must hold exactly the expected files (headers: the public ones only) and what
# install_manifest.txt lists; a second `cmake --install` must change nothing ("Up-to-date"
# for every file, the same files, modes and contents). On Linux, every library that the
# installed clusterctl and libclustercomm.so need (readelf -d) must resolve (ldd) to a file of
# a Debian package (dpkg -S), the SONAME must be libclustercomm.so.SOVERSION, and the .so must
# export nothing of cc::comm that its headers do not declare.
# Usage: install_test.sh BUILD CXX [FLAGS]   (FLAGS: compile and link flags the build used
# that a user of the library needs too, e.g. the sanitizers or -stdlib=libc++)
# BUILD may be clusterctl's build tree or comm/'s alone (then only the library is checked).
set -euo pipefail
build=$(cd "$1" && pwd) cxx=$2 flags=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
comm_only=0
grep -q '^CMAKE_PROJECT_NAME:STATIC=clustercomm$' "$build/CMakeCache.txt" && comm_only=1
src=$root/tests/install/job
work="$build/install-test"
prefix="$work/prefix"
rm -rf "$work"
mkdir -p "$work"
fail=0
FAIL() { echo "FAIL: $*"; fail=1; }

# The one version (root CMakeLists.txt) and the SONAME's part of it (comm/CMakeLists.txt).
version=$(sed -n 's/^project(clusterctl VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
major=${version%%.*} minor=${version#*.} minor=${minor%%.*}
sov=$major
((major == 0)) && sov=$major.$minor
if [ "$(uname -s)" = Darwin ]; then
  shared=(libclustercomm.dylib "libclustercomm.$sov.dylib" "libclustercomm.$version.dylib")
else
  shared=(libclustercomm.so "libclustercomm.so.$sov" "libclustercomm.so.$version")
fi
soname=${shared[1]}

# Every file and link under the prefix: path, mode, content hash or link target.
tree_state() {
  python3 - "$prefix" <<'EOF'
import hashlib, os, sys
root = sys.argv[1]
for d, dirs, files in os.walk(root):
    for n in dirs + files:
        p = os.path.join(d, n)
        rel = os.path.relpath(p, root)
        if os.path.islink(p):
            print(rel, "->", os.readlink(p))
        elif os.path.isfile(p):
            with open(p, "rb") as f:
                print(rel, oct(os.stat(p).st_mode), hashlib.sha256(f.read()).hexdigest())
EOF
}

echo "==> cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" ||
  { cat "$work/install.log"; echo "FAIL: cmake --install failed (above)"; exit 1; }

# Exactly these files (extended regular expressions, one per line), no more, no fewer.
expected="lib/libclustercomm\.a
lib/${shared[0]//./\\.}
lib/${shared[1]//./\\.}
lib/${shared[2]//./\\.}
include/clustercomm/comm/clustercomm\.h
include/clustercomm/comm/config\.h
include/clustercomm/comm/error\.h
include/clustercomm/comm/export\.h
include/clustercomm/comm/types\.h
lib/cmake/clustercomm/clustercommConfig\.cmake
lib/cmake/clustercomm/clustercommConfigVersion\.cmake
lib/cmake/clustercomm/clustercommTargets\.cmake
lib/cmake/clustercomm/clustercommTargets-[a-z]+\.cmake
lib/pkgconfig/clustercomm\.pc
lib/pkgconfig/clustercomm-static\.pc"
if ((!comm_only)); then
  expected+=$'\nbin/clusterctl'
  expected+=$'\nlibexec/clusterctl/clusterctl-push-rank'  # the rank program push uploads
  while IFS= read -r t; do expected+=$'\n'"share/clusterctl/templates/${t//./\\.}"; done \
    < <(cd "$root/templates" && find . -type f | sed 's|^\./||')
fi
installed=$(cd "$prefix" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort)
extra=$(grep -vxE -f <(echo "$expected") <<<"$installed" || true)
[ -z "$extra" ] || FAIL "installed but not expected (private headers? a new file needs a line" \
  "in tests/install_test.sh): $(tr '\n' ' ' <<<"$extra")"
while IFS= read -r re; do
  grep -qxE "$re" <<<"$installed" || FAIL "$prefix: nothing installed matches $re"
done <<<"$expected"
# The shared library's link chain: .so -> .so.SOVERSION -> .so.VERSION (the file).
if [ "$(readlink "$prefix/lib/${shared[0]}")" != "${shared[1]}" ] ||
   [ "$(readlink "$prefix/lib/${shared[1]}")" != "${shared[2]}" ] ||
   [ ! -f "$prefix/lib/${shared[2]}" ] || [ -L "$prefix/lib/${shared[2]}" ]; then
  FAIL "lib/${shared[0]} -> ${shared[1]} -> ${shared[2]} is not the link chain installed:" \
    "$(cd "$prefix/lib" && ls -l libclustercomm*)"
fi
# The uninstall list: every file and link installed, nothing else.
if ! diff <(sort "$build/install_manifest.txt") <(find "$prefix" \( -type f -o -type l \) | sort) \
    >"$work/manifest.diff"; then
  FAIL "$build/install_manifest.txt (<) and the prefix (>) differ: $(cat "$work/manifest.diff")"
fi

echo "==> cmake --install again: nothing may change"
tree_state | sort >"$work/tree.1"
cmake --install "$build" --prefix "$prefix" >"$work/install2.log" ||
  { cat "$work/install2.log"; echo "FAIL: the second cmake --install failed (above)"; exit 1; }
tree_state | sort >"$work/tree.2"
changed=$(grep '^-- ' "$work/install2.log" | grep -v -e '^-- Up-to-date: ' \
  -e '^-- Install configuration: ' || true)
[ -z "$changed" ] || FAIL "the second cmake --install did more than find files up to date: $changed"
# Every file of the manifest was found up to date (directories have their own line too).
sed -n 's/^-- Up-to-date: //p' "$work/install2.log" | while IFS= read -r f; do
  [ -d "$f" ] && [ ! -L "$f" ] || echo "$f"
done | sort >"$work/up-to-date"
diff <(sort "$build/install_manifest.txt") "$work/up-to-date" >"$work/up-to-date.diff" ||
  FAIL "the second cmake --install did not find every file of the manifest (<) up to date (>):" \
    "$(cat "$work/up-to-date.diff")"
diff "$work/tree.1" "$work/tree.2" >"$work/tree.diff" ||
  FAIL "the second cmake --install changed the prefix (before <, after >): $(cat "$work/tree.diff")"

# NEEDED FILE: each library FILE needs must come from a Debian package; prints them.
needed() {
  local f=$1 lib path pkg c d
  for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
    path=$(ldd "$f" | awk -v l="$lib" '$1 == l && $2 == "=>" { print $3 } $1 ~ "/" l "$" { print $1 }' | head -n 1)
    if [ -z "$path" ] || [ ! -e "$path" ]; then FAIL "$f needs $lib, which ldd does not find"; continue; fi
    pkg=""
    for c in "$path" "$(readlink -f "$path")"; do  # merged /usr: dpkg may know either spelling
      for d in "$c" "${c#/usr}" "/usr$c"; do
        pkg=$(dpkg -S "$d" 2>/dev/null | head -n 1 | sed 's/: .*//') && [ -n "$pkg" ] && break 2
      done
    done
    if [ -z "$pkg" ]; then FAIL "$f needs $lib ($path), which is in no Debian package (dpkg -S)"
    else echo "  $(basename "$f") NEEDED $lib => $path ($pkg)"; fi
  done
}
if [ "$(uname -s)" = Linux ] && command -v dpkg >/dev/null && command -v readelf >/dev/null; then
  echo "==> readelf -d, ldd and dpkg -S: what the installed files need"
  lib="$prefix/lib/${shared[2]}"
  s=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
  [ "$s" = "$soname" ] || FAIL "$lib: SONAME '$s', not $soname"
  echo "  SONAME $s"
  needed "$lib"
  ((comm_only)) || needed "$prefix/bin/clusterctl"
  ((comm_only)) || needed "$prefix/libexec/clusterctl/clusterctl-push-rank"
  # Hidden visibility: every cc::comm name the .so exports is declared in the public headers.
  for name in $(nm -DC --defined-only "$lib" | grep -oE '(^| )cc::comm::[A-Za-z_0-9]+' |
                sed 's/.*:://' | sort -u); do
    grep -rqw "$name" "$prefix/include/clustercomm" ||
      FAIL "$lib exports cc::comm::$name, which no installed header declares (mark only the" \
        "public API CLUSTERCOMM_API: comm/export.h)"
  done
else
  echo "SKIP: readelf/ldd/dpkg checks (Linux with dpkg only)"
fi
if ((!comm_only)); then
  v=$("$prefix/bin/clusterctl" --version 2>&1) || FAIL "installed clusterctl --version: $v"
fi

# cmake_job NAME PREFIX: tests/install/job built in $work/NAME with find_package(clustercomm)
# found under PREFIX (user_job: the shared library; user_job_static: the archive).
cmake_job() {
  local name=$1 at=$2
  if ! cmake -S "$src" -B "$work/$name" -DCMAKE_CXX_COMPILER="$cxx" \
         -DCMAKE_PREFIX_PATH="$at" -DCMAKE_CXX_FLAGS="$flags" \
         -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$work/$name.log" 2>&1 ||
     ! cmake --build "$work/$name" >>"$work/$name.log" 2>&1; then
    cat "$work/$name.log"; echo "FAIL: the CMake job did not build against $at (above)"
    exit 1
  fi
}

# pc_jobs OUT LIBDIR [INCLUDE]: the job built with pkg-config clustercomm (rpath LIBDIR; else
# LD_LIBRARY_PATH at run time) and clustercomm-static as $work/OUT-clustercomm(-static), from
# the .pc files on PKG_CONFIG_PATH; INCLUDE given: their flags must hold -IINCLUDE.
pc_jobs() {
  local out=$1 libdir=$2 include=${3:-} pc pc_flags rpath
  for pc in clustercomm clustercomm-static; do
    pc_flags=$(pkg-config --cflags --libs $pc) ||
      { echo "FAIL: pkg-config does not find $pc in $PKG_CONFIG_PATH"; exit 1; }
    if [ -n "$include" ] && [[ " $pc_flags " != *" -I$include "* ]]; then
      FAIL "pkg-config $pc in $PKG_CONFIG_PATH: $pc_flags (wanted -I$include)"
    fi
    rpath=""
    [ $pc = clustercomm ] && rpath="-Wl,-rpath,$libdir"
    # shellcheck disable=SC2086  # flags are words
    if ! "$cxx" -std=c++20 $flags "$src/job.cc" $pc_flags $rpath -o "$work/$out-$pc" \
         2>"$work/$out.log"; then
      cat "$work/$out.log"; echo "FAIL: the pkg-config job $out-$pc did not build: $cxx ... $pc_flags"
      exit 1
    fi
  done
}

echo "==> jobs built with find_package(clustercomm CONFIG REQUIRED)"
cmake_job cmake-job "$prefix"

echo "==> jobs built with pkg-config clustercomm and clustercomm-static"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
pc_jobs pc-job "$prefix/lib"

# links_shared PROGRAM: does it load libclustercomm's shared library (by its SONAME)?
links_shared() {
  if [ "$(uname -s)" = Darwin ]; then otool -L "$1" | grep "/$soname " >/dev/null
  else readelf -d "$1" | grep "(NEEDED).*\[$soname\]" >/dev/null; fi
}
for p in cmake-job/user_job pc-job-clustercomm; do
  links_shared "$work/$p" || FAIL "$p does not load $soname"
done
for p in cmake-job/user_job_static pc-job-clustercomm-static; do
  ! links_shared "$work/$p" || FAIL "$p loads $soname: it was to link libclustercomm.a"
done

# run_ranks PROGRAM N: N ranks on 127.0.0.1, each must print its ok line within 120 s.
run_ranks() {
  local prog=$1 n=$2 port r pids=() deadline
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  for ((r = 0; r < n; r++)); do
    env -u LD_LIBRARY_PATH -u DYLD_LIBRARY_PATH CLUSTERCOMM_RANK=$r CLUSTERCOMM_SIZE="$n" \
      CLUSTERCOMM_COORDINATOR="127.0.0.1:$port" CLUSTERCOMM_TOKEN=install-test \
      CLUSTERCOMM_TRANSPORT=tcp CLUSTERCOMM_TIMEOUT_MS=30000 \
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
  for p in cmake-job/user_job cmake-job/user_job_static pc-job-clustercomm pc-job-clustercomm-static; do
    run_ranks "$work/$p" "$n"
  done
done

# The same job against the build tree itself, not installed: its clustercommConfig.cmake and
# clustercomm-uninstalled.pc (pkg-config prefers it to the installed file's twin beside it).
commdir=$build
[ -f "$build/comm/clustercommConfig.cmake" ] && commdir=$build/comm
echo "==> jobs built against the build tree $commdir"
cmake_job tree-job "$commdir"
export PKG_CONFIG_PATH="$commdir"
pc_jobs tree-pc "$commdir" "$root"  # the headers: the source tree's
links_shared "$work/tree-job/user_job" || FAIL "tree-job/user_job does not load $soname"
links_shared "$work/tree-pc-clustercomm" || FAIL "tree-pc-clustercomm does not load $soname"
! links_shared "$work/tree-job/user_job_static" || FAIL "tree-job/user_job_static loads $soname"
for p in tree-job/user_job tree-job/user_job_static tree-pc-clustercomm tree-pc-clustercomm-static; do
  run_ranks "$work/$p" 2
done
((fail == 0)) && echo "install: ok"
exit "$fail"
