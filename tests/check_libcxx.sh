#!/usr/bin/env bash
# Every Mac builds clusterctl with Apple clang and LLVM's libc++; nothing here can run macOS.
# This is the nearest check on Debian (libc++-dev, libc++abi-dev):
#  1. every translation unit of the clang build that is not Linux-only (lab/, *_linux.*) and not
#     in comm/ is compiled with clang++ -stdlib=libc++ -fsyntax-only, its flags taken from
#     BUILD/compile_commands.json so the list follows the tree. yaml-cpp and fmt's shared
#     library are built against libstdc++ here and cannot be linked, so these files are only
#     compiled (a syntax-only pass needs no fmt definitions, so fmt's header-only mode is not
#     needed); CLI11, nlohmann/json and doctest are header-only.
#  2. util/number.cc's tests are built and run with libc++ (its path without from_chars);
#  3. comm/ (no compiled C++ dependency) is built in full with libc++ (build/libcxx-comm) and its
#     unit, thread and process tests run with ctest (not label rdma: that boots a QEMU guest).
#     Without bench/'s Gloo program (bench/gloo_allreduce_perf_linux.cc): Gloo is a Linux-only
#     C++ library built against libstdc++ here (its TCP transport is epoll), a peer to compare
#     with, not part of what ships.
# Both force tests/libcxx/gnu_only.h ahead of each file: GNU/Linux-only calls and constants
# (pipe2, accept4, SOCK_CLOEXEC, MSG_NOSIGNAL, TCP_USER_TIMEOUT, prctl, endian.h's
# conversions, ...) are hidden, so an unguarded use outside lab/ and *_linux.* fails here.
#
# Usage: tests/check_libcxx.sh [--jobs N] [BUILD]   (BUILD: default build/test-clang, configured)
#        tests/check_libcxx.sh --self-test          (the check must be able to fail)
# Exits 1 naming each file that does not compile, with its first errors.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
prelude="$here/libcxx/gnu_only.h"
jobs=2
if [ "${1:-}" = "--jobs" ]; then jobs=$2; shift 2; fi

# compile_one FILE FLAGS...: a syntax-only libc++ compile; prints FILE and its errors on failure.
compile_one() {
  local out
  if ! out=$(clang++ "$@" -stdlib=libc++ -include "$prelude" -fsyntax-only 2>&1); then
    printf '%s\n' "==> FAILED: $CHECK_FILE" "$out" | head -n 25
    return 1
  fi
}

if [ "${1:-}" = "--self-test" ]; then
  if ! printf '#include <version>\n' | clang++ -stdlib=libc++ -x c++ -fsyntax-only - 2>/dev/null; then
    echo "SKIPPED: clang++ -stdlib=libc++ does not work here: install libc++-dev and libc++abi-dev"
    exit 77
  fi
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  fails=0
  # Each must fail to compile: the from_chars of a double (libc++ < 20), and GNU-only calls.
  printf '#include <charconv>\ndouble f(const char* s, const char* e) { double v = 0; std::from_chars(s, e, v); return v; }\n' >"$tmp/a.cc"
  printf '#include <unistd.h>\nint f(int* p) { return pipe2(p, 0); }\n' >"$tmp/b.cc"
  printf '#include <sys/socket.h>\nint f() { return ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); }\n' >"$tmp/c.cc"
  printf '#include <netinet/tcp.h>\nint f() { return TCP_USER_TIMEOUT; }\n' >"$tmp/d.cc"
  for f in a b c d; do
    if CHECK_FILE=$f.cc compile_one -std=c++20 "$tmp/$f.cc" >/dev/null; then
      echo "self-test: $f.cc compiled, the check would miss it: $(tail -n 1 "$tmp/$f.cc")"; fails=1
    fi
  done
  # Guarded uses compile, as on a Mac.
  printf '#include <sys/socket.h>\n#include <netinet/tcp.h>\nint f() {\n#if defined(MSG_NOSIGNAL) || defined(TCP_USER_TIMEOUT)\n  return MSG_NOSIGNAL + TCP_USER_TIMEOUT;\n#else\n  return 0;\n#endif\n}\n' >"$tmp/ok.cc"
  CHECK_FILE=ok.cc compile_one -std=c++20 -Wall -Werror "$tmp/ok.cc" || { echo "self-test: a guarded use was flagged"; fails=1; }
  ((fails == 0)) && echo "self-test: ok"
  exit "$fails"
fi

build=${1:-$root/build/test-clang}
db="$build/compile_commands.json"
if [ ! -f "$db" ]; then
  echo "error: $db not found: configure the clang build first (cmake -S . -B build/test-clang" \
       "-DCMAKE_CXX_COMPILER=clang++ ..., as scripts/test does)" >&2
  exit 2
fi
if grep -q '/Unity/unity_' "$db"; then
  echo "error: $db is of a unity build (batches, not files): configure it with" \
       "-DCMAKE_UNITY_BUILD=OFF, as scripts/test does" >&2
  exit 2
fi
if ! printf '#include <version>\n' | clang++ -stdlib=libc++ -x c++ -fsyntax-only - 2>/dev/null; then
  echo "error: clang++ -stdlib=libc++ does not work: install libc++-dev and libc++abi-dev" \
       "(scripts/lib.sh lists them)" >&2
  exit 2
