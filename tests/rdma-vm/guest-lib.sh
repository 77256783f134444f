# Helpers for scripts that `tests/rdma-vm/run` runs in the guest: source it from bash.
#   source "$(dirname "$0")/guest-lib.sh"     (or the path of tests/rdma-vm)
# Many tests in one boot: each `rvm_case` runs one command with a timeout and records
# PASS/FAIL; `rvm_finish` prints "N passed, N failed" and returns non-zero if any failed.
# Process starts are slow in the emulated guest (~0.1 s each): these use bash builtins.
# shellcheck shell=bash

RVM_PASSED=0
RVM_FAILED=0
RVM_FAILED_NAMES=()

# rvm_now: sets $rvm_t to the guest's uptime in centiseconds (no process).
rvm_now() {
  local up _
  read -r up _ </proc/uptime
  rvm_t=$((10#${up/./}))
}
# rvm_timeout SECONDS COMMAND [ARGS...]: COMMAND (a program or a shell function) in a process
# group of its own; SIGTERM to the whole group after SECONDS, SIGKILL 5 s later. Status:
# COMMAND's, or 124 when it timed out (as timeout(1)).
rvm_timeout() {
  local t=$1 pid wd status flag=/run/rvm-timeout.$$.$RANDOM
  shift
  set -m
  "$@" &
  pid=$!
  (sleep "$t" && : >"$flag" && kill -TERM -- -"$pid" 2>/dev/null && sleep 5 &&
    kill -KILL -- -"$pid" 2>/dev/null) &
  wd=$!
  set +m
  wait "$pid"
  status=$?
  kill -- -"$wd" 2>/dev/null
  wait "$wd" 2>/dev/null
  if [ -e "$flag" ]; then
    rm -f "$flag"
    status=124
  fi
  return "$status"
}
# rvm_case NAME [--timeout SECONDS] -- COMMAND [ARGS...]: runs one test case (a program or a
# shell function; default timeout 120 s), framed by "=== RUN NAME" and "--- PASS: NAME (1.2 s)"
# or "--- FAIL: NAME (exit 3, 1.2 s)" / "(timed out after 120 s, ...)".
rvm_case() {
  local name=$1 timeout=120
  shift
  if [ "${1:-}" = --timeout ]; then
    timeout=$2
    shift 2
  fi
  [ "${1:-}" = -- ] && shift
  echo "=== RUN $name"
  local t0 status
  rvm_now
  t0=$rvm_t
  rvm_timeout "$timeout" "$@"
  status=$?
  rvm_now
  local d=$((rvm_t - t0))
  local took="$((d / 100)).$(((d % 100) / 10)) s"
  if ((status == 0)); then
    echo "--- PASS: $name ($took)"
    RVM_PASSED=$((RVM_PASSED + 1))
  else
    if ((status == 124)); then
      echo "--- FAIL: $name (timed out after $timeout s, $took)"
    else
      echo "--- FAIL: $name (exit $status, $took)"
    fi
    RVM_FAILED=$((RVM_FAILED + 1))
    RVM_FAILED_NAMES+=("$name")
  fi
  return 0
}
# rvm_finish: the summary line; status 1 when a case failed, or when no case ran.
rvm_finish() {
  ((RVM_FAILED == 0)) || echo "failed: ${RVM_FAILED_NAMES[*]}"
  echo "$RVM_PASSED passed, $RVM_FAILED failed"
  ((RVM_FAILED == 0 && RVM_PASSED > 0))
}

# rvm_wait_port PORT [SECONDS]: until a TCP socket listens on PORT (IPv4 or IPv6; default 30 s).
rvm_wait_port() {
  local port=$1 seconds=${2:-30} hex f local_addr st rest
  printf -v hex '%04X' "$port"
  local deadline=$((SECONDS + seconds))
  while ((SECONDS < deadline)); do
    for f in /proc/net/tcp /proc/net/tcp6; do
      while read -r _ local_addr _ st rest; do
        [[ $local_addr == *:"$hex" && $st == 0A ]] && return 0
      done <"$f"
    done
    sleep 0.1
  done
  echo "rdma-vm: nothing listens on TCP port $port after $seconds s" >&2
  return 1
}

# rvm_perftest TOOL SERVER_DEV CLIENT_DEV SERVER_ADDR [PERFTEST ARGS...]: one perftest run
# (ib_send_lat, ib_send_bw, ib_write_lat, ...) between two devices: the server on SERVER_DEV,
# the client on CLIENT_DEV connecting to SERVER_ADDR (both with -x 1, the IPv4-mapped GID), on
# a TCP port of its own. The client's report goes to stdout; the server's only on failure.
# Status 0 when both ends exit 0 within RVM_PERFTEST_TIMEOUT seconds (default 60) with figures.
# perftest calibrates its cycle counter against the clock, which fails now and then in the
# emulated guest under load ("Correlation coefficient r^2 ... < 0.9", then no report or "inf"
# figures): such a run is repeated, 3 tries in all.
RVM_PERFTEST_PORT=18515
rvm_perftest() {
  local tool=$1 sdev=$2 cdev=$3 saddr=$4
  shift 4
  local t=${RVM_PERFTEST_TIMEOUT:-60} port slog clog spid sst cst try
  for try in 1 2 3; do
    port=$RVM_PERFTEST_PORT
    RVM_PERFTEST_PORT=$((RVM_PERFTEST_PORT + 1))
    slog=/run/rvm-perftest.$port.server clog=/run/rvm-perftest.$port.client
    rvm_timeout "$t" "$tool" -d "$sdev" -x 1 -p "$port" "$@" >"$slog" 2>&1 &
    spid=$!
    if ! rvm_wait_port "$port" "$t"; then
      kill "$spid" 2>/dev/null
      wait "$spid"
      cat "$slog" >&2
      rm -f "$slog"
      return 1
    fi
    rvm_timeout "$t" "$tool" -d "$cdev" -x 1 -p "$port" "$@" "$saddr" >"$clog" 2>&1
    cst=$?
    wait "$spid"
    sst=$?
    if grep -q "Correlation coefficient" "$slog" "$clog" || grep -q " inf " "$clog"; then
      echo "rdma-vm: $tool: perftest's clock calibration failed (try $try of 3)"
      rm -f "$slog" "$clog"
      continue
    fi
    cat "$clog"
    if ((sst != 0 || cst != 0)); then
      echo "rdma-vm: $tool failed: server on $sdev exit $sst, client on $cdev exit $cst (124: timed out after $t s); server output:" >&2
      cat "$slog" >&2
    fi
    rm -f "$slog" "$clog"
    ((sst == 0 && cst == 0))
    return
  done
  echo "rdma-vm: $tool: perftest's clock calibration failed 3 times: no figures" >&2
  return 1
}
