#!/usr/bin/env bash
# clusterctl must build on macOS (Homebrew), which cannot be tried here. Keep that honest by
# construction: Linux-only headers may appear only in lab/ (built on Linux only) and in files
# named *_linux.* that CMake selects. Exits 1 naming each offending file:line.
set -euo pipefail
if [ "${1:-}" = "--self-test" ]; then
  # The check must be able to fail: plant an offending file in a scratch tree.
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/remote" "$tmp/lab"
  printf '#include <sys/epoll.h>\n' >"$tmp/remote/poller.cc"
  printf '#include <linux/if.h>\n' >"$tmp/lab/ok.cc" "$tmp/remote/poller_linux.cc"
  if "$0" "$tmp" >/dev/null; then echo "self-test: the check missed remote/poller.cc"; exit 1; fi
  rm "$tmp/remote/poller.cc"
  printf 'auto p = "/proc/self/exe";\n' >"$tmp/remote/self.cc"
  if "$0" "$tmp" >/dev/null; then echo "self-test: the check missed remote/self.cc"; exit 1; fi
  rm "$tmp/remote/self.cc"
  "$0" "$tmp" >/dev/null || { echo "self-test: allowed files were flagged"; exit 1; }
  echo "self-test: ok"; exit 0
fi
root=${1:-$(dirname "$0")/..}
cd "$root"
pattern='^[[:space:]]*#[[:space:]]*include[[:space:]]*<(linux/|sys/(epoll|prctl|signalfd|eventfd|inotify|timerfd|sysinfo|sendfile|vfs|statfs)\.h|asm/|netlink/|mntent\.h|features\.h|gnu/|sys/capability\.h|endian\.h|byteswap\.h)'
bad=$(grep -rEn "$pattern" --include='*.h' --include='*.cc' --include='*.cpp' --include='*.hpp' \
  --exclude='*_linux.*' --exclude-dir=lab --exclude-dir=build --exclude-dir='build-*' . || true)
if [ -n "$bad" ]; then
  echo "Linux-only headers outside lab/ and *_linux.* files (breaks the macOS build):"
  echo "$bad"
  exit 1
fi
# This process's own /proc entries (macOS has no /proc; /proc/meminfo in a command run on a
# Linux host is fine): use util/self_exe.h and friends, or a *_linux.cc file.
bad=$(grep -rEn '"/proc/self/' --include='*.h' --include='*.cc' --include='*.cpp' --include='*.hpp' \
  --exclude='*_linux.*' --exclude-dir=lab --exclude-dir=build --exclude-dir='build-*' . || true)
if [ -n "$bad" ]; then
  echo "/proc/self outside lab/ and *_linux.* files (macOS has no /proc):"
  echo "$bad"
  exit 1
fi
echo "portability: no Linux-only header or /proc/self outside lab/ and *_linux.* files"
