#!/usr/bin/env bash
# The command line's promises: --version, --help everywhere, exit 2 and the usage on a bad flag.
set -uo pipefail
cc=${CLUSTERCTL:?set CLUSTERCTL to the clusterctl binary}
fail=0
expect() {  # expect CODE DESCRIPTION -- CMD...
  local want=$1 what=$2; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL: $what: exit $rc, want $want"; echo "$out" | head -20; fail=1
  fi
  LAST="$out"
}
expect 0 "--version" -- "$cc" --version
[[ "$LAST" =~ ^clusterctl\ [0-9]+\.[0-9]+\.[0-9]+ ]] || { echo "FAIL: version text: $LAST"; fail=1; }
expect 0 "--help" -- "$cc" --help
for sub in exec lab; do
  grep -q "$sub" <<<"$LAST" || { echo "FAIL: --help does not list $sub"; fail=1; }
done
for sub in "exec" "lab" "lab up" "lab down" "lab status"; do
  # shellcheck disable=SC2086
  expect 0 "$sub --help" -- "$cc" $sub --help
  grep -qi "usage" <<<"$LAST" || { echo "FAIL: $sub --help prints no usage"; fail=1; }
done
expect 2 "unknown global flag" -- "$cc" --no-such-flag exec --hosts h1 -- true
grep -qi "usage" <<<"$LAST" || { echo "FAIL: unknown flag without usage: $LAST"; fail=1; }
grep -q -- "--no-such-flag" <<<"$LAST" || { echo "FAIL: unknown flag not named: $LAST"; fail=1; }
expect 2 "unknown lab subcommand" -- "$cc" lab frob
grep -q "frob" <<<"$LAST" || { echo "FAIL: unknown subcommand not named: $LAST"; fail=1; }
expect 2 "bad timeout" -- "$cc" exec --hosts local --timeout abc -- true
grep -q "not a number of seconds" <<<"$LAST" || { echo "FAIL: bad timeout message: $LAST"; fail=1; }
# exec keeps the first 1 MiB of each host's output (it held all of it, to group it) and says
# how much more there was.
expect 0 "exec of a big output" -- "$cc" exec --hosts local -- sh -c \
  'head -c 3000000 /dev/zero | tr "\0" a; echo'
grep -q "1951425 more bytes of stdout not shown: exec keeps the first 1048576 bytes" <<<"$LAST" ||
  { echo "FAIL: exec of 3000001 bytes does not say what it left out: ${LAST: -300}"; fail=1; }
# mlx#2144: a stdout inherited non-blocking (shared with a process that set O_NONBLOCK) and a
# reader slower than clusterctl: every byte still arrives, exit 0. Before, stdio dropped what it
# held at the first EAGAIN, and clusterctl exited 2 with "Resource temporarily unavailable".
# The reader starts only once the pipe is full (or clusterctl has ended).
nb=$(python3 - "$cc" <<'PY'
import fcntl, os, subprocess, sys, termios, time, array
r, w = os.pipe()
fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
size = fcntl.fcntl(w, fcntl.F_GETPIPE_SZ)
p = subprocess.Popen([sys.argv[1], "exec", "--hosts", "local", "--", "sh", "-c",
                      'head -c 300000 /dev/zero | tr "\\0" 7; echo'],
                     stdout=w, stderr=subprocess.PIPE)
os.close(w)
deadline = time.time() + 60
queued = array.array("i", [0])
while time.time() < deadline and p.poll() is None:
    fcntl.ioctl(r, termios.FIONREAD, queued)
    if queued[0] >= size:
        break
    time.sleep(0.05)
data = b""
while True:
    chunk = os.read(r, 65536)
    if not chunk:
        break
    data += chunk
err = p.stderr.read().decode()
print(p.wait(), data.count(b"7"), err.strip().replace("\n", " | ")[:300])
PY
)
[ "$nb" = "0 300000 " ] || { echo "FAIL: a non-blocking stdout to a slow reader: $nb"; fail=1; }
expect 2 "unknown subcommand flag" -- "$cc" exec --bogus --hosts h1 -- true
expect 2 "no subcommand" -- "$cc"
expect 2 "misspelt flag" -- "$cc" verify-mesh --jsn
grep -q -- "--jsn: did you mean '--json'?" <<<"$LAST" || { echo "FAIL: no did-you-mean: $LAST"; fail=1; }
expect 2 "misspelt subcommand" -- "$cc" dicover
grep -q "dicover: did you mean 'discover'?" <<<"$LAST" || { echo "FAIL: no did-you-mean: $LAST"; fail=1; }
# What follows `--` is the remote command's: its flags are never named as clusterctl's or given
# a "did you mean" ("-n: did you mean '-h'?"); only clusterctl's own typo is. Without `--`, a
# flag exec does not have is the command's: the message says to put the command after `--`.
expect 2 "exec with a misspelt option before --" -- "$cc" exec --hosts all --timout 5 -- uname -n
grep -qF -- "The following argument was not expected: --timout" <<<"$LAST" &&
  grep -qF -- "--timout: did you mean '--timeout'?" <<<"$LAST" ||
  { echo "FAIL: exec --timout: the typo is not named alone: $LAST"; fail=1; }
grep -qE -- "uname|-n:" <<<"$LAST" && { echo "FAIL: exec --timout: the remote command's words are named: $LAST"; fail=1; }
expect 2 "exec of a command with flags, without --" -- "$cc" exec --hosts h1 uname -n
grep -qF -- "-n: not an option of clusterctl exec; to pass it to the command, put the command after \`--\`: clusterctl exec --hosts h1 -- uname -n" <<<"$LAST" ||
  { echo "FAIL: exec without --: no advice to use --: $LAST"; fail=1; }
grep -q "did you mean" <<<"$LAST" && { echo "FAIL: exec without --: a did-you-mean: $LAST"; fail=1; }
expect 2 "exec --host" -- "$cc" exec --host h1
grep -qF -- "--hosts is required" <<<"$LAST" && grep -qF -- "--host: did you mean '--hosts'?" <<<"$LAST" ||
  { echo "FAIL: exec --host: --hosts not suggested: $LAST"; fail=1; }