fi

# One NUL-separated argv per line of work: FILE, then the compile flags without the compiler,
# output, dependency-file and sanitizer/fuzzer flags.
export -f compile_one
export prelude
list=$(mktemp); trap 'rm -f "$list"' EXIT
python3 - "$db" "$root" >"$list" <<'EOF'
import json, os, shlex, sys
db, root = sys.argv[1], os.path.realpath(sys.argv[2])
seen = set()
for e in json.load(open(db)):
    f = os.path.realpath(os.path.join(e["directory"], e["file"]))
    rel = os.path.relpath(f, root)
    if rel.startswith("..") or rel.startswith("build") or rel in seen:
        continue
    if rel.startswith(("lab/", "comm/")) or "_linux." in os.path.basename(rel):
        continue  # Linux-only; comm/ is built in full below
    seen.add(rel)
    args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
    out, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD", "-g") or a.startswith("-fsanitize"):
            continue
        out.append(a)
    sys.stdout.write("\0".join([rel] + out) + "\n")
EOF
n=$(wc -l <"$list")
echo "==> libc++ syntax pass: $n translation units (not lab/, *_linux.*, comm/), -j$jobs"
cd "$root"
status=0
python3 - "$list" "$jobs" <<'EOF' || status=1
import os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
lines = open(sys.argv[1]).read().splitlines()
def run(line):
    argv = line.split("\0")
    env = dict(os.environ, CHECK_FILE=argv[0])
    p = subprocess.run(["bash", "-c", 'compile_one "$@"', "_"] + argv[1:], env=env,
                       capture_output=True, text=True)
    return argv[0], p.returncode, p.stdout + p.stderr
bad = []
with ThreadPoolExecutor(int(sys.argv[2])) as ex:
    for f, rc, out in ex.map(run, lines):
        if rc != 0:
            bad.append(f)
            sys.stdout.write(out)
if bad:
    print(f"libc++: {len(bad)} of {len(lines)} files do not compile with clang++ -stdlib=libc++ "
          "(the Mac's C++ library) or use a GNU/Linux-only call: " + ", ".join(bad))
    print("Fix: use what libc++ and macOS have (e.g. util/number.h for doubles), or move the "
          "Linux-only code into a *_linux.cc file chosen by CMake (util/CMakeLists.txt does it).")
    sys.exit(1)
print(f"libc++: all {len(lines)} files compile")
EOF

# util/number.cc parses doubles without std::from_chars where libc++ lacks it: that path runs
# only here (libstdc++ has from_chars), so its tests are built and run with libc++ too.
echo "==> util/number.cc's tests with libc++ (its path without std::from_chars)"
mkdir -p "$root/build/libcxx-util"
clang++ -std=c++20 -stdlib=libc++ -Wall -Wextra -Werror -include "$prelude" -I"$root" \
  "$root/tests/unit_main.cc" "$root/util/number.cc" "$root/util/number_test.cc" \
  -o "$root/build/libcxx-util/number_tests"
if ! "$root/build/libcxx-util/number_tests" --minimal; then
  echo "libc++: util/number.cc's tests fail with libc++ (above); they pass with libstdc++, so" \
       "look at its stream-based path (no std::from_chars)" >&2
  exit 1
fi

# Debug (assertions on) but optimised: at -O0 the thread suites alone take 8 minutes here.
echo "==> comm/ with libc++: build/libcxx-comm (full build), then ctest -LE rdma"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
comm_build="$root/build/libcxx-comm"
cmake -S "$root/comm" -B "$comm_build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O2 -DCLUSTERCOMM_WERROR=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_Gloo=ON \
  -DCMAKE_CXX_FLAGS="-stdlib=libc++ -include $prelude -DCLUSTERCTL_KEEP_MSG_NOSIGNAL" \
  -DCMAKE_EXE_LINKER_FLAGS=-stdlib=libc++ -DCMAKE_SHARED_LINKER_FLAGS=-stdlib=libc++ >/dev/null
if ! cmake --build "$comm_build" -j"$jobs"; then
  echo "libc++: comm/ does not build with clang++ -stdlib=libc++ (errors above): fix them, or" \
       "move Linux-only code into a *_linux.cc file" >&2
  exit 1
fi
# The executables really use libc++ (not libstdc++ through some other flag).
if ! ldd "$comm_build/clustercomm_tests" | grep 'libc++' >/dev/null; then  # not -q: ldd would get SIGPIPE, and pipefail fails the check
  echo "libc++: $comm_build/clustercomm_tests is not linked with libc++ (check CMAKE_CXX_FLAGS)" >&2
  exit 1
fi
if ! ctest --test-dir "$comm_build" -LE rdma --output-on-failure --timeout 600 -j"$jobs"; then
  echo "libc++: comm/'s tests fail when built with libc++ (above); they pass with libstdc++ in" \
       "build/test: look for behaviour that differs between the two C++ libraries" >&2
  exit 1
fi
# What a Mac user does with it: install it, build a job against it (CMake package and
# pkg-config), run it as 2 and 4 ranks.
if ! "$here/install_test.sh" "$comm_build" clang++ -stdlib=libc++; then
  echo "libc++: the installed libclustercomm does not serve a libc++ program (above)" >&2
  exit 1
fi
exit "$status"
