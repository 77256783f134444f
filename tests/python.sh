#!/usr/bin/env bash
# The Python package (python/): a venv under BUILD/python with the pinned test requirements
# (python/tests/requirements.txt, kept until that file changes), `pip install ./python` into
# it (built with --no-build-isolation into BUILD/python/build, so a later run recompiles only
# what changed; warnings are errors), then the pytest suite (python/tests).
# Exit 77 (ctest: skipped) with one SKIPPED: line when pip cannot reach the package registry.
# Usage: python.sh BUILD    (PYTHON=python3.X picks the interpreter)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1/python"
work=$(cd "$1/python" && pwd)
venv=$work/venv
req=$src/python/tests/requirements.txt
python=${PYTHON:-python3}
log=$work/pip.log

network_trouble() {
  grep -qE 'NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|Name or service not known|Network is unreachable|Connection refused|ConnectTimeout|ReadTimeout|Read timed out|ProxyError|Max retries exceeded|Could not fetch URL|SSLError' "$log"
}

if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$venv/requirements.txt"; then
  echo "==> venv $venv ($("$python" --version 2>&1))"
  rm -rf "$venv"
  if ! "$python" -m venv "$venv" >"$log" 2>&1; then
    cat "$log"
    echo "FAIL: $python -m venv failed (above); on Debian: apt-get install python3-venv python3-dev"
    exit 1
  fi
  echo "==> pip install -r python/tests/requirements.txt"
  if ! "$venv/bin/pip" install --disable-pip-version-check --timeout 20 --retries 2 \
       -r "$req" >"$log" 2>&1; then
    if network_trouble; then
      rm -rf "$venv"
      echo "SKIPPED: pip cannot reach the package registry (python/tests/requirements.txt):" \
           "$(grep -m1 -E 'Error|error' "$log")"
      exit 77
    fi
    cat "$log"
    echo "FAIL: pip install -r $req failed (above)"
    exit 1
  fi
  cp "$req" "$venv/requirements.txt"
fi

echo "==> pip install ./python"
if [ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ] && command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi
start=$SECONDS
if ! (cd "$src" && "$venv/bin/pip" install --disable-pip-version-check --no-build-isolation \
        --no-deps --force-reinstall -Cbuild-dir="$work/build" \
        -Ccmake.define.CLUSTERCOMM_PY_WERROR=ON -Ccmake.define.CLUSTERCOMM_WERROR=ON \
        ./python) >"$log" 2>&1; then
  cat "$log"
  echo "FAIL: pip install ./python did not build (above)"
  exit 1
fi
echo "built and installed in $((SECONDS - start)) s"

echo "==> pytest python/tests"
cd "$src/python"
PYTHONDONTWRITEBYTECODE=1 exec "$venv/bin/python" -m pytest -p no:cacheprovider -q \
  --durations=5 tests