expect 2 "exec all without an inventory" -- env -u CLUSTERCTL_LAB "$cc" exec --hosts all -- true
grep -q -- "--lab" <<<"$LAST" || { echo "FAIL: 'all' error does not mention --lab: $LAST"; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Every argument and option that names a file or directory to read, of every subcommand, names
# one that is not there with "did you mean" the one of a close name beside it (README,
# "job.yaml"), exit 2: `launch hello.yml` said CLI11's bare "job: File does not exist:
# hello.yml". They are found in each --help (TYPE:FILE, TYPE:DIR), so a new one is checked
# too; and no source uses CLI11's own ExistingFile / ExistingDirectory (cli::existing_path).
src=$(cd "$(dirname "$0")/.." && pwd)
if grep -rnE --include='*.cc' --include='*.h' --exclude-dir='build*' --exclude-dir=.git \
  'CLI::(ExistingFile|ExistingDirectory|ExistingPath|NonexistentPath)\b' "$src"; then
  echo "FAIL: CLI11's own file checks are used (above): use cli::existing_path (cli/options.h)"; fail=1
fi
dym="$tmp/dym"
mkdir -p "$dym/bundle"
: >"$dym/hello.yaml"
file_args=0
walk_file_args() {  # walk_file_args SUBCOMMAND...: its FILE and DIR arguments, then its subcommands'
  local help kind opt arg want sub
  help=$("$cc" "$@" --help 2>&1)
  while read -r kind opt; do
    if [ "$kind" = DIR ]; then arg="$dym/bundl" want="directory (did you mean '$dym/bundle'?)"
    else arg="$dym/hello.yml" want="file (did you mean '$dym/hello.yaml'?)"; fi
    local words=("$arg")
    [[ "$opt" == -* ]] && words=("${opt##*,}" "$arg")
    expect 2 "${*:-clusterctl} ${words[*]}" -- env XDG_STATE_HOME="$tmp/state" "$cc" "$@" "${words[@]}"
    grep -qF "$arg: no such $want" <<<"$LAST" ||
      { echo "FAIL: ${*:-clusterctl} ${words[*]}: no did-you-mean: $LAST"; fail=1; }
    file_args=$((file_args + 1))
  done < <(sed -n 's/^  \([^ ]*\) [A-Z]*:\(FILE\|DIR\)\( .*\)\{0,1\}$/\2 \1/p' <<<"$help")
  for sub in $(awk '/^Subcommands:/ {s = 1; next} s && /^  [a-z]/ {print $1}' <<<"$help"); do
    walk_file_args "$@" "$sub"
  done
}
walk_file_args
# A file of a name that is not close is not offered: the shared ".yaml" is no sign of a typo
# (`--thresholds nothere.yaml` was offered an unrelated job file, noexec.yaml).
: >"$dym/noexec.yaml"
expect 2 "health --thresholds of a file with no close name" -- "$cc" health --quick --thresholds "$dym/nothere.yaml"
grep -qF "$dym/nothere.yaml: no such file" <<<"$LAST" && ! grep -q "did you mean" <<<"$LAST" ||
  { echo "FAIL: health --thresholds nothere.yaml: $LAST"; fail=1; }
rm "$dym/noexec.yaml"
# -F, --inventory, --replay; launch's job; health's --thresholds; push's --manifest; --hostfile
# and --from of discover, collect, verify-mesh, network, rdma, hostfile, health.
[ "$file_args" -ge 26 ] || { echo "FAIL: only $file_args file arguments found in --help"; fail=1; }
# Every option that takes one of a fixed set of words, of every subcommand, refuses a typo naming
# the allowed values and "did you mean" the closest (exit 2, before anything runs): `lab up
# --topology rign` said only, once root and a lab name were checked, that rign was not a
# readable file, and `hostfile --format mlx-jacl` CLI11's bare "not in {...}". They are found in
# each --help (TYPE:{word,...}, cli::one_of), so a new one is checked too; and no source uses
# CLI11's own IsMember / CheckedTransformer / Transformer, which suggest nothing.
if grep -rnE --include='*.cc' --include='*.h' --exclude-dir='build*' --exclude-dir=.git \
  'CLI::(IsMember|CheckedTransformer|Transformer)\b' "$src"; then
  echo "FAIL: CLI11's own set checks are used (above): use cli::one_of (cli/options.h)"; fail=1
fi
word_args=0
walk_word_args() {  # walk_word_args SUBCOMMAND...: its {word,...} options, then its subcommands'
  local help opt words first typo listed sub
  help=$("$cc" "$@" --help 2>&1)
  while read -r opt words; do
    first=${words%%,*} typo="${words%%,*}x" listed=${words//,/, }
    expect 2 "${*:-clusterctl} ${opt##*,} $typo" -- env XDG_STATE_HOME="$tmp/state" "$cc" "$@" "${opt##*,}" "$typo"
    grep -qF -- "${opt##*,}: $typo: not one of $listed" <<<"$LAST" && grep -qF "(did you mean '$first'?)" <<<"$LAST" ||
      { echo "FAIL: ${*:-clusterctl} ${opt##*,} $typo: no allowed values or did-you-mean: $LAST"; fail=1; }
    word_args=$((word_args + 1))
  done < <(sed -n 's/^  \(-[^ ]*\) [A-Z]*:{\([^}]*\)}.*$/\1 \2/p' <<<"$help")
  for sub in $(awk '/^Subcommands:/ {s = 1; next} s && /^  [a-z]/ {print $1}' <<<"$help"); do
    walk_word_args "$@" "$sub"
  done
}
walk_word_args
# hostfile --format, push --network, and where there is a lab (Linux) lab up --topology.
want_words=2
[ "$(uname -s)" = Linux ] && want_words=3
[ "$word_args" -ge "$want_words" ] || { echo "FAIL: only $word_args word options found in --help"; fail=1; }
# Every numeric option of every subcommand says of a word that it is not a number, exit 2:
# `hostfile --slots abc` said CLI11's "Value abc not in range 1 to 4096". They are found in each
# --help (an INT, UINT, FLOAT, NUMBER, N or SECONDS value), so a new one is checked too; and no
# source uses CLI11's own Range or number checks (cli::whole_number, cli::decimal_number).
if grep -rnE --include='*.cc' --include='*.h' --exclude-dir='build*' --exclude-dir=.git \
  --exclude-dir=bench 'CLI::(Range|Bound|PositiveNumber|NonNegativeNumber|Number)\b' "$src"; then
  echo "FAIL: CLI11's own number checks are used (above): use cli::whole_number (cli/options.h)"; fail=1
fi
number_args=0
walk_number_args() {  # walk_number_args SUBCOMMAND...: its numeric options, then its subcommands'
  local help opt sub
  help=$("$cc" "$@" --help 2>&1)
  while read -r opt; do
    opt=${opt##*,}
    expect 2 "${*:-clusterctl} $opt abc" -- env XDG_STATE_HOME="$tmp/state" "$cc" "$@" "$opt" abc
    grep -qF -- "$opt: 'abc' is not a number" <<<"$LAST" ||
      { echo "FAIL: ${*:-clusterctl} $opt abc: not said to be no number: $LAST"; fail=1; }
    number_args=$((number_args + 1))
  done < <(sed -n 's/^  \(-[^ ]*\) \(INT\|UINT\|FLOAT\|NUMBER\|N\|SECONDS\)\([: ].*\)\{0,1\}$/\1/p' <<<"$help")
  for sub in $(awk '/^Subcommands:/ {s = 1; next} s && /^  [a-z]/ {print $1}' <<<"$help"); do
    walk_number_args "$@" "$sub"
  done
}
walk_number_args
# --timeout, hostfile --slots, verify-mesh --expect-hosts, health --soak and --perf-timeout,
# push --chunk, --port and --timeout, ...
[ "$number_args" -ge 9 ] || { echo "FAIL: only $number_args numeric options found in --help"; fail=1; }
# A name close to one word goes to the word, even where a file is allowed; a file's name to a
# file of a close name beside it.
if [ "$(uname -s)" = Linux ]; then
  expect 2 "lab up --topology rign" -- env XDG_STATE_HOME="$tmp/state" "$cc" lab up --topology rign
  grep -qF "clusterctl lab up: --topology: rign: not one of mesh, ring, nor a file (did you mean 'ring'?)" <<<"$LAST" ||
    { echo "FAIL: lab up --topology rign: $LAST"; fail=1; }
  expect 2 "lab up --topology with a misspelt file" -- env XDG_STATE_HOME="$tmp/state" "$cc" lab up --topology "$dym/hello.yml"
  grep -qF "$dym/hello.yml: not one of mesh, ring, nor a file (did you mean '$dym/hello.yaml'?)" <<<"$LAST" ||
    { echo "FAIL: lab up --topology hello.yml: $LAST"; fail=1; }
fi
# launch: a host that cannot be reached beside one that can (sshd refuses it): exit 3 naming
# it, never a crash (its control connection never existed), and the reachable host's job
# directory removed. It crashed in 9 runs of 10 before.
# Two aliases of one refusing port: an inventory may not reach two hosts by one ssh
# destination (one machine under two names is refused, remote/inventory.cc).
printf 'Host refusing refusing2\n  HostName 127.0.0.1\n  Port 9\n' >"$tmp/ssh_config"
printf 'name: unknownhost\nhosts: [local, refusing]\ncommand: [true]\nlogs: %s/uh-logs\n' \
  "$tmp" >"$tmp/unknown-host.yaml"
for i in 1 2 3 4 5; do
  expect 3 "launch with an unreachable host (run $i)" -- env XDG_STATE_HOME="$tmp/state" "$cc" -F "$tmp/ssh_config" launch "$tmp/unknown-host.yaml"
  grep -q "refusing: cannot connect" <<<"$LAST" || { echo "FAIL: the unreachable host is not named: $LAST"; fail=1; }
done
ls -d /tmp/clusterctl-job-unknownhost-* 2>/dev/null && { echo "FAIL: job directories left"; fail=1; }
# launch: a host that does not exist (not in the SSH config, no such name; not in the
# inventory) is a mistake in the job file: exit 2 with the same message in the foreground and
# with --detach (which used to print a job id and exit 0), and no record, logs or job id.
printf 'name: nohost\nhosts: [local, nowhere.invalid]\ncommand: [true]\nlogs: %s/nh-logs\n' \
  "$tmp" >"$tmp/no-host.yaml"
printf 'ssh_config: ssh_config\nhosts:\n  - {name: h1, ssh: refusing}\n  - {name: h2, ssh: refusing2}\n' \
  >"$tmp/inv.yaml"
printf 'name: nohost\nhosts: [h1, h9]\ncommand: [true]\nlogs: %s/nh-logs\n' "$tmp" >"$tmp/hx.yaml"
for mode in "" --detach; do
  # shellcheck disable=SC2086
  expect 2 "launch $mode with a host that does not exist" -- env XDG_STATE_HOME="$tmp/state" "$cc" launch $mode "$tmp/no-host.yaml"
  grep -q "no-host.yaml:2:16: \`hosts:\` names a host clusterctl does not know: no host 'nowhere.invalid' in ~/.ssh/config, and no host of that name" <<<"$LAST" ||
    { echo "FAIL: launch $mode: unknown host not named: $LAST"; fail=1; }
  grep -q "nohost-" <<<"$LAST" && { echo "FAIL: launch $mode printed a job id: $LAST"; fail=1; }
  # shellcheck disable=SC2086
  expect 2 "launch $mode with a host not in the inventory" -- env XDG_STATE_HOME="$tmp/state" "$cc" --inventory "$tmp/inv.yaml" launch $mode "$tmp/hx.yaml"
  grep -q "hx.yaml:2:13: \`hosts:\` names a host clusterctl does not know: no host 'h9' in $tmp/inv.yaml (did you mean 'h1'?)" <<<"$LAST" ||
    { echo "FAIL: launch $mode: host not in the inventory not named: $LAST"; fail=1; }
  grep -q "a host could not be set up" <<<"$LAST" && { echo "FAIL: launch $mode: set-up message: $LAST"; fail=1; }
done
# Commands that only look refuse a host the inventory does not have too, before probing any
# (exit 2, with a did-you-mean), as README says ("Using it"); they do not report it as a host
# that could not be probed.
for args in "discover" "health --quick" "verify-mesh" "rdma status" "hostfile --format mpi"; do
  # shellcheck disable=SC2086
  expect 2 "$args of a host not in the inventory" -- "$cc" --inventory "$tmp/inv.yaml" $args --hosts h1,h9
  grep -qF "no host 'h9' in $tmp/inv.yaml (did you mean 'h1'?)" <<<"$LAST" && ! grep -q "cannot connect" <<<"$LAST" ||
    { echo "FAIL: $args of a host not in the inventory: $LAST"; fail=1; }
done
# Every subcommand that takes --hosts (found in each --help, so a new one is checked too) finds
# a host as README says ("An inventory is a YAML file"): ignoring case and a final dot (H1 and
# h1. are the inventory's h1: tried, it refuses, exit 3, named h1), and refuses one named twice,
# alike or not (exit 2). `exec --hosts H1` said "no host 'H1' ... (did you mean 'h1'?)", and
# `exec --hosts h1,h1` and `verify-mesh --hosts h1,h1,h2` ran h1 once.
hosts_cmds=0
hosts_runs=0
walk_hosts_option() {  # walk_hosts_option SUBCOMMAND...: it, if it takes --hosts, then its subcommands
  local help sub extra=() given
  help=$("$cc" "$@" --help 2>&1)
  if grep -qE '^  --hosts TEXT' <<<"$help"; then
    for given in H1 h1. h1,h2,h1 h1,H1.; do
      hosts_runs=$((hosts_runs + 1))
      case "$*" in  # what else each needs to run
        exec) extra=(-- true) ;;
        jobs) extra=(--gc) ;;
        collect) extra=(-o "$tmp/collect-$hosts_runs") ;;
        hostfile) extra=(--format mpi) ;;
      esac
      case "$given" in
        H1 | h1.)
          expect 3 "$* --hosts $given" -- env XDG_STATE_HOME="$tmp/hosts-state" "$cc" --inventory "$tmp/inv.yaml" "$@" --hosts "$given" "${extra[@]}"
          grep -q "no host '" <<<"$LAST" && { echo "FAIL: $* --hosts $given: not found as h1: $LAST"; fail=1; }
          # (network plan exited 3 without naming the host it could not reach.)
          grep -q "h1: cannot connect" <<<"$LAST" ||
            { echo "FAIL: $* --hosts $given: h1 not tried: $LAST"; fail=1; }
          ;;
        h1,h2,h1)
          expect 2 "$* --hosts $given" -- env XDG_STATE_HOME="$tmp/hosts-state" "$cc" --inventory "$tmp/inv.yaml" "$@" --hosts "$given" "${extra[@]}"
          grep -qF -- "--hosts names host 'h1' twice: give it once" <<<"$LAST" ||
            { echo "FAIL: $* --hosts $given: not refused as a duplicate: $LAST"; fail=1; }
          ;;
        *)
          expect 2 "$* --hosts $given" -- env XDG_STATE_HOME="$tmp/hosts-state" "$cc" --inventory "$tmp/inv.yaml" "$@" --hosts "$given" "${extra[@]}"
          grep -qF -- "--hosts names one host twice, as 'h1' and 'H1.' (host names ignore case and a final dot)" <<<"$LAST" ||
            { echo "FAIL: $* --hosts $given: not refused as a duplicate: $LAST"; fail=1; }
          ;;
      esac
    done
    hosts_cmds=$((hosts_cmds + 1))
  fi
  for sub in $(awk '/^Subcommands:/ {s = 1; next} s && /^  [a-z]/ {print $1}' <<<"$help"); do
    walk_hosts_option "$@" "$sub"
  done
}
walk_hosts_option
# exec, discover, collect, verify-mesh, network plan|apply|verify, rdma status|enable,
# hostfile, health, jobs.
[ "$hosts_cmds" -ge 12 ] || { echo "FAIL: only $hosts_cmds subcommands with --hosts found in --help"; fail=1; }
# Without an inventory, a replay bundle's host is found the same way (MAC1 is its mac1).
expect 0 "hostfile --from a bundle --hosts MAC1,mac2." -- "$cc" hostfile --format mpi --from "$src/tests/data/bundles/mac-mesh3" --hosts MAC1,mac2.
grep -q "^mac1 slots=1" <<<"$LAST" && grep -q "^mac2 slots=1" <<<"$LAST" ||
  { echo "FAIL: hostfile --hosts MAC1,mac2. of a bundle: $LAST"; fail=1; }
if ls "$tmp"/state/clusterctl/jobs/nohost-* >/dev/null 2>&1 || [ -e "$tmp/nh-logs" ]; then
  echo "FAIL: a job with an unknown host left a record or logs"; fail=1
fi
# jobs --gc: a record of a job that never started (no rank has a status) has nothing to collect:
# its hosts are not tried (h1 refuses, a stale record made every gc exit 3 until it was dropped).
# A record of a job that ran naming a host the inventory does not have is skipped with one
# warning naming the record and the host; the other hosts are still tried (h1 refuses: exit 3,
# naming the record that brought h1 in and how to drop it), and with only such records there is
# nothing that failed (exit 0).
gcstate="$tmp/gc-state"
mkdir -p "$gcstate/clusterctl/jobs"
chmod 700 "$gcstate" "$gcstate/clusterctl" "$gcstate/clusterctl/jobs"
record() {  # [status='"exit 1"'] record ID HOST...
  local id=$1 ranks="" r=0; shift
  for h in "$@"; do ranks+="${ranks:+, }{\"rank\": $r, \"host\": \"$h\", \"status\": ${status:-null}}"; r=$((r + 1)); done
  printf '{"schema": "clusterctl.job/1", "id": "%s", "name": "old", "job_file": "/j.yaml",
    "pid": 1, "state": "failed", "exit_code": 2, "started_at": "2026-11-30T23:30:53Z",
    "logs": "%s/nologs", "world_size": %d, "ranks": [%s]}\n' "$id" "$tmp" "$r" "$ranks" \
    >"$gcstate/clusterctl/jobs/$id.json"
}
record never-1 h1 h9 h9
expect 0 "jobs --gc with only a record of a job that never started" -- env XDG_STATE_HOME="$gcstate" "$cc" --inventory "$tmp/inv.yaml" jobs --gc
grep -qx "0 job directories of launchers that are gone removed" <<<"$LAST" &&
  ! grep -q "h1\|warning" <<<"$LAST" || { echo "FAIL: gc tried a job that never started: $LAST"; fail=1; }
status='"exit 1"' record ran-0 h1 h9 h9
expect 3 "jobs --gc with a record naming an unknown host" -- env XDG_STATE_HOME="$gcstate" "$cc" --inventory "$tmp/inv.yaml" jobs --gc
[ "$(grep -c "warning: job record ran-0 .*no host 'h9' in $tmp/inv.yaml" <<<"$LAST")" = 1 ] &&
  ! grep -q "never-1" <<<"$LAST" ||
  { echo "FAIL: gc: no single warning for ran-0 and h9: $LAST"; fail=1; }
grep -q "h1: cannot connect.*; job record ran-0 (job 'old') names h1: once its job directory there is cleaned, or if the host will not be back, \`clusterctl jobs --forget ran-0\` drops the record$" <<<"$LAST" ||
  { echo "FAIL: gc did not try h1 or did not name its record: $LAST"; fail=1; }
rm "$gcstate/clusterctl/jobs/never-1.json" "$gcstate/clusterctl/jobs/ran-0.json"
status='"exit 1"' record never-2 h9
expect 0 "jobs --gc with only a record naming an unknown host" -- env XDG_STATE_HOME="$gcstate" "$cc" --inventory "$tmp/inv.yaml" jobs --gc
grep -q "warning: job record never-2 .*no host 'h9'" <<<"$LAST" ||
  { echo "FAIL: gc: no warning for never-2: $LAST"; fail=1; }
