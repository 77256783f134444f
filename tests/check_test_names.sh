#!/usr/bin/env bash
# ctest runs each doctest case by name, and CMake cuts a name at ';': such a case would run as a
# filter matching nothing, which passes without running anything. No test case may have one.
set -uo pipefail
root=${1:?usage: check_test_names.sh SOURCE_DIR}
# The name may follow TEST_CASE( on the next line.
bad=$(grep -rn --include='*.cc' -A1 -E 'TEST_CASE\(' "$root" | grep -v "/build/" |
  grep -E 'TEST_CASE\("[^"]*;|^[^:]*-[0-9]+- *"[^"]*;')
if [ -n "$bad" ]; then
  echo "FAIL: test case names with ';' (ctest would run none of them; use ',' instead):"
  echo "$bad"
  exit 1
fi
echo "ok: no test case name holds ';'"
