#!/bin/sh
# clustercomm-perf's flags: every bad value is refused with exit 2 and one line naming the flag
# and the value, before any rank starts; good flags still run (one tiny table, exit 0).
# Usage: perf_flags_test.sh PATH/clustercomm-perf
perf=${1:?usage: perf_flags_test.sh PATH/clustercomm-perf}
fails=0
refuse() {  # refuse "WANT (in stderr)" ARGS...
  want=$1
  shift
  out=$("$perf" "$@" 2>&1 >/dev/null)
  st=$?
  if [ "$st" = 2 ] && printf '%s' "$out" | grep -qF -- "$want"; then
    echo "ok: $* -> exit 2: $(printf '%s' "$out" | head -1)"
  else
    echo "FAIL: $* -> exit $st, stderr: $out (wanted exit 2 and '$want')"
    fails=$((fails + 1))
  fi
}
# -h: the whole help on stdout, exit 0, nothing run.
out=$("$perf" -h 2>/dev/null)
st=$?
if [ "$st" = 0 ] && printf '%s' "$out" | grep -qF -- "-P, --percentiles 0|1" &&
  printf '%s' "$out" | grep -qF "Exit status: 0 when every value checked is right"; then
  echo "ok: -h -> exit 0, $(printf '%s\n' "$out" | wc -l) lines of help on stdout"
else
  echo "FAIL: -h -> exit $st, stdout: $out"
  fails=$((fails + 1))
fi
refuse "-o bogus: not an operation" -o bogus
refuse "-b 1048576 is above -e 8" -b 1M -e 8
refuse "-b abc: not a size" -b abc
refuse "-b -5: not a size" -b -5
refuse "-e 2T: not a size" -e 2T
refuse "-N abc: not a whole number from 1 to 64" -N abc
refuse "-N 0: not a whole number" -N 0
refuse "-P x: not a whole number from 0 to 1" -P x
refuse "-n x: not a whole number" -n x
refuse "-f 0: not a whole number" -f 0
refuse "-d float99: not a data type" -d float99
refuse "-r avg: not a reduction" -r avg
refuse "-x: unknown flag" -x 1
refuse "-e: unknown flag or no value after it" -b 8 -e
refuse "-g 0: not a whole number from 1 to 64" -g 0
refuse "-g 3: 4 ranks (-N) do not make whole groups of 3" -N 4 -g 3
refuse "-g 2: 3 ranks (-N) do not make whole groups of 2" -N 3 -o split
# A good sweep runs: all_gather at n = 2, -b 4 raised to one f32 per rank (8 bytes), once.
out=$(CLUSTERCOMM_TIMEOUT_MS=30000 "$perf" -N 2 -o all_gather -b 4 -e 8 -n 5 2>&1)
st=$?
rows=$(printf '%s\n' "$out" | grep -c '^ *8 ')
if [ "$st" = 0 ] && [ "$rows" = 1 ] && printf '%s' "$out" | grep -q "Out of bounds values : 0 OK"; then
  echo "ok: -N 2 -o all_gather -b 4 -e 8: one row of 8 bytes, exit 0"
else
  echo "FAIL: -N 2 -o all_gather -b 4 -e 8: exit $st, $rows rows of 8 bytes: $out"
  fails=$((fails + 1))
fi
# -o all on a ring of 4 over TCP: the tuning line shows the ring and TCP's 512 KiB chunk, the
# mesh-only all_to_all(v) are left out with a line each, and the rest run: exit 0.
out=$(CLUSTERCOMM_TIMEOUT_MS=30000 CLUSTERCOMM_TOPOLOGY=ring CLUSTERCOMM_TRANSPORT=tcp \
  "$perf" -N 4 -o all -b 64 -e 64 -n 2 2>&1)
st=$?
tables=$(printf '%s\n' "$out" | grep -c "^# clustercomm-perf ")
if [ "$st" = 0 ] && [ "$tables" = 5 ] &&
  printf '%s' "$out" | grep -q "^# tuning (rank 0's, job-wide): topology ring, chunk 524288 B" &&
  printf '%s' "$out" | grep -q "^# all_to_allv skipped: it needs a mesh"; then
  echo "ok: ring of 4, -o all: 5 tables, all_to_all(v) skipped, chunk 524288 on tcp, exit 0"
else
  echo "FAIL: ring of 4, -o all: exit $st, $tables tables: $out"
  fails=$((fails + 1))
fi
# -o split at n = 4: the split timed once, then all_reduce in 2 groups of 2 at once (nranks 2,
# busbw the group's), checked: exit 0.
out=$(CLUSTERCOMM_TIMEOUT_MS=30000 "$perf" -N 4 -o split -b 64 -e 64 -n 5 2>&1)
st=$?
rows=$(printf '%s\n' "$out" | grep -c '^ *64 ')
if [ "$st" = 0 ] && [ "$rows" = 1 ] &&
  printf '%s' "$out" | grep -q "^# split: 4 ranks into 2 groups of 2 (color rank / 2, key rank): [0-9.]* us" &&
  printf '%s' "$out" | grep -q "^# clustercomm-perf all_reduce: nranks 2 .*(each of 2 groups split from 4 ranks, all at once)" &&
  printf '%s' "$out" | grep -q "Out of bounds values : 0 OK"; then
  echo "ok: -N 4 -o split: split timed, all_reduce in 2 groups of 2, one row, exit 0"
else
  echo "FAIL: -N 4 -o split: exit $st, $rows rows of 64 bytes: $out"
  fails=$((fails + 1))
fi
exit $((fails > 0))