# Records of one cause share one warning (it printed one long line per record).
status='"exit 1"' record never-3 h9
expect 0 "jobs --gc with two records naming one unknown host" -- env XDG_STATE_HOME="$gcstate" "$cc" --inventory "$tmp/inv.yaml" jobs --gc
[ "$(grep -c "warning" <<<"$LAST")" = 1 ] &&
  grep -q "warning: 2 job records (never-3, never-2, in $gcstate/clusterctl/jobs): no host 'h9' in $tmp/inv.yaml.*: that host was skipped (the job ran there and may have left a job directory" <<<"$LAST" ||
  { echo "FAIL: gc: not one warning for never-2 and never-3: $LAST"; fail=1; }
rm "$gcstate/clusterctl/jobs/never-3.json" "$gcstate/clusterctl/jobs/never-2.json"
# A record of a job that ran (an older record, which names no inventory): its unknown host is
# skipped, but the warning does not say that the job never started there.
printf '{"schema": "clusterctl.job/1", "id": "ran-1", "name": "ran", "job_file": "/j.yaml",
  "pid": 1, "state": "succeeded", "exit_code": 0, "started_at": "2026-11-30T23:30:53Z",
  "logs": "%s/nologs", "world_size": 1, "ranks": [{"rank": 0, "host": "h9", "status": "exit 0"}]}\n' \
  "$tmp" >"$gcstate/clusterctl/jobs/ran-1.json"
expect 0 "jobs --gc with a record of a job that ran on an unknown host" -- env XDG_STATE_HOME="$gcstate" "$cc" --inventory "$tmp/inv.yaml" jobs --gc
grep -q "warning: job record ran-1 .*no host 'h9' in $tmp/inv.yaml.*the job ran there and may have left a job directory: give the --lab NAME or --inventory FILE (or -F FILE) it ran with" <<<"$LAST" &&
  ! grep -q "ran-1.*never started" <<<"$LAST" || { echo "FAIL: gc: ran-1's warning: $LAST"; fail=1; }
rm "$gcstate/clusterctl/jobs/ran-1.json"
# A job on an inventory (`cluster: inv.yaml`) records it, by its absolute path, and `jobs --gc`
# reaches its hosts through it without --inventory: h1 and h2 refuse (exit 3), no warning. It
# warned "no host 'h1' in ~/.ssh/config ... a job that never started there ...".
printf 'name: invjob\ncluster: inv.yaml\ncommand: [true]\nlogs: %s/inv-logs\n' "$tmp" >"$tmp/inv-job.yaml"
expect 3 "launch on an inventory of refusing hosts" -- env XDG_STATE_HOME="$tmp/invstate" "$cc" launch "$tmp/inv-job.yaml"
grep -qF "\"inventory\": \"$tmp/inv.yaml\"" "$tmp"/invstate/clusterctl/jobs/invjob-*.json ||
  { echo "FAIL: the job's record does not name its inventory: $(cat "$tmp"/invstate/clusterctl/jobs/invjob-*.json)"; fail=1; }
# `logs` of that job, which never started, says why under its own name (it said "clusterctl
# launch: the job did not start: ..."); `logs -f` exits as launch did (3).
for f in "" -f; do
  # shellcheck disable=SC2086
  expect "$([ -n "$f" ] && echo 3 || echo 0)" "logs $f of a job that never started" -- env XDG_STATE_HOME="$tmp/invstate" "$cc" logs invjob $f
  grep -q "^clusterctl logs: the job did not start: a host could not be set up:" <<<"$LAST" &&
    ! grep -q "clusterctl launch" <<<"$LAST" || { echo "FAIL: logs $f of a job that never started: $LAST"; fail=1; }
done
expect 0 "jobs --gc of a job on an inventory that never started" -- env XDG_STATE_HOME="$tmp/invstate" "$cc" jobs --gc
# `jobs` lists the newest 20 records (and every running job); --all every one; --json every one.
manyjobs="$tmp/many-state"
mkdir -p "$manyjobs/clusterctl/jobs" && chmod 700 "$manyjobs" "$manyjobs/clusterctl" "$manyjobs/clusterctl/jobs"
for i in $(seq 10 32); do
  printf '{"schema": "clusterctl.job/1", "id": "many-%s", "name": "many", "job_file": "/j.yaml",
    "pid": 1, "state": "succeeded", "exit_code": 0, "started_at": "2026-11-30T23:30:%sZ",
    "started_us": %s000000, "logs": "%s/nologs", "world_size": 1, "ranks": []}\n' \
    "$i" "$i" "$((1796000000 + i))" "$tmp" >"$manyjobs/clusterctl/jobs/many-$i.json"
done
out=$(env XDG_STATE_HOME="$manyjobs" "$cc" jobs 2>"$tmp/many-err")
[ "$(grep -c '^many-' <<<"$out")" = 20 ] && grep -q '^many-32 ' <<<"$out" && ! grep -q '^many-12 ' <<<"$out" &&
  grep -qF "3 older jobs not shown (the newest 20 and every running job are): \`clusterctl jobs --all\` lists every one" "$tmp/many-err" ||
  { echo "FAIL: jobs without --all: $out $(cat "$tmp/many-err")"; fail=1; }
out=$(env XDG_STATE_HOME="$manyjobs" "$cc" jobs --all 2>"$tmp/many-err")
[ "$(grep -c '^many-' <<<"$out")" = 23 ] && ! grep -q "not shown" "$tmp/many-err" ||
  { echo "FAIL: jobs --all: $out $(cat "$tmp/many-err")"; fail=1; }
[ "$(env XDG_STATE_HOME="$manyjobs" "$cc" --json jobs | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 23 ] ||
  { echo "FAIL: jobs --json does not list every record"; fail=1; }
! grep -q "h1: cannot connect\|warning" <<<"$LAST" ||
  { echo "FAIL: gc reached the hosts of a job that never started: $LAST"; fail=1; }
# jobs --gc without --lab: a record's hosts are reached through the lab it names (here a lab
# whose inventory points lh1 at the refusing port: tried, named, cleaned here instead since a
# lab's hosts share this machine's /tmp: exit 0, no warning); a `lab` that is not a lab name is
# ignored (lh1 is then unknown to the SSH config: warned, skipped).
mkdir -p "$gcstate/clusterctl/labs/fakelab"
chmod 700 "$gcstate/clusterctl/labs" "$gcstate/clusterctl/labs/fakelab"
cp "$tmp/ssh_config" "$gcstate/clusterctl/labs/fakelab/ssh_config"
printf 'ssh_config: ssh_config\nhosts:\n  - {name: lh1, ssh: refusing}\n' \
  >"$gcstate/clusterctl/labs/fakelab/inventory.yaml"
labrecord() {  # labrecord ID LAB HOST
  printf '{"schema": "clusterctl.job/1", "id": "%s", "name": "old", "job_file": "/j.yaml",
    "pid": 1, "state": "failed", "exit_code": 4, "started_at": "2026-11-30T23:30:53Z",
    "logs": "%s/nologs", "world_size": 1, "lab": "%s",
    "ranks": [{"rank": 0, "host": "%s", "status": "exit 1"}]}\n' "$1" "$tmp" "$2" "$3" \
    >"$gcstate/clusterctl/jobs/$1.json"
}
labrecord inlab-1 fakelab lh1
expect 0 "jobs --gc reaches a lab record's hosts without --lab" -- env -u CLUSTERCTL_LAB XDG_STATE_HOME="$gcstate" "$cc" jobs --gc
grep -q "lh1: cannot connect" <<<"$LAST" && grep -qF "lab 'fakelab': lh1 did not answer" <<<"$LAST" ||
  { echo "FAIL: gc did not try the lab's lh1: $LAST"; fail=1; }
grep -q "warning" <<<"$LAST" && { echo "FAIL: gc warned about a lab record: $LAST"; fail=1; }
rm "$gcstate/clusterctl/jobs/inlab-1.json"
labrecord badlab-1 ../labs/fakelab lh1
expect 0 "jobs --gc ignores a lab field that is not a lab name" -- env -u CLUSTERCTL_LAB XDG_STATE_HOME="$gcstate" "$cc" jobs --gc
grep -q "warning: job record badlab-1 .*no host 'lh1'" <<<"$LAST" ||
  { echo "FAIL: gc used a record's path as a lab: $LAST"; fail=1; }
expect 0 "jobs --json of a record with a bad lab" -- env XDG_STATE_HOME="$gcstate" "$cc" --json jobs
grep -q '"lab": null' <<<"$LAST" || { echo "FAIL: jobs --json shows a bad lab: $LAST"; fail=1; }
# logs of a detached job that failed: its summary ends the logs, and `logs -f` exits as the
# job did (4), never 0.
printf 'name: fails\nhosts: [local]\nranks_per_host: 2\nlogs: %s/fail-logs\ntimeouts: {grace: 2}\ncommand: {shell: "echo hi; [ \\"$CLUSTERCOMM_RANK\\" = 1 ] && exit 7; sleep 5"}\n' \
  "$tmp" >"$tmp/fails.yaml"
id=$(env XDG_STATE_HOME="$tmp/state" "$cc" launch --detach "$tmp/fails.yaml" 2>/dev/null)
expect 4 "logs -f of a failed job" -- env XDG_STATE_HOME="$tmp/state" "$cc" logs "$id" -f
grep -q "rank 1 on local failed (exit 7)" <<<"$LAST" || { echo "FAIL: logs -f shows no reason: $LAST"; fail=1; }
expect 0 "logs of a failed job" -- env XDG_STATE_HOME="$tmp/state" "$cc" logs "$id"
grep -q "rank 1 on local failed (exit 7)" <<<"$LAST" || { echo "FAIL: logs shows no reason: $LAST"; fail=1; }
# jobs says why it failed; stop of a job that already ended is nothing to do (exit 0); its
# summary.txt is a text file (ends with a newline).
expect 0 "jobs with a failed job" -- env XDG_STATE_HOME="$tmp/state" "$cc" jobs
grep -q "^$id .*rank 1 on local failed (exit 7)" <<<"$LAST" || { echo "FAIL: jobs shows no why: $LAST"; fail=1; }
expect 0 "jobs --json with a failed job" -- env XDG_STATE_HOME="$tmp/state" "$cc" --json jobs
grep -q '"reason": "rank 1 on local failed (exit 7)' <<<"$LAST" || { echo "FAIL: jobs --json has no reason: $LAST"; fail=1; }
expect 0 "stop of a job that ended" -- env XDG_STATE_HOME="$tmp/state" "$cc" stop "$id"
grep -q "job $id already ended (failed): nothing to stop" <<<"$LAST" || { echo "FAIL: stop of an ended job: $LAST"; fail=1; }
[ "$(tail -c1 "$tmp/fail-logs/$id/summary.txt" | od -An -tx1 | tr -d ' ')" = 0a ] ||
  { echo "FAIL: summary.txt does not end with a newline"; fail=1; }
# An invalid SSH destination says what a valid one looks like (libssh gives no reason).
expect 2 "invalid SSH destination" -- "$cc" exec --hosts 'user@' -- true
grep -q "is not a valid SSH destination: expected HOST or USER@HOST" <<<"$LAST" ||
  { echo "FAIL: invalid destination without a reason: $LAST"; fail=1; }
# Every command that runs or changes something checks every host's SSH destination before it
# acts on any (cli/hosts.h, check_hosts): one bad destination (a scope that is no interface of
# this machine, a malformed one, a name that resolves nowhere) is exit 2 naming every bad host
# at once, and nothing ran on the good ones. exec used to run the command on `local` first.
marker="$tmp/exec-ran"
expect 2 "exec with bad destinations beside a good host" -- "$cc" exec --hosts 'local,fe80::1%nosuch0,user@' -- touch "$marker"
[ -e "$marker" ] && { echo "FAIL: exec ran on local though other hosts' destinations are bad"; fail=1; }
for want in "2 of 3 hosts cannot be reached as given (found before connecting to any); nothing was run on any host:" \
  "  'fe80::1%nosuch0' is not a valid SSH destination: its scope 'nosuch0' is no network interface of this machine" \
  "  'user@' is not a valid SSH destination: expected HOST or USER@HOST"; do
  grep -qF -- "$want" <<<"$LAST" || { echo "FAIL: exec: not reported: $want: $LAST"; fail=1; }
done
printf 'Host refusing\n  HostName 127.0.0.1\n  Port 9\n' >"$tmp/bad-dest-ssh_config"
printf 'ssh_config: bad-dest-ssh_config\nhosts:\n  - {name: h1, ssh: refusing}\n  - {name: h2, ssh: "fe80::1%%nosuch0"}\n  - {name: h3, ssh: nowhere.invalid}\n' \
  >"$tmp/bad-dest.yaml"
