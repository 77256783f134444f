#!/usr/bin/env bash
# The Python package's venv: BUILD/python/venv with the pinned test requirements
# (python/tests/requirements.txt, kept until that file changes), then `pip install ./python`
# into it (built with --no-build-isolation into BUILD/python/build, so a later run recompiles
# only what changed; warnings are errors). On success it writes BUILD/python/venv/installed,
# which tests/python.sh --use-built and tests/integration/python/ look for. The optional array
# libraries of python/tests/requirements-optional.txt (MLX, JAX) go in one line at a time: one
# that cannot be installed here is left out with a note, and the tests needing it skip.
# Exit 77 (ctest: skipped) with one SKIPPED: line when pip cannot reach the package registry.
# In ctest this is python.venv, the setup of fixture python_venv: built once, shared by
# python.clustercomm, python.templates and python.mlx-ring.
# Usage: python_venv.sh BUILD    (PYTHON=python3.X picks the interpreter)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1/python"
work=$(cd "$1/python" && pwd)
venv=$work/venv
req=$src/python/tests/requirements.txt
opt=$src/python/tests/requirements-optional.txt
python=${PYTHON:-python3}
log=$work/pip.log

network_trouble() {
  grep -qE 'NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|Name or service not known|Network is unreachable|Connection refused|ConnectTimeout|ReadTimeout|Read timed out|ProxyError|Max retries exceeded|Could not fetch URL|SSLError' "$log"
}

rm -f "$venv/installed"
if [ ! -x "$venv/bin/python" ] || ! cat "$req" "$opt" | cmp -s - "$venv/requirements.txt"; then
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
  echo "==> pip install python/tests/requirements-optional.txt, one line at a time"
  retry=""  # a line left out for the network: try again next run (the venv is not marked)
  while read -r pkg; do
    if ! "$venv/bin/pip" install --disable-pip-version-check --timeout 20 --retries 2 \
         --no-deps "$pkg" >"$log" 2>&1; then
      echo "note: $pkg not installed, its tests skip: $(grep -m1 ERROR "$log")"
      if network_trouble; then retry=1; fi
    fi
  done < <(grep -vE '^[[:space:]]*(#|$)' "$opt")
  [ -n "$retry" ] || cat "$req" "$opt" >"$venv/requirements.txt"
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
echo "$src" >"$venv/installed"
