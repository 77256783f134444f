#!/usr/bin/env bash
# templates/ci-smoke.sh as a CI would run it: exit 0 on a healthy lab, a well-formed JUnit
# report with every check passing, and no lab left behind (its trap takes the lab down).
set -euo pipefail
source "$(dirname "$0")/../lab/lib.sh"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export CI_SMOKE_LAB=hcs${CLUSTERCTL_TEST_SUFFIX:-} CI_SMOKE_OUT=$out
bash "$HERE/../../../templates/ci-smoke.sh" >"$out/log" 2>&1 || fail "ci-smoke exited $?: $(cat "$out/log")"
cat "$out/log"
xmllint --noout "$out/health-junit.xml" || fail "JUnit report not well-formed"
[ "$(xmllint --xpath 'count(//testcase)' "$out/health-junit.xml")" = 50 ] || fail "testcases"
[ "$(xmllint --xpath 'count(//failure)' "$out/health-junit.xml")" = 0 ] || fail "failures"
! ip netns list | grep -q "^cc-$CI_SMOKE_LAB-" || fail "lab $CI_SMOKE_LAB left behind"
echo "ci-smoke: ok"