printf 'name: baddest\nhosts: [h1, h2]\ncommand: [true]\nlogs: %s/bd-logs\n' "$tmp" >"$tmp/bad-dest-job.yaml"
printf 'x\n' >"$tmp/bad-dest-file"
bad_dest() {  # bad_dest DESCRIPTION HOSTS-WANTED -- CMD...: exit 2, the bad hosts named, no connection tried
  local what=$1 want=$2; shift 3
  expect 2 "$what" -- "$@"
  grep -qF "$tmp/bad-dest.yaml: host h2: 'fe80::1%nosuch0' is not a valid SSH destination: its scope 'nosuch0'" <<<"$LAST" &&
    grep -qE "nothing was (run on any host|started)" <<<"$LAST" ||
    { echo "FAIL: $what: h2's bad destination not named: $LAST"; fail=1; }
  grep -qF "fix host h2's \`ssh:\` in $tmp/bad-dest.yaml" <<<"$LAST" || { echo "FAIL: $what: no fix for h2: $LAST"; fail=1; }
  if [ "$want" = h2,h3 ]; then
    grep -qF "$tmp/bad-dest.yaml: host h3: no host 'nowhere.invalid'" <<<"$LAST" || { echo "FAIL: $what: h3 not named: $LAST"; fail=1; }
  fi
  grep -q "cannot connect" <<<"$LAST" && { echo "FAIL: $what: connected to a host first: $LAST"; fail=1; }
}
bad_dest "exec on an inventory with bad destinations" h2,h3 -- "$cc" --inventory "$tmp/bad-dest.yaml" exec --hosts all -- true
bad_dest "launch on an inventory with a bad destination" h2 -- env XDG_STATE_HOME="$tmp/state" "$cc" --inventory "$tmp/bad-dest.yaml" launch "$tmp/bad-dest-job.yaml"
bad_dest "push to an inventory with bad destinations" h2,h3 -- env XDG_STATE_HOME="$tmp/state" "$cc" --inventory "$tmp/bad-dest.yaml" push "$tmp/bad-dest-file" --dest /tmp
# push --to (and --from) a name the cluster does not have: answered as `health --hosts` answers
# it (remote::unknown_host_error), with the inventory, the closest name and the hosts there.
printf 'hosts:\n  - {name: h1, ssh: 127.0.0.1}\n  - {name: h2, ssh: 127.0.0.2}\n  - {name: h3, ssh: 127.0.0.3}\n' >"$tmp/push-inv.yaml"
for opt in "--to h2,h9" "--from h9"; do
  expect 2 "push $opt: a host the inventory does not have" -- env XDG_STATE_HOME="$tmp/state" "$cc" --inventory "$tmp/push-inv.yaml" push "$tmp/bad-dest-file" --dest /tmp $opt
  grep -qxF "clusterctl push: ${opt%% *}: no host 'h9' in $tmp/push-inv.yaml (did you mean 'h1'?); its hosts: h1, h2, h3" <<<"$LAST" ||
    { echo "FAIL: push $opt: not answered with the inventory and a suggestion: $LAST"; fail=1; }
done
bad_dest "network apply on an inventory with bad destinations" h2,h3 -- "$cc" --inventory "$tmp/bad-dest.yaml" network apply --hosts all
bad_dest "network apply --dry-run on an inventory with bad destinations" h2,h3 -- "$cc" --inventory "$tmp/bad-dest.yaml" network apply --dry-run
bad_dest "rdma enable on an inventory with bad destinations" h2,h3 -- "$cc" --inventory "$tmp/bad-dest.yaml" rdma enable --check
# launch: a `cluster:` file that is missing hides which hosts the job has, but the hosts of the
# inventory the command line selects can still be judged: their bad destinations are named in
# the same run, after the missing file, and "nothing was started" is said once at the end.
printf 'name: mc\ncommand: [true]\ncluster: missing-state.json\nlogs: %s/mc-logs\n' "$tmp" >"$tmp/missing-cluster.yaml"
expect 2 "launch of a missing cluster file on an inventory with bad destinations" -- env XDG_STATE_HOME="$tmp/state" "$cc" --inventory "$tmp/bad-dest.yaml" launch "$tmp/missing-cluster.yaml"
for want in "$tmp/missing-cluster.yaml:3:10: cluster: cluster state $tmp/missing-state.json: no such file" \
  "$tmp/bad-dest.yaml: host h2: 'fe80::1%nosuch0' is not a valid SSH destination: its scope 'nosuch0'" \
  "$tmp/bad-dest.yaml: host h3: no host 'nowhere.invalid'"; do
  grep -qF -- "$want" <<<"$LAST" || { echo "FAIL: launch missing-cluster.yaml: not reported: $want: $LAST"; fail=1; }
done
[ "$(grep -o "nothing was started" <<<"$LAST" | wc -l)" = 1 ] &&
  grep -q "^clusterctl launch: nothing was started$" <<<"$LAST" ||
  { echo "FAIL: launch missing-cluster.yaml: 'nothing was started' not said once at the end: $LAST"; fail=1; }
grep -q "cannot connect" <<<"$LAST" && { echo "FAIL: launch missing-cluster.yaml connected to a host: $LAST"; fail=1; }
# launch: a missing upload is named with its job.yaml line before anything starts (exit 2, an
# input error: nothing was started); no job line, no host contacted.
printf 'name: up\nhosts: [local]\ncommand: [x]\nlogs: %s/up-logs\nupload:\n  - {src: nothing-here, dest: x}\n' \
  "$tmp" >"$tmp/job.yaml"
expect 2 "launch with a missing upload" -- env XDG_STATE_HOME="$tmp/state" "$cc" launch "$tmp/job.yaml"
grep -q "$tmp/job.yaml:6:5: upload src $tmp/nothing-here: no such file" <<<"$LAST" ||
  { echo "FAIL: missing upload not named with its line: $LAST"; fail=1; }
grep -qE " ranks? on " <<<"$LAST" && { echo "FAIL: the job line came before the error: $LAST"; fail=1; }
# ... and "nothing was started" is said once, at the end (the upload's own line said it too).
[ "$(grep -o "nothing was started" <<<"$LAST" | wc -l)" = 1 ] ||
  { echo "FAIL: launch with a missing upload: 'nothing was started' not said once: $LAST"; fail=1; }
# A job that fails validation leaves no job record and no log directory (`clusterctl jobs`
# must not list what never ran): the missing upload above, an unknown key, a host that is not
# in the inventory, an unset secret.
printf 'name: up\nhosts: [local]\ncommand: [true]\nlogs: %s/up-logs\ncomand: [x]\n' "$tmp" \
  >"$tmp/typo.yaml"
expect 2 "launch of a job with an unknown key" -- env XDG_STATE_HOME="$tmp/state" "$cc" launch "$tmp/typo.yaml"
printf 'name: up\nhosts: [local]\ncommand: [true]\nlogs: %s/up-logs\nsecret_env:\n  T: {from_env: CLUSTERCTL_TEST_UNSET_VAR}\n' \
  "$tmp" >"$tmp/secret.yaml"
expect 2 "launch with an unset secret" -- env -u CLUSTERCTL_TEST_UNSET_VAR XDG_STATE_HOME="$tmp/state" "$cc" launch "$tmp/secret.yaml"
grep -q "CLUSTERCTL_TEST_UNSET_VAR is not set" <<<"$LAST" || { echo "FAIL: unset secret not named: $LAST"; fail=1; }
if ls "$tmp"/state/clusterctl/jobs/up-* >/dev/null 2>&1 || [ -e "$tmp/up-logs" ]; then
  echo "FAIL: a job that failed validation left a record or logs:"
  ls -l "$tmp"/state/clusterctl/jobs/ "$tmp/up-logs" 2>&1
  fail=1
fi
# logs: a FIFO in a rank log's place is named once and skipped, never waited on.
mkdir -p "$tmp/state/clusterctl/jobs" "$tmp/fifo-logs"
mkfifo "$tmp/fifo-logs/rank-0.out"
printf 'hello\n' >"$tmp/fifo-logs/rank-0.err"
printf '{"schema": "clusterctl.job/1", "id": "fifo-1", "name": "fifo", "job_file": "/j.yaml",
  "pid": 1, "state": "succeeded", "exit_code": 0, "started_at": "2026-11-30T23:30:53Z",
  "logs": "%s/fifo-logs", "world_size": 1, "hosts": ["h1"], "ranks": []}\n' "$tmp" \
  >"$tmp/state/clusterctl/jobs/fifo-1.json"
for f in "" -f; do
  # shellcheck disable=SC2086
  expect 0 "logs $f with a FIFO for a rank log" -- env XDG_STATE_HOME="$tmp/state" timeout 20 "$cc" logs fifo-1 $f
  [ "$(grep -c "rank 0's log $tmp/fifo-logs/rank-0.out: is a FIFO, not a regular file" <<<"$LAST")" = 1 ] ||
    { echo "FAIL: logs $f: the FIFO not named once: $LAST"; fail=1; }
  grep -q "^hello$" <<<"$LAST" || { echo "FAIL: logs $f: the other log not shown: $LAST"; fail=1; }
done
# logs: a line longer than 64 KiB in a rank log is shown in pieces of at most 64 KiB, as launch
# shows it (it printed the line whole, held in memory whole).
mkdir -p "$tmp/long-logs"
{ head -c 70000 /dev/zero | tr '\0' x; printf '\nshort\n'; } >"$tmp/long-logs/rank-0.out"
: >"$tmp/long-logs/rank-0.err"
printf '{"schema": "clusterctl.job/1", "id": "long-1", "name": "long", "job_file": "/j.yaml",
  "pid": 1, "state": "succeeded", "exit_code": 0, "started_at": "2026-11-30T23:30:53Z",
  "logs": "%s/long-logs", "world_size": 1, "hosts": ["h1"], "ranks": []}\n' "$tmp" \
  >"$tmp/state/clusterctl/jobs/long-1.json"
long_out=$(env XDG_STATE_HOME="$tmp/state" "$cc" logs long-1 2>/dev/null)
[ "$(awk '{ print length($0) }' <<<"$long_out" | tr '\n' ' ')" = "65536 4464 5 " ] ||
  { echo "FAIL: logs of a 70000-byte line: line lengths $(awk '{ print length($0) }' <<<"$long_out" | tr '\n' ' ')"; fail=1; }
# launch: every local problem (missing uploads, an unset secret, an unreadable secret file), the
# job file's own mistakes and its unknown host in one run, each at its FILE:LINE:COLUMN, before
# any host is connected to.
printf 'name: many\nhosts: [nowhere.invalid]\ncommand: [x]\nlogs: %s/many-logs\ncomand: [y]\nsecret_env:\n  T: {from_env: CLUSTERCTL_TEST_UNSET_VAR}\n  F: {from_file: no-secret-file}\nupload:\n  - {src: missing-1, dest: a}\n  - {src: missing-2, dest: b}\n' \
  "$tmp" >"$tmp/many.yaml"
expect 2 "launch with many local problems" -- env -u CLUSTERCTL_TEST_UNSET_VAR XDG_STATE_HOME="$tmp/state" "$cc" launch "$tmp/many.yaml"
for want in "$tmp/many.yaml:5:1: unknown key 'comand'" \
  "$tmp/many.yaml:7:17: secret_env T: the variable CLUSTERCTL_TEST_UNSET_VAR is not set" \
  "$tmp/many.yaml:8:18: secret_env F: cannot read the secret file: $tmp/no-secret-file" \
  "$tmp/many.yaml:10:5: upload src $tmp/missing-1: no such file" \
  "$tmp/many.yaml:11:5: upload src $tmp/missing-2: no such file" \
  "$tmp/many.yaml:2:9: \`hosts:\` names a host clusterctl does not know: no host 'nowhere.invalid'"; do
  grep -qF "$want" <<<"$LAST" || { echo "FAIL: launch: not reported: $want: $LAST"; fail=1; }
done
grep -q "cannot connect" <<<"$LAST" && { echo "FAIL: launch connected to a host: $LAST"; fail=1; }
# The trial's job: an unknown host of the inventory and a missing upload, both in one run, exit 2.
printf 'name: two\nhosts: [h1, h9]\ncommand: [true]\nupload:\n  - {src: nothing-here, dest: x}\nlogs: %s/two-logs\n' \
  "$tmp" >"$tmp/two.yaml"
expect 2 "launch with an unknown host and a missing upload" -- env XDG_STATE_HOME="$tmp/state" "$cc" --inventory "$tmp/inv.yaml" launch "$tmp/two.yaml"
for want in "$tmp/two.yaml:5:5: upload src $tmp/nothing-here: no such file" \
  "$tmp/two.yaml:2:13: \`hosts:\` names a host clusterctl does not know: no host 'h9' in $tmp/inv.yaml (did you mean 'h1'?)"; do
  grep -qF "$want" <<<"$LAST" || { echo "FAIL: launch two.yaml: not reported: $want: $LAST"; fail=1; }
done
# A typo in `cluster:` names the job file's line and the file of a close name beside it, not
# the discovery that would make a new one.
mkdir -p "$tmp/typo-dir"
"$cc" --json discover --from "$(cd "$(dirname "$0")" && pwd)/data/bundles/mac-pair" >"$tmp/typo-dir/cluster.json"
printf 'name: typo\ncommand: [true]\ncluster: clustr.json\nlogs: %s/typo-logs\n' "$tmp" >"$tmp/typo-dir/job.yaml"
expect 2 "launch with a typo in cluster:" -- env XDG_STATE_HOME="$tmp/state" "$cc" launch "$tmp/typo-dir/job.yaml"
grep -qF "$tmp/typo-dir/job.yaml:3:10: cluster: cluster state $tmp/typo-dir/clustr.json: no such file (did you mean 'cluster.json'?)" <<<"$LAST" ||
  { echo "FAIL: launch: cluster typo not named at its line with did-you-mean: $LAST"; fail=1; }
