#!/bin/bash
# The COMMAND that `serve up` gives `run`: inside the guest, runs the jobs that `serve exec`
# drops in $RDMA_VM_OUT/jobs/<id>/ (argv, env, cwd, timeout, then the file "ready"), one at a
# time in the order of their ids, until $RDMA_VM_OUT/stop appears. Each job's stdout, stderr
# and exit-status go back to its directory. Polls every 0.3 s without starting processes.
set -uo pipefail
# shellcheck source=tests/rdma-vm/guest-lib.sh
source "$(dirname "$0")/guest-lib.sh"
out=$RDMA_VM_OUT
mkdir -p "$out/jobs"
mkfifo /run/rvm-serve-tick
exec {tick}<>/run/rvm-serve-tick # nobody writes: `read -t` on it is a sleep without a process

run_job() {
  local d=$1 status
  rm -f "$d/ready"
  (
    while IFS= read -r -d '' kv; do
      name=${kv%%=*}
      [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
      case $name in BASH* | SHELLOPTS | EUID | UID | PPID | SHLVL | PWD | OLDPWD | _) continue ;; esac
      export "${kv?}"
    done <"$d/env"
    # shellcheck disable=SC1091
    source "$out/mesh.env"
    cd "$(<"$d/cwd")" 2>/dev/null || cd /
    mapfile -d '' argv <"$d/argv"
    read -r t <"$d/timeout"
    rvm_timeout "$t" "${argv[@]}" >>"$d/stdout" 2>>"$d/stderr" </dev/null
  )
  status=$?
  echo "$status" >"$d/exit-status.tmp" && mv "$d/exit-status.tmp" "$d/exit-status"
}

: >"$out/serving"
while [ ! -e "$out/stop" ]; do
  for ready in "$out"/jobs/*/ready; do
    [ -e "$ready" ] && run_job "${ready%/ready}"
  done
  read -r -t 0.3 -u "$tick" _
done
exit 0
