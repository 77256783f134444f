# Helpers shared by the lab integration tests (sourced; bash with set -euo pipefail).
# $CLUSTERCTL is the binary under test; labs live under $XDG_STATE_HOME (the build tree).
: "${CLUSTERCTL:?set CLUSTERCTL to the clusterctl binary}"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The lab directory of lab $1 (the default one).
labdir() { echo "${XDG_STATE_HOME:-$HOME/.local/state}/clusterctl/labs/$1"; }

# Removes labs $@ when the test exits, whatever the outcome, so a failing test leaves nothing.
down_on_exit() {
  local names="$*"
  # shellcheck disable=SC2064
  trap "for n in $names; do \"\$CLUSTERCTL\" lab down --name \$n >/dev/null 2>&1 || true; done" EXIT
}

# Milliseconds since the epoch.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# What a lab adds to the machine, for before/after comparisons:
#  - named network namespaces (ip netns list);
#  - interface names in the root namespace (ip -o link);
#  - mounts under /run/netns and /run/clusterctl (namespace files);
#  - files under /etc/netns (each host's own machine-id, bind-mounted by `ip netns exec`);
#  - processes that a lab runs: those in a network namespace other than this one that is not a
#    named namespace which existed before (a lab's sshd and its sessions, even after their
#    namespace lost its name), plus sshd, ip, ssh-keygen, unshare, nsenter anywhere.
#    Zombies are skipped (PID 1 reaps them in its own time); so is this test's own shell.
# Other processes of the machine come and go (compilers, other tests) and are ignored.
SNAPSHOT_KNOWN_NS=""
snapshot_init() {
  SNAPSHOT_KNOWN_NS=$(for f in /run/netns/*; do [ -e "$f" ] || continue; stat -L -c %i "$f"; done | sort -u)
}
snapshot() {
  local self_ns pid stat comm ns ino
  self_ns=$(readlink /proc/self/ns/net)
  echo "## netns"
  ip netns list | awk '{print $1}' | sort
  echo "## links"
  ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort
  echo "## mounts"
  awk '$5 ~ "^/run/(netns|clusterctl)/" {print $5}' /proc/self/mountinfo | sort
  echo "## /etc/netns"
  find /etc/netns 2>/dev/null | sort || true
  echo "## processes"
  ps -e -o pid=,stat=,comm= | while read -r pid stat comm; do
    [[ $stat == Z* || $pid == "$$" || $pid == "$BASHPID" ]] && continue
    ns=$(readlink "/proc/$pid/ns/net" 2>/dev/null) || continue
    ino=${ns//[^0-9]/}
    # In a namespace that was not there before (a lab's, even one deleted since), or a lab's
    # sshd (its config lies under a clusterctl state directory) wherever it is. Not every `ip`
    # or sshd of the machine: other tests (a local discovery runs `ip`) run beside this one.
    if { [[ $ns != "$self_ns" ]] && ! grep -qx "$ino" <<<"$SNAPSHOT_KNOWN_NS"; } ||
      { [[ $comm =~ ^(sshd|unshare|nsenter)$ ]] &&
        tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q clusterctl; }; then
      echo "$pid $comm"
    fi
  done | sort -n
}

# Fails unless snapshot $1 (before) equals snapshot $2 (after), showing the difference.
same_snapshot() {
  if [ "$1" != "$2" ]; then
    echo "before/after differ (< before, > after):" >&2
    diff <(echo "$1") <(echo "$2") >&2 || true
    fail "$3"
  fi
}

# Sends SIGTERM to pids $@ (a lab host's sshd and its sessions) and returns once they have
# ended (a zombie has: it waits only for its parent, maybe the sandbox's pid 1, to reap it):
# a signal is only delivered, and a check run right after it could still reach a dying sshd.
# Fails naming those left after 10 s.
kill_and_wait() {
  local p left state
  kill "$@" 2>/dev/null || true
  for _ in $(seq 200); do
    left=""
    for p in "$@"; do
      state=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1) || state=""
      [ -n "$state" ] && [ "$state" != Z ] && left="$left $p"
    done
    [ -z "$left" ] && return 0
    sleep 0.05
  done
  fail "still running 10 s after SIGTERM:$left"
}