grep -q "discover -o" <<<"$LAST" && { echo "FAIL: launch: a typo advised a new discovery: $LAST"; fail=1; }
# The whole file name is compared: an extension typo gets its "did you mean" too, shown as the
# job wrote the path (it said "cannot tell what '../cluster.jsn' is" and no more).
mkdir -p "$tmp/typo-dir/jobs"
printf 'name: typo\ncommand: [true]\ncluster: ../cluster.jsn\nlogs: %s/typo-logs\n' "$tmp" >"$tmp/typo-dir/jobs/job.yaml"
expect 2 "launch with an extension typo in cluster:" -- env XDG_STATE_HOME="$tmp/state" "$cc" launch "$tmp/typo-dir/jobs/job.yaml"
grep -qF "$tmp/typo-dir/jobs/job.yaml:3:10: 'cluster': cannot tell what '../cluster.jsn' is (did you mean '../cluster.json'?)" <<<"$LAST" ||
  { echo "FAIL: launch: cluster extension typo without did-you-mean: $LAST"; fail=1; }
# Every file the tool reads does the same: a --state-like argument, here health's state.
expect 2 "health with a typo in the state file" -- env XDG_STATE_HOME="$tmp/state" "$cc" health --quick "$tmp/typo-dir/clusterjson"
grep -qF "$tmp/typo-dir/clusterjson: cannot read: No such file or directory (did you mean '$tmp/typo-dir/cluster.json'?)" <<<"$LAST" ||
  { echo "FAIL: health: state typo without did-you-mean: $LAST"; fail=1; }
# YAML syntax errors are reported where they were made: a tab in the indentation (it said
# "illegal map value ... or this line's indentation is off"), a '[' never closed (it pointed at
# the next line, where yaml-cpp noticed).
printf 'name: tab\ncommand: [true]\nhosts: [local]\ntimeouts:\n\tgrace: 5\n' >"$tmp/tab.yaml"
expect 2 "launch of a job indented with a tab" -- env XDG_STATE_HOME="$tmp/state" "$cc" launch "$tmp/tab.yaml"
grep -qF "$tmp/tab.yaml:5:1: a tab in the indentation: YAML allows spaces only" <<<"$LAST" ||
  { echo "FAIL: launch: the tab is not named at its place: $LAST"; fail=1; }
printf 'name: open\nhosts: [local]\ncommand: [hostname\nlogs: %s/open-logs\n' "$tmp" >"$tmp/open.yaml"
expect 2 "launch of a job with a '[' never closed" -- env XDG_STATE_HOME="$tmp/state" "$cc" launch "$tmp/open.yaml"
grep -qF "$tmp/open.yaml:3:10: this '[' is never closed" <<<"$LAST" ||
  { echo "FAIL: launch: the unclosed '[' is not named at its place: $LAST"; fail=1; }
# logs: a job whose log directory was deleted says so, exit 2.
mkdir -p "$tmp/state/clusterctl/jobs"
printf '{"schema": "clusterctl.job/1", "id": "gone-1", "name": "gone", "job_file": "/j.yaml",
  "pid": 1, "state": "succeeded", "exit_code": 0, "started_at": "2026-11-30T23:30:53Z",
  "logs": "%s/deleted-logs", "world_size": 1, "hosts": ["h1"], "ranks": []}\n' "$tmp" \
  >"$tmp/state/clusterctl/jobs/gone-1.json"
expect 2 "logs of a job whose logs were deleted" -- env XDG_STATE_HOME="$tmp/state" "$cc" logs gone-1
grep -q "log directory $tmp/deleted-logs no longer exists" <<<"$LAST" ||
  { echo "FAIL: deleted logs not reported: $LAST"; fail=1; }
# logs: an older run whose log directory a later run of the same job rewrote says so, exit 2,
# and names the later run, whose logs show.
mkdir -p "$tmp/shared-logs"
for id in old-1:23:30:53 new-1:23:40:00; do
  printf '{"schema": "clusterctl.job/1", "id": "%s", "name": "twice", "job_file": "/j.yaml",
    "pid": 1, "state": "succeeded", "exit_code": 0, "started_at": "2026-11-30T%sZ",
    "logs": "%s/shared-logs", "world_size": 1, "hosts": ["h1"], "ranks": []}\n' \
    "${id%%:*}" "${id#*:}" "$tmp" >"$tmp/state/clusterctl/jobs/${id%%:*}.json"
done
expect 2 "logs of a run whose logs a later run rewrote" -- env XDG_STATE_HOME="$tmp/state" "$cc" logs old-1
grep -q "log directory $tmp/shared-logs now holds the logs of the later run new-1" <<<"$LAST" ||
  { echo "FAIL: overwritten logs not reported: $LAST"; fail=1; }
expect 0 "logs of the later run" -- env XDG_STATE_HOME="$tmp/state" "$cc" logs new-1
# jobs --gc with records of a lab that is gone: one line for that lab's records saying so and how
# to drop them (it printed a warning per record repeating "no lab named ... Create it with
# `clusterctl lab up`" once per host, then a line per record: 24 after one user's `lab down`);
# `jobs --forget ID` drops such a record, and refuses an id it does not have; `--forget NAME`
# drops the one record of that name, and refuses a name two records have, naming them.
mkdir -p "$tmp/gcstate/clusterctl/jobs"
for id in lnt-1 lnt-2; do
  printf '{"schema": "clusterctl.job/1", "id": "%s", "name": "lnt", "job_file": "/j.yaml",
    "pid": 1, "state": "failed", "exit_code": 4, "started_at": "2026-11-30T23:30:53Z",
    "logs": "%s/lnt-logs", "world_size": 4, "lab": "ccbgone", "ranks": [
    {"rank": 0, "host": "h1", "status": "exit 1"}, {"rank": 1, "host": "h2", "status": "exit 1"},
    {"rank": 2, "host": "h3", "status": "exit 1"}, {"rank": 3, "host": "h4", "status": "exit 1"}]}\n' \
    "$id" "$tmp" >"$tmp/gcstate/clusterctl/jobs/$id.json"
done
expect 0 "jobs --gc with records of a gone lab" -- env -u CLUSTERCTL_LAB XDG_STATE_HOME="$tmp/gcstate" "$cc" jobs --gc
gone_lines=$(grep -c "2 job records (lnt-2, lnt-1) name lab 'ccbgone', which is gone, and its hosts with it; .* \`clusterctl jobs --forget-ended\` drops the records of every job that has ended" <<<"$LAST")
if [ "$gone_lines" -ne 1 ] || grep -q "lab up\|no lab named" <<<"$LAST" || [ "$(grep -c 'lnt-1' <<<"$LAST")" -ne 1 ]; then
  echo "FAIL: jobs --gc with a gone lab's records: $LAST"
  fail=1
fi
expect 2 "jobs --forget of a name two records have" -- env XDG_STATE_HOME="$tmp/gcstate" "$cc" jobs --forget lnt
grep -qF "2 job records have the name 'lnt': lnt-2 (failed, started 2026-11-30T23:30:53Z), lnt-1 (failed, started 2026-11-30T23:30:53Z); give the id of the one to drop" <<<"$LAST" ||
  { echo "FAIL: jobs --forget of an ambiguous name: $LAST"; fail=1; }
expect 0 "jobs --forget" -- env XDG_STATE_HOME="$tmp/gcstate" "$cc" jobs --forget lnt-1
grep -q "forgot job record lnt-1" <<<"$LAST" || { echo "FAIL: jobs --forget: $LAST"; fail=1; }
[ -e "$tmp/gcstate/clusterctl/jobs/lnt-1.json" ] && { echo "FAIL: jobs --forget left the record"; fail=1; }
expect 2 "jobs --forget of no such record" -- env XDG_STATE_HOME="$tmp/gcstate" "$cc" jobs --forget lnt-9
expect 0 "jobs after --forget" -- env XDG_STATE_HOME="$tmp/gcstate" "$cc" jobs
if grep -q "lnt-1" <<<"$LAST" || ! grep -q "lnt-2" <<<"$LAST"; then
  echo "FAIL: jobs after --forget: $LAST"; fail=1
fi
expect 0 "jobs --forget of the name one record has" -- env XDG_STATE_HOME="$tmp/gcstate" "$cc" jobs --forget lnt
grep -q "forgot job record lnt-2" <<<"$LAST" && [ ! -e "$tmp/gcstate/clusterctl/jobs/lnt-2.json" ] ||
  { echo "FAIL: jobs --forget NAME: $LAST"; fail=1; }
# `jobs` says where the whole story of a failed job is only when it lists a failed one (it said
# so for a lost one too, whose logs have no summary); `jobs --forget-ended` drops the records of
# every job that has ended (succeeded, failed, lost) and keeps a running one's (this shell's pid).
endstate="$tmp/endstate"
mkdir -p "$endstate/clusterctl/jobs"
chmod 700 "$endstate" "$endstate/clusterctl" "$endstate/clusterctl/jobs"
endrecord() {  # endrecord ID STATE PID PID_START EXIT
  printf '{"schema": "clusterctl.job/1", "id": "%s", "name": "e", "job_file": "/j.yaml",
    "pid": %s, "pid_start": "%s", "state": "%s", "exit_code": %s,
    "started_at": "2026-11-30T23:30:53Z", "logs": "%s/nologs", "world_size": 1,
    "ranks": [{"rank": 0, "host": "h1", "status": null}]}\n' "$1" "$3" "$4" "$2" "$5" "$tmp" \
    >"$endstate/clusterctl/jobs/$1.json"
}
endrecord ok-1 succeeded 1 "" 0
endrecord lost-1 running 1 "linux:none:1" null
endrecord run-1 running $$ "" null
expect 0 "jobs with no failed job" -- env XDG_STATE_HOME="$endstate" "$cc" jobs
grep -q "^lost-1 *lost" <<<"$LAST" && ! grep -q "the whole story of a failed job" <<<"$LAST" ||
  { echo "FAIL: jobs without a failed job: $LAST"; fail=1; }
endrecord failed-1 failed 1 "" 4
expect 0 "jobs with a failed job" -- env XDG_STATE_HOME="$endstate" "$cc" jobs
grep -q "the whole story of a failed job" <<<"$LAST" || { echo "FAIL: jobs with a failed job: $LAST"; fail=1; }
expect 0 "jobs --forget-ended" -- env XDG_STATE_HOME="$endstate" "$cc" jobs --forget-ended
grep -qF "forgot 3 job records of jobs that have ended (their logs are kept); kept 1 of running jobs" <<<"$LAST" &&
  [ "$(ls "$endstate/clusterctl/jobs")" = run-1.json ] ||
  { echo "FAIL: jobs --forget-ended: $LAST; left: $(ls "$endstate/clusterctl/jobs")"; fail=1; }
# A job name that two running runs share (started in the same second; their launcher: this
# shell) is refused by every command that takes a job, exit 2, naming both run ids and how to
# pick one; `stop` stopped one of them (the one whose id's random part sorted first), `logs`
# showed it. A run's id still names it (`stop` then says the record has no launcher start time:
# it signals nothing). The newer of two runs is known to the microsecond (`started_us`): the
# name picks it, though its id sorts after the older one's.
dupstate="$tmp/dupstate"
mkdir -p "$dupstate/clusterctl/jobs" "$tmp/dup-logs"
chmod 700 "$dupstate" "$dupstate/clusterctl" "$dupstate/clusterctl/jobs"
duprecord() {  # duprecord ID NAME STATE PID STARTED_US_FIELD
  printf '{"schema": "clusterctl.job/1", "id": "%s", "name": "%s", "job_file": "/j.yaml",
    "pid": %s, "pid_start": "", "state": "%s", "exit_code": null,
    "started_at": "2026-11-30T23:30:53Z", %s "logs": "%s/dup-logs", "world_size": 1,
    "ranks": [{"rank": 0, "host": "h1", "status": null}]}\n' "$1" "$2" "$4" "$3" "$5" "$tmp" \
    >"$dupstate/clusterctl/jobs/$1.json"
}
duprecord dup-20261130-233053-0a1 dup running $$ ""
duprecord dup-20261130-233053-f9e dup running $$ ""
for cmd in stop logs; do
  expect 2 "$cmd of a name two running runs share" -- env XDG_STATE_HOME="$dupstate" "$cc" "$cmd" dup
  grep -qF "clusterctl $cmd: 2 runs of job 'dup' are running: dup-20261130-233053-f9e (running, started 2026-11-30T23:30:53Z), dup-20261130-233053-0a1 (running, started 2026-11-30T23:30:53Z); \`clusterctl $cmd\` takes one run: give its id (\`clusterctl $cmd dup-20261130-233053-f9e\`)" <<<"$LAST" ||
    { echo "FAIL: $cmd of an ambiguous running name: $LAST"; fail=1; }
