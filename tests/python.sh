#!/usr/bin/env bash
# The Python package (python/): its venv under BUILD/python (tests/python_venv.sh: the pinned
# test requirements, `pip install ./python`), then the pytest suite (python/tests).
# Exit 77 (ctest: skipped) with one SKIPPED: line when pip cannot reach the package registry.
# Usage: python.sh BUILD [--use-built]    (PYTHON=python3.X picks the interpreter)
#   --use-built  use the venv as tests/python_venv.sh left it, without building (ctest:
#                python.venv built it); skipped (77) when there is none
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "$1" && cd "$1" && pwd)
venv=$build/python/venv
if [ "${2:-}" = --use-built ]; then
  if [ ! -f "$venv/installed" ]; then
    echo "SKIPPED: no built venv at $venv (python.venv, tests/python_venv.sh, was skipped:" \
         "the package registry was unreachable; run tests/python_venv.sh $build to see why)"
    exit 77
  fi
else
  "$src/tests/python_venv.sh" "$build"
fi

echo "==> pytest python/tests"
cd "$src/python"
PYTHONDONTWRITEBYTECODE=1 exec "$venv/bin/python" -m pytest -p no:cacheprovider -q \
  --durations=5 tests