done
expect 1 "stop of a run by its id" -- env XDG_STATE_HOME="$dupstate" "$cc" stop dup-20261130-233053-0a1
grep -q "job dup-20261130-233053-0a1's record (from an older clusterctl) has no start time" <<<"$LAST" ||
  { echo "FAIL: stop ID of a name two runs share: $LAST"; fail=1; }
rm "$dupstate"/clusterctl/jobs/*.json
duprecord twin-20261130-233053-fff twin succeeded 1 '"started_us": 1796081453100000,'
duprecord twin-20261130-233053-aaa twin succeeded 1 '"started_us": 1796081453900000,'
expect 0 "jobs orders runs of one second by their microseconds" -- env XDG_STATE_HOME="$dupstate" "$cc" jobs
[ "$(grep -o '^twin-[^ ]*' <<<"$LAST" | tr '\n' ' ')" = "twin-20261130-233053-aaa twin-20261130-233053-fff " ] ||
  { echo "FAIL: jobs order of runs in one second: $LAST"; fail=1; }
expect 0 "logs of a name picks its newest run to the microsecond" -- env XDG_STATE_HOME="$dupstate" "$cc" logs twin
grep -q "twin-20261130-233053-aaa" <<<"$LAST" && ! grep -q "twin-20261130-233053-fff" <<<"$LAST" ||
  { echo "FAIL: logs twin did not pick the newest run: $LAST"; fail=1; }
job="$tmp/lab-job.yaml"  # in the scratch directory (mktemp --suffix is GNU-only)
printf 'name: t\ncluster: lab:default\ncommand: [true]\n' >"$job"
expect 2 "--lab replaces a job's lab" -- env -u CLUSTERCTL_LAB "$cc" --lab nosuchlab launch "$job"
if ! grep -q "note: --lab nosuchlab replaces the job's cluster: lab:default" <<<"$LAST" ||
  ! grep -q "no lab named 'nosuchlab'" <<<"$LAST"; then
  echo "FAIL: --lab not used for a lab job: $LAST"
  fail=1
fi
# A lab that is not there, named by the job: the error quotes `cluster:` as the file says it
# (it said `cluster: nosuchlab` of a file that says `cluster: lab:nosuchlab`).
printf 'name: t\ncluster: lab:nosuchlab\ncommand: [true]\n' >"$job"
expect 2 "a job's lab that is not there" -- env -u CLUSTERCTL_LAB XDG_STATE_HOME="$tmp/state" "$cc" launch "$job"
grep -qF "$job:2:10: \`cluster: lab:nosuchlab\`: " <<<"$LAST" ||
  { echo "FAIL: a job's missing lab not quoted as written: $LAST"; fail=1; }
# `lab list` lists the labs of the state directory (it was "The following argument was not
# expected: list"); with none it says so, exit 0; --json: [].
mkdir -p "$tmp/nolabs"
expect 0 "lab list with no labs" -- env XDG_STATE_HOME="$tmp/nolabs" "$cc" lab list
[ "$LAST" = "no labs (in $tmp/nolabs/clusterctl/labs): \`clusterctl lab up --name NAME\` creates one" ] ||
  { echo "FAIL: lab list with no labs: $LAST"; fail=1; }
expect 0 "lab list --json with no labs" -- env XDG_STATE_HOME="$tmp/nolabs" "$cc" lab list --json
[ "$LAST" = "[]" ] || { echo "FAIL: lab list --json with no labs: $LAST"; fail=1; }
# `lab status` of a lab that is not there is a status query answered "not running" (exit 1, as
# for a lab whose sshd is down), not a usage error (it exited 2); it names the `lab up` that
# starts one, and --json still answers.
expect 1 "lab status with no such lab" -- env XDG_STATE_HOME="$tmp/state" "$cc" lab status --name nosuchlab
grep -q "no lab named 'nosuchlab' is running (.* does not exist); start one with \`clusterctl lab up --name nosuchlab\`" <<<"$LAST" ||
  { echo "FAIL: lab status with no lab: $LAST"; fail=1; }
expect 1 "lab status --json with no such lab" -- env XDG_STATE_HOME="$tmp/state" "$cc" lab status --name nosuchlab --json
grep -q '"state": "none"' <<<"$LAST" || { echo "FAIL: lab status --json with no lab: $LAST"; fail=1; }
# While another clusterctl holds a lab's lock to create it (lab/lock.h: a flock, "up" in the
# file) and its lab.json is not written yet, `lab status --json` said "state": "none": it says
# "creating" and the holder's pid, and the text form names it the same way.
if [ "$(id -u)" -eq 0 ]; then
  held="ccbheld$$"
  mkdir -p -m 0755 /run/clusterctl/labs  # as `lab up` makes it
  python3 - "/run/clusterctl/labs/$held.lock" "$tmp/held-ready" <<'PY' &
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, b"up\n")
open(sys.argv[2], "w").close()
time.sleep(60)
PY
  holder_pid=$!
  for _ in $(seq 50); do [ -e "$tmp/held-ready" ] && break; sleep 0.1; done
  expect 1 "lab status --json of a lab being created" -- env XDG_STATE_HOME="$tmp/state" "$cc" lab status --name "$held" --json
  grep -q '"state": "creating"' <<<"$LAST" && grep -q "\"holder_pid\": $holder_pid" <<<"$LAST" &&
    grep -qF "lab '$held' is being created by another clusterctl (pid $holder_pid)" <<<"$LAST" ||
    { echo "FAIL: lab status --json of a lab being created: $LAST"; fail=1; }
  expect 1 "lab status of a lab being created" -- env XDG_STATE_HOME="$tmp/state" "$cc" lab status --name "$held"
  grep -qxF "clusterctl lab status: lab '$held' is being created by another clusterctl (pid $holder_pid): run \`clusterctl lab status --name $held\` again once it is done" <<<"$LAST" ||
    { echo "FAIL: lab status of a lab being created: $LAST"; fail=1; }
  kill "$holder_pid" 2>/dev/null; wait "$holder_pid" 2>/dev/null
  rm -f "/run/clusterctl/labs/$held.lock"
fi
if [ "$(id -u)" -eq 0 ]; then  # lab down needs root; with no lab it has nothing to do (exit 0)
  expect 0 "lab down with no such lab" -- env XDG_STATE_HOME="$tmp/state" "$cc" lab down --name nosuchlab
  grep -q "lab 'nosuchlab': nothing to remove: this machine has no lab of that name; there are no labs" <<<"$LAST" ||
    { echo "FAIL: lab down with no lab: $LAST"; fail=1; }
fi
# --lab NAME while this machine has a lab of that name that is another user's (here root's: its
# runtime directory, whose record only root can read) and not in this user's state directory:
# every command that resolves --lab says what `lab status` says, and never advises `lab up` for
# the taken name (exec said "no lab named ...; there are no labs. Create it with `clusterctl lab
# up --name NAME`").
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  taken="ccbtaken$$"
  mkdir -p -m 0755 /run/clusterctl/labs  # as `lab up` makes it
  mkdir -m 0700 "/run/clusterctl/labs/$taken"
  echo /root/.local/state/clusterctl/labs/$taken >"/run/clusterctl/labs/$taken/lab_dir"
  nobody_home=$(mktemp -d)  # $tmp is this user's alone
  chmod 0777 "$nobody_home"
  as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups env -u CLUSTERCTL_LAB
    HOME="$nobody_home" XDG_STATE_HOME="$nobody_home/state")
  expect 2 "lab status of another user's lab" -- "${as_nobody[@]}" "$cc" lab status --name "$taken"
  status_says="$LAST"
  for args in "exec --hosts all -- uname -n" "discover" "health --quick"; do
    # shellcheck disable=SC2086
    expect 2 "--lab $taken $args as another user" -- "${as_nobody[@]}" "$cc" --lab "$taken" $args
    if ! grep -q "this machine has a lab of that name; this user cannot read its record" <<<"$LAST" ||
      ! grep -q "run \`clusterctl lab status --name $taken\` as root" <<<"$LAST" ||
      grep -q "lab up" <<<"$LAST"; then
      echo "FAIL: --lab $taken $args as another user: $LAST (lab status says: $status_says)"
      fail=1
    fi
  done
  rm -rf "/run/clusterctl/labs/${taken:?}" "${nobody_home:?}"
  rmdir /run/clusterctl/labs /run/clusterctl 2>/dev/null  # only when no lab is left in them
fi
bundle="$(cd "$(dirname "$0")" && pwd)/data/bundles/mac-pair"
# Output into a pipe whose reader is gone (`clusterctl ... | head -1`): exit 141 as a program
# ended by SIGPIPE, and not a word on stderr (it said "internal error: ... Broken pipe", exit 1).
{ sleep 1; "$cc" --json discover --from "$bundle"; } 2>"$tmp/pipe.err" | true
rc=${PIPESTATUS[0]}
[ "$rc" -eq 141 ] || { echo "FAIL: output to a closed pipe: exit $rc, want 141"; fail=1; }
[ -s "$tmp/pipe.err" ] && { echo "FAIL: output to a closed pipe said: $(cat "$tmp/pipe.err")"; fail=1; }
# collect never creates the directories above its bundle (README, "Files").
expect 2 "collect into a missing directory" -- "$cc" collect --from "$bundle" -o "$tmp/nodir/sub/bundle"
grep -q "the directory $tmp/nodir/sub does not exist" <<<"$LAST" ||
  { echo "FAIL: collect's missing directory not named: $LAST"; fail=1; }
[ -e "$tmp/nodir" ] && { echo "FAIL: collect created $tmp/nodir"; fail=1; }
expect 0 "collect into a new directory" -- "$cc" collect --from "$bundle" -o "$tmp/bundle/"
# Labs: a state directory with one lab, t3a, whose hosts a and b (those of the mac-pair
# bundle) refuse connections.
labs="$tmp/labs-state"
mkdir -p "$labs/clusterctl/labs/t3a"
cp "$tmp/ssh_config" "$labs/clusterctl/labs/t3a/ssh_config"
printf 'ssh_config: ssh_config\nhosts:\n  - {name: a, ssh: refusing}\n  - {name: b, ssh: refusing2}\n' \
  >"$labs/clusterctl/labs/t3a/inventory.yaml"
lab() { env -u CLUSTERCTL_LAB XDG_STATE_HOME="$labs" "$@"; }
# A lab that does not exist names the one that does.
expect 2 "a lab that does not exist" -- lab "$cc" --lab default exec --hosts all -- true
grep -q "existing labs: t3a. Create it with \`clusterctl lab up --name default\`, or use lab 't3a' (--lab t3a)" <<<"$LAST" ||
  { echo "FAIL: no 'use lab t3a' hint: $LAST"; fail=1; }
# ... and so do `lab status` (without --name: CLUSTERCTL_LAB's or default; with a typo, a
# did-you-mean) and `lab down`, which is no all-clear for a typo: it said "lab 't3b': nothing to
# remove (already down)" of a name that never was a lab, and `lab status` named no other lab.
expect 1 "lab status of no lab" -- lab env CLUSTERCTL_LAB=zz9 "$cc" lab status
grep -qF "no lab named 'zz9' is running" <<<"$LAST" &&
  grep -qF "; existing labs: t3a: \`clusterctl lab status --name t3a\`" <<<"$LAST" ||
  { echo "FAIL: lab status of no lab does not name t3a: $LAST"; fail=1; }
expect 1 "lab status of a typo" -- lab "$cc" lab status --name t3b
grep -qF "; existing labs: t3a (did you mean 't3a'?): \`clusterctl lab status --name t3a\`" <<<"$LAST" ||
  { echo "FAIL: lab status of a typo: $LAST"; fail=1; }
if [ "$(id -u)" -eq 0 ]; then
  expect 0 "lab down of a typo" -- lab "$cc" lab down --name t3b
  grep -qF "lab 't3b': nothing to remove: this machine has no lab of that name (did you mean 't3a'?); existing labs: t3a" <<<"$LAST" &&
    ! grep -q "already down" <<<"$LAST" || { echo "FAIL: lab down of a typo: $LAST"; fail=1; }
fi
# A --lab that CLUSTERCTL_LAB chose says so (it suggested only "use lab 't3a' (--lab t3a)").
expect 2 "a lab CLUSTERCTL_LAB chose that does not exist" -- lab env CLUSTERCTL_LAB=zz9 "$cc" exec --hosts all -- true
grep -qF "no lab named 'zz9' (--lab or CLUSTERCTL_LAB=zz9; no $labs/clusterctl/labs/zz9/inventory.yaml)" <<<"$LAST" ||
  { echo "FAIL: CLUSTERCTL_LAB not named: $LAST"; fail=1; }
# A cluster state remembers its lab: health on it reaches the lab's hosts without --lab
# (refused: exit 3 naming the lab's address), and another --lab is an error naming both.
"$cc" --json discover --from "$bundle" >"$tmp/nolab.json"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); s["lab"]="t3a"; json.dump(s,open(sys.argv[2],"w"))' \
  "$tmp/nolab.json" "$tmp/t3a state.json"
expect 3 "health of a lab's state without --lab" -- lab "$cc" health --quick "$tmp/t3a state.json"
grep -q "a: cannot connect to 127.0.0.1:9" <<<"$LAST" || { echo "FAIL: health did not use the state's lab: $LAST"; fail=1; }
# Its advice runs as printed: a lab's host is reached with the lab's ssh_config at its `ssh:`
# destination (`ssh a` reaches nothing).
grep -qF "check that a is up and that \`ssh -F $labs/clusterctl/labs/t3a/ssh_config refusing\` works" <<<"$LAST" ||
  { echo "FAIL: health's ssh advice for a lab host is not the lab's ssh: $LAST"; fail=1; }
# A file that is no baseline: the run that writes one there names the state (quoted) and it.
printf '{"schema": "x"}\n' >"$tmp/other base.json"
expect 2 "health with a file that is no baseline" -- lab "$cc" health "$tmp/t3a state.json" --baseline "$tmp/other base.json"
grep -qF "make one with \`clusterctl health '$tmp/t3a state.json' --save-baseline --baseline '$tmp/other base.json'\`" <<<"$LAST" ||
  { echo "FAIL: the baseline's fix is not runnable as printed: $LAST"; fail=1; }
# A broken state file of that lab: the discovery that writes it again has --lab and the quoted path.
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); s["cables"][0]["b"]["host"]="ghost"; json.dump(s,open(sys.argv[2],"w"))' \
  "$tmp/t3a state.json" "$tmp/bad t3a.json"
expect 2 "health of a broken state of a lab" -- lab "$cc" health --quick "$tmp/bad t3a.json"
grep -qF "(fix it, or write it again with \`clusterctl --lab t3a discover -o '$tmp/bad t3a.json'\`)" <<<"$LAST" ||
  { echo "FAIL: a broken state's fix lacks its lab or quoting: $LAST"; fail=1; }
expect 2 "health of a lab's state with another --lab" -- lab "$cc" --lab other health --quick "$tmp/t3a state.json"
grep -qF "$tmp/t3a state.json was discovered on lab 't3a', but lab 'other' was chosen (--lab other): drop --lab to use lab 't3a'" <<<"$LAST" ||
  { echo "FAIL: conflicting labs not named: $LAST"; fail=1; }
# launch of a job whose cluster is that state reaches the lab's hosts the same way.
printf 'name: t3ajob\ncluster: "t3a state.json"\ncommand: [true]\nlogs: %s/t3a-logs\n' "$tmp" \
  >"$tmp/t3a-job.yaml"
# CLUSTERCTL_LAB naming another lab (one that does not exist) is named as the chooser, in the
# same words by health and by launch (launch said "no lab named 'other' ...; or use lab 't3a'
# (--lab t3a)", never that the variable had chosen 'other').
for cmd in health launch; do
  if [ "$cmd" = health ]; then args=(health --quick "$tmp/t3a state.json"); else args=(launch "$tmp/t3a-job.yaml"); fi
  expect 2 "$cmd with CLUSTERCTL_LAB=other" -- lab env CLUSTERCTL_LAB=other "$cc" "${args[@]}"
  grep -qF "$tmp/t3a state.json was discovered on lab 't3a', but lab 'other' was chosen (--lab or CLUSTERCTL_LAB=other): unset CLUSTERCTL_LAB (and drop --lab) to use lab 't3a'" <<<"$LAST" ||
    { echo "FAIL: $cmd: CLUSTERCTL_LAB=other not named: $LAST"; fail=1; }
done
expect 3 "launch of a lab's state without --lab" -- lab "$cc" launch "$tmp/t3a-job.yaml"
grep -q "a: cannot connect" <<<"$LAST" || { echo "FAIL: launch did not use the state's lab: $LAST"; fail=1; }
# A state without a lab, or a hostfile, whose hosts are only a lab's: add --lab NAME.
# network apply checks every host before it probes any: a name that resolves nowhere is exit 2.
expect 2 "network apply of a state without its lab" -- lab "$cc" network apply "$tmp/nolab.json"
grep -q "if it is a host of a lab, add --lab t3a" <<<"$LAST" || { echo "FAIL: network apply: no --lab hint: $LAST"; fail=1; }
printf '[{"ssh": "a", "ips": []}, {"ssh": "b", "ips": []}]\n' >"$tmp/mlx.json"
expect 3 "hostfile --hostfile of lab hosts without --lab" -- lab "$cc" hostfile --hostfile "$tmp/mlx.json" --format mpi
grep -q "if it is a host of a lab, add --lab t3a" <<<"$LAST" || { echo "FAIL: hostfile: no --lab hint: $LAST"; fail=1; }
# Every command that takes --hosts gives the same hint (the SSH options of make_executors carry
# it), and health's fix for such a host is its name, not `ssh h1`.
expect 2 "exec on a lab's host without --lab" -- lab "$cc" exec --hosts h1 -- true
grep -q "no host 'h1' in ~/.ssh/config, and no host of that name (.*); if it is a host of a lab, add --lab t3a" <<<"$LAST" ||
  { echo "FAIL: exec: no --lab hint: $LAST"; fail=1; }
expect 3 "health --quick on a lab's host without --lab" -- lab "$cc" health --quick --hosts h1
grep -q "could not resolve host name 'h1'.*; if it is a host of a lab, add --lab t3a" <<<"$LAST" ||
  { echo "FAIL: health: no --lab hint: $LAST"; fail=1; }
grep -qF "check the host name h1: it does not resolve here" <<<"$LAST" ||
  { echo "FAIL: health: the fix is not the host name: $LAST"; fail=1; }
grep -qF "\`ssh h1\` works" <<<"$LAST" && { echo "FAIL: health: advises ssh h1: $LAST"; fail=1; }
# With a second lab, other, --lab other and a state of t3a are refused, naming both.
mkdir -p "$labs/clusterctl/labs/other"
cp "$labs/clusterctl/labs/t3a/"{ssh_config,inventory.yaml} "$labs/clusterctl/labs/other/"
expect 2 "launch of a lab's state with another --lab" -- lab "$cc" --lab other launch "$tmp/t3a-job.yaml"
grep -qF "was discovered on lab 't3a', but lab 'other' was chosen (--lab other)" <<<"$LAST" ||
  { echo "FAIL: launch: conflicting labs not named: $LAST"; fail=1; }
# The fixes a report suggests run as printed (README): on a state of lab t3a whose two hosts
# are Linux machines without RDMA devices, every `clusterctl ...` that verify-mesh and hostfile
# suggest names the lab and the file, and is no usage error when run literally (its hosts
# refuse connections: exit 3; 1 or 0 for a report). Before, verify-mesh said `clusterctl rdma
# enable --soft-roce`, which exits 2 there.
linux_state() {  # linux_state OUT: the t3a state, its hosts Linux without an RDMA device
  python3 - "$tmp/t3a state.json" "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
def strip(o):  # no RDMA device anywhere: not on a port, not on a cable end
    if isinstance(o, dict):
        o.pop("rdma_device", None)
        for v in o.values(): strip(v)
    elif isinstance(o, list):
        for v in o: strip(v)
for h in s["hosts"]:
    h["os"]["name"] = "Linux"
    h["rdma"] = {"state": "enabled", "devices": []}
strip(s)
json.dump(s, open(sys.argv[2], "w"))
PY
}
run_fixes() {  # run_fixes WHAT OUTPUT: run every `clusterctl ...` in OUTPUT as printed
  local what=$1 cmd rc n=0
  while IFS= read -r cmd; do
    n=$((n + 1))
    grep -qF -- "--lab t3a '$tmp/t3a linux.json'" <<<"$cmd" || grep -qF -- "--lab t3a discover" <<<"$cmd" ||
      { echo "FAIL: $what: the fix does not name lab t3a and the file: $cmd"; fail=1; }
    linux_state "$tmp/t3a linux.json"  # a suggested discover -o writes over it
    out=$(lab env CC="$cc" timeout 120 bash -c 'clusterctl() { "$CC" "$@"; }; '"$cmd" 2>&1); rc=$?
    if [ "$rc" -eq 2 ] || [ "$rc" -eq 124 ]; then
      echo "FAIL: $what: \`$cmd\` run as printed: exit $rc"; echo "$out" | head -5; fail=1
    fi
  done < <(grep -o '`clusterctl [^`]*`' <<<"$2" | tr -d '`' | sort -u)
  [ "$n" -gt 0 ] || { echo "FAIL: $what suggests no clusterctl command: $2"; fail=1; }
}
linux_state "$tmp/t3a linux.json"
vm=$(lab "$cc" verify-mesh "$tmp/t3a linux.json" 2>&1)
grep -qF "\`clusterctl rdma enable --lab t3a '$tmp/t3a linux.json' --soft-roce\`" <<<"$vm" ||
  { echo "FAIL: verify-mesh's soft-roce fix does not name the lab and file: $vm"; fail=1; }
run_fixes "verify-mesh" "$vm"
# verify-mesh and hostfile read the file, not the hosts: their output says so in one line,
# with when it was discovered and the command for a live view.
grep -qE "^from $tmp/t3a linux\.json, discovered [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2} UTC; \`clusterctl --lab t3a discover --hosts [^\`]*\` for a live view\$" <<<"$vm" ||
  { echo "FAIL: verify-mesh of a file does not say it reads the file: $vm"; fail=1; }
# (its cable ends addressed as `network apply` would: mlx-ring refuses the self-assigned 169.254
# addresses the recorded Macs' ports hold, docs/platform.md#self-assigned-addresses)
python3 - "$tmp/t3a linux.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for h in s["hosts"]:
    for p in h["ports"]:
        itf = p.get("interface") or {}
        itf["ipv4"] = [a.replace("169.254.", "10.254.", 1) for a in itf.get("ipv4", [])]
json.dump(s, open(sys.argv[1], "w"))
PY
hf=$(lab "$cc" hostfile "$tmp/t3a linux.json" --format mlx-ring 2>&1 >/dev/null)
grep -qE "^clusterctl hostfile: from $tmp/t3a linux\.json, discovered [0-9-]+ [0-9:]+ UTC; \`clusterctl --lab t3a discover" <<<"$hf" ||
  { echo "FAIL: hostfile of a file does not say it reads the file: $hf"; fail=1; }
# A lab's host names resolve only through its ssh_config: the line that tells the format's own
# tool (mlx.launch, mpirun) to read it, after the file is written.
grep -qxF "clusterctl hostfile: its host names resolve only through the SSH config $labs/clusterctl/labs/t3a/ssh_config, which ssh reads only when told: for mlx.launch, put \`Include $labs/clusterctl/labs/t3a/ssh_config\` at the top of ~/.ssh/config (README, \"Hostfiles\")" <<<"$hf" ||
  { echo "FAIL: hostfile mlx-ring on a lab does not say how mlx.launch reaches its hosts: $hf"; fail=1; }
linux_state "$tmp/t3a linux.json"  # as it was
hf=$(lab "$cc" hostfile "$tmp/t3a linux.json" --format mpi -o "$tmp/hosts-mpi.txt" 2>&1 >/dev/null)
agent="mpirun --hostfile $tmp/hosts-mpi.txt --mca plm_rsh_agent \"ssh -F $labs/clusterctl/labs/t3a/ssh_config\""
grep -qF "run \`$agent" <<<"$hf" ||
  { echo "FAIL: hostfile mpi on a lab does not give the mpirun that reaches its hosts: $hf"; fail=1; }
# jobs --gc of a record of lab t3a, whose hosts refuse (a lab that is down but for its
# directory): named, cleaned here (its hosts share this machine's /tmp), not exit 3. An
# explicit --hosts of it still is.
mkdir -p "$labs/clusterctl/jobs" && chmod 700 "$labs" "$labs/clusterctl" "$labs/clusterctl/jobs"
printf '{"schema": "clusterctl.job/1", "id": "deadlab-1", "name": "dl", "job_file": "/j.yaml",
  "pid": 1, "state": "succeeded", "exit_code": 0, "started_at": "2026-11-30T23:30:53Z",
  "logs": "%s/nologs", "world_size": 2, "lab": "t3a", "ranks": [{"rank": 0, "host": "a", "status": "exit 0"},
  {"rank": 1, "host": "b", "status": "exit 0"}]}\n' "$tmp" >"$labs/clusterctl/jobs/deadlab-1.json"
expect 0 "jobs --gc of a record of a lab whose hosts do not answer" -- lab "$cc" jobs --gc
grep -qF "clusterctl jobs --gc: lab 't3a': a, b did not answer (the lab is down, or their sshd stopped" <<<"$LAST" &&
  grep -q "^clusterctl jobs --gc: skipped: a: cannot connect" <<<"$LAST" ||
  { echo "FAIL: jobs --gc of a dead lab's record: $LAST"; fail=1; }
expect 3 "jobs --gc --hosts of a lab whose hosts do not answer" -- lab "$cc" --lab t3a jobs --gc --hosts a
rm "$labs/clusterctl/jobs/deadlab-1.json"
expect 1 "hostfile mlx-jaccl without RDMA devices" -- lab "$cc" hostfile "$tmp/t3a linux.json" --format mlx-jaccl
run_fixes "hostfile --format mlx-jaccl" "$LAST"
expect 1 "hostfile mlx-jaccl-ring without RDMA devices" -- lab "$cc" hostfile "$tmp/t3a linux.json" --format mlx-jaccl-ring
grep -qF "\`clusterctl rdma status --lab t3a '$tmp/t3a linux.json'\` says why" <<<"$LAST" ||
  { echo "FAIL: jaccl-ring without RDMA devices does not send to rdma status: $LAST"; fail=1; }
run_fixes "hostfile --format mlx-jaccl-ring" "$LAST"
# With no lab and no inventory, a command over every host says what is missing, without
# naming a --hosts all the operator never gave.
expect 2 "verify-mesh without a cluster" -- env -u CLUSTERCTL_LAB XDG_STATE_HOME="$tmp/nolabs" "$cc" verify-mesh
grep -q "no lab or inventory says which hosts the cluster has: pass --lab NAME" <<<"$LAST" ||
  { echo "FAIL: no hosts: message: $LAST"; fail=1; }
grep -q -- "--hosts all" <<<"$LAST" && { echo "FAIL: no hosts: names --hosts all: $LAST"; fail=1; }
# health --quick without a state file, on a host that accepts TCP and never speaks SSH (its
# sshd stopped with SIGSTOP): the host is waited on once (--connect-timeout, in discovery), not
# once more by the checks, and the time printed is the command's. It took 2 connect timeouts
# and printed 1. Ctrl-C during that discovery says so, with the time it took.
python3 - "$tmp/silent-port" <<'PY' &
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(120)
PY
silent_pid=$!
for _ in $(seq 50); do [ -s "$tmp/silent-port" ] && break; sleep 0.1; done
printf 'Host silent\n  HostName 127.0.0.1\n  Port %s\n' "$(cat "$tmp/silent-port")" >"$tmp/silent_config"
# The signals below come once the command is connecting to the silent host (its discovery has
# begun), not a fixed time after it was started: a loaded machine started it 1.5 s late, and
# the signal then came before its discovery. Connections to it: established, or waiting in
# SYN-SENT once its never-accepted backlog is full.
silent_conns() {
  ss -Htn state established state syn-sent "( dport = :$(cat "$tmp/silent-port") )" | wc -l
}
wait_silent_conns() {  # wait_silent_conns PID BEFORE: until more than BEFORE, or PID ended
  local i
  for i in $(seq 300); do
    [ "$(silent_conns)" -gt "$2" ] && return 0
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
t0=$(date +%s.%N)
expect 3 "health --quick of a silent host" -- env -u CLUSTERCTL_LAB XDG_STATE_HOME="$tmp/nolabs" "$cc" -F "$tmp/silent_config" --connect-timeout 3 health --quick --hosts silent
t1=$(date +%s.%N)
shown=$(sed -n 's/.* in \([0-9.]*\) s$/\1/p' <<<"$LAST" | tail -1)
wall=$(python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.2f}")' "$t0" "$t1")
python3 -c 'import sys; wall, shown = float(sys.argv[1]), float(sys.argv[2] or -1)
sys.exit(0 if wall < 5 and abs(wall - shown) < 1.5 else 1)' "$wall" "$shown" ||
  { echo "FAIL: health --quick of a silent host: $wall s of wall time, shown '$shown' s: $LAST"; fail=1; }
conns=$(silent_conns)
env -u CLUSTERCTL_LAB XDG_STATE_HOME="$tmp/nolabs" "$cc" -F "$tmp/silent_config" --connect-timeout 20 health --quick --hosts silent >"$tmp/int-out" 2>&1 &
health_pid=$!
wait_silent_conns "$health_pid" "$conns" ||
  { echo "FAIL: health --quick never connected to the silent host"; fail=1; }
sleep 1.6
kill -INT "$health_pid"
wait "$health_pid"; rc=$?
[ "$rc" = 130 ] || { echo "FAIL: health --quick interrupted in discovery: exit $rc"; fail=1; }
shown=$(sed -n 's/.* in \([0-9.]*\) s$/\1/p' "$tmp/int-out" | tail -1)
grep -qF "health (quick): interrupted (Ctrl-C) while discovering the hosts: 0 of " "$tmp/int-out" &&
  python3 -c 'import sys; sys.exit(0 if 1.5 < float(sys.argv[1] or 0) < 10 else 1)' "$shown" ||
  { echo "FAIL: health --quick interrupted in discovery: $(cat "$tmp/int-out")"; fail=1; }
# A signal during a live discovery is said in one line that names the signal that came
# (discover and collect called a SIGTERM "interrupted (Ctrl-C)"), exit 130 for either (README,
# "Exit codes"), and nothing of the partial probe; hostfile printed a line "interrupted while
# connecting" per host not reached yet, network plan a plan and no word at all.
printf 'Host silent2\n  HostName 127.0.0.1\n  Port %s\n' "$(cat "$tmp/silent-port")" >>"$tmp/silent_config"
interrupt_run() {  # interrupt_run SIGNAL WANTED-LINE CMD...: CMD, SIGNAL once it connects; exit 130, that line alone
  local sig=$1 want=$2 pid rc; shift 2
  local conns
  conns=$(silent_conns)
  env -u CLUSTERCTL_LAB XDG_STATE_HOME="$tmp/nolabs" "$cc" -F "$tmp/silent_config" --connect-timeout 20 "$@" >"$tmp/sig-out" 2>&1 &
  pid=$!
  wait_silent_conns "$pid" "$conns" || { echo "FAIL: $* never connected to the silent hosts"; fail=1; }
  sleep 0.3
  kill -"$sig" "$pid"
  wait "$pid"; rc=$?
  LAST=$(cat "$tmp/sig-out")
  [ "$rc" = 130 ] && [ "$LAST" = "$want" ] ||
    { echo "FAIL: $* after SIG$sig: exit $rc, want 130 and only '$want': $LAST"; fail=1; }
}
interrupt_run TERM "clusterctl discover: terminated (SIGTERM); nothing shown" discover --hosts silent,silent2
interrupt_run INT "clusterctl discover: interrupted (Ctrl-C); nothing written to $tmp/never.json" discover --hosts silent,silent2 -o "$tmp/never.json"
interrupt_run TERM "clusterctl collect: terminated (SIGTERM); nothing was collected into $tmp/sig-bundle" collect --hosts silent,silent2 -o "$tmp/sig-bundle"
interrupt_run INT "clusterctl hostfile: interrupted (Ctrl-C); nothing written" hostfile --format mpi --hosts silent,silent2
interrupt_run TERM "clusterctl hostfile: terminated (SIGTERM); nothing written" hostfile --format mpi --hosts silent,silent2
interrupt_run TERM "clusterctl network plan: terminated (SIGTERM); nothing shown" network plan --hosts silent,silent2
interrupt_run INT "clusterctl verify-mesh: interrupted (Ctrl-C); nothing shown" verify-mesh --hosts silent,silent2
# launch's preflight discovery too (it judged the partial discovery: a verify-mesh report of
# unreachable hosts, exit 3, as if the hosts were down).
printf 'name: sigjob\nhosts: [silent, silent2]\ncommand: [true]\npreflight: [verify-mesh]\n' >"$tmp/sigjob.yaml"
interrupt_run INT "clusterctl launch: interrupted (Ctrl-C) while discovering the hosts (preflight verify-mesh); nothing was started" launch "$tmp/sigjob.yaml"
interrupt_run TERM "clusterctl launch: terminated (SIGTERM) while discovering the hosts (preflight verify-mesh); nothing was started" launch "$tmp/sigjob.yaml"
kill "$silent_pid" 2>/dev/null
# network plan with a host it cannot reach names it (it exited 3 naming none), with how it was
# tried and what to do, as discover does; the plan of the others is still printed.
expect 3 "network plan of an unreachable host" -- env -u CLUSTERCTL_LAB XDG_STATE_HOME="$tmp/nolabs" "$cc" -F "$tmp/silent_config" --connect-timeout 2 network plan --hosts silent
grep -q "^clusterctl network plan: 1 host not probed, so this plan may miss cables of it:$" <<<"$LAST" &&
  grep -q "^  silent: cannot connect to 127.0.0.1:[0-9]*: Connection refused. Check that the host is up" <<<"$LAST" &&
  grep -qF "Once it is reached, run \`clusterctl network plan -F $tmp/silent_config --hosts silent\` again" <<<"$LAST" &&
  grep -q "^network plan: 0 cables from 10.231.0.0/16$" <<<"$LAST" ||
  { echo "FAIL: network plan of an unreachable host does not name it: $LAST"; fail=1; }
# Standard output that cannot be written (a full disk: /dev/full) is one line on stderr and
# exit 2, for every command: it was exit 0 with the output lost (`health --quick --json`: exit
# 1, "internal error ... this is a bug"). Small outputs fail at the last flush, big ones at a
# write in the middle; both are said the same way.
mesh3=$(cd "$(dirname "$0")/data/bundles/mac-mesh3" && pwd)
"$cc" discover --from "$mesh3" -o "$tmp/c3.json" >/dev/null 2>&1 ||
  { echo "FAIL: discover --from mac-mesh3 -o: exit $?"; fail=1; }
to_full() {  # to_full NAME CMD...: CMD with stdout to /dev/full; NAME: its "clusterctl NAME"
  local name=$1 rc=0 err; shift
  err=$("$cc" "$@" 2>&1 >/dev/full) || rc=$?
  local want="clusterctl${name:+ $name}: cannot write to standard output: No space left on device (nothing was written)"
  if [ "$rc" -ne 2 ] || ! grep -qxF "$want" <<<"$err" || grep -q "internal error" <<<"$err"; then
    echo "FAIL: $* >/dev/full: exit $rc, want 2 and '$want': $err"; fail=1
  fi
}
to_full discover discover --from "$mesh3"
to_full discover --json discover --from "$mesh3"
to_full hostfile hostfile "$tmp/c3.json" --format mpi
to_full verify-mesh verify-mesh "$tmp/c3.json"
to_full health health --quick "$tmp/c3.json"
to_full health --json health --quick "$tmp/c3.json"
to_full exec exec --hosts local -- echo hi
to_full exec exec --hosts local -- sh -c 'head -c 200000 /dev/zero | tr "\0" a'
to_full "" --help
# An output that is one of the command's inputs is refused before any work, however it is
# spelt (a link, ./): `hostfile c4.json -o c4.json` replaced the cluster state with a hostfile.
cp "$tmp/c3.json" "$tmp/c3.orig"
ln -s c3.json "$tmp/c3.link"
printf 'hosts:\n  - name: h1\n' >"$tmp/inv.yaml"
for out in "$tmp/c3.json" "$tmp/./c3.json" "$tmp/c3.link"; do
  expect 2 "hostfile -o its input $out" -- "$cc" hostfile "$tmp/c3.json" --format mpi -o "$out"
  grep -qxF "clusterctl hostfile: $out: is the same file as the input $tmp/c3.json: writing it would replace what this command reads; nothing was written: give another output path" <<<"$LAST" ||
    { echo "FAIL: hostfile -o $out (its input): $LAST"; fail=1; }
done
cmp -s "$tmp/c3.json" "$tmp/c3.orig" || { echo "FAIL: hostfile -o its input changed it"; fail=1; }
expect 2 "discover -o its inventory" -- "$cc" --inventory "$tmp/inv.yaml" discover -o "$tmp/inv.yaml"
grep -qF "clusterctl discover: $tmp/inv.yaml: is the same file as the input $tmp/inv.yaml" <<<"$LAST" ||
  { echo "FAIL: discover -o its inventory: $LAST"; fail=1; }
grep -qx "  - name: h1" "$tmp/inv.yaml" || { echo "FAIL: discover -o replaced its inventory"; fail=1; }
expect 2 "health --junit its thresholds" -- "$cc" health --quick "$tmp/c3.json" --thresholds "$tmp/inv.yaml" --junit "$tmp/inv.yaml"
grep -qF "clusterctl health: $tmp/inv.yaml: is the same file as the input $tmp/inv.yaml" <<<"$LAST" ||
  { echo "FAIL: health --junit its thresholds: $LAST"; fail=1; }
expect 0 "network plan back into its state" -- "$cc" network plan "$tmp/c3.json" -o "$tmp/c3.link"
# A directory that cannot take a new file is refused before any host is probed (it was said
# after the whole discovery, cut off at "a temporary file beside"). Linux: /sys.
if [ -d /sys/kernel ]; then
  expect 2 "discover -o /sys/..." -- "$cc" --connect-timeout 5 discover --hosts 192.0.2.1 -o /sys/clusterctl-test.json
  [ "$LAST" = "clusterctl discover: /sys/clusterctl-test.json: cannot create a file in its directory /sys: Permission denied; nothing was written: give a path in a directory you can write" ] ||
    { echo "FAIL: discover -o /sys/...: not the one line before any probe: $LAST"; fail=1; }
fi
[ "$fail" -eq 0 ] && echo "cli basics: ok"
exit "$fail"
