#!/bin/bash
# Runs inside the guest, in the chroot over the host's root (started by init): builds the
# emulated Thunderbolt mesh with Soft-RoCE, writes the files that describe it, then runs the
# command that `run` was given. Every result goes to the run directory RUN (shared read-write
# with the host): stdout, stderr, exit-status, timings, and harness-error when the mesh could
# not be built. Not meant to be run by hand (it reconfigures the network of the machine).
#
# The mesh (docs/platform.md#soft-roce): all in the initial network namespace (rxe QPs fail inside a netns on
# 6.1). Cables are numbered c = 0, 1, ... over the pairs i < j, then the K cables k of a pair.
# Cable c is one veth pair e<i>_<j> <-> e<j>_<i> (suffix _<k> when K > 1; MTU RDMA_VM_MTU, 9000 by
# default: rxe derives a port's active_mtu from its netdev's MTU less about 80 bytes of headers,
# so 1500 gives 1024 and 4200 or more gives 4096, which the Macs' RDMA ports report, fixture
# macos/pair-b.ibv_devinfo.txt), one rxe device per
# end (rxe<i>_<j>[_<k>] on host i), addresses 10.231.<c>.1/30 (host i) and 10.231.<c>.2/30
# (host j), and policy routing so that traffic from one end to the other crosses the veth
# instead of the loopback (which rxe drops): the `local` table moves after per-interface rules
# `oif <veth> lookup <table>`, each table holding the peer's /32 via that veth.
#
# Starting a process costs ~0.1 s in the emulated guest: this script uses bash builtins, one
# `ip -batch` per step and one `rdma -batch`.
set -uo pipefail
run=$1
read -r t_start _ </proc/uptime
# shellcheck disable=SC1091
source "$run/config" # RDMA_VM_HOSTS, RDMA_VM_CABLES_PER_PAIR, RDMA_VM_MTU, RDMA_VM_CWD
n=$RDMA_VM_HOSTS
kk=$RDMA_VM_CABLES_PER_PAIR

harness_error() {
  echo "$*" >"$run/harness-error"
  echo "rdma-vm-guest: error: $*" >&2
  exit 125
}
trace() {
  if [ -n "${RDMA_VM_TRACE:-}" ]; then
    local up _
    read -r up _ </proc/uptime
    echo "rdma-vm-guest: $up s: $*" >&2
  fi
}

# The mesh's tables. Keys "i,j,k": host i's k-th cable to host j.
declare -a C_A C_B C_K # cable c joins hosts C_A[c] < C_B[c]; it is their cable C_K[c]
declare -A DEV NET ADDR PEER_ADDR
c=0
for ((i = 0; i < n; i++)); do
  for ((j = i + 1; j < n; j++)); do
    for ((k = 0; k < kk; k++)); do
      C_A[c]=$i C_B[c]=$j C_K[c]=$k
      sfx=""
      ((kk == 1)) || sfx="_$k"
      DEV[$i,$j,$k]=rxe${i}_$j$sfx DEV[$j,$i,$k]=rxe${j}_$i$sfx
      NET[$i,$j,$k]=e${i}_$j$sfx NET[$j,$i,$k]=e${j}_$i$sfx
      ADDR[$i,$j,$k]=10.231.$c.1 ADDR[$j,$i,$k]=10.231.$c.2
      PEER_ADDR[$i,$j,$k]=10.231.$c.2 PEER_ADDR[$j,$i,$k]=10.231.$c.1
      c=$((c + 1))
    done
  done
done
ncables=$c

# Every end of every cable, as "i,j,k" keys: host by host, peer by peer.
ENDS=()
for ((i = 0; i < n; i++)); do
  for ((j = 0; j < n; j++)); do
    ((i == j)) && continue
    for ((k = 0; k < kk; k++)); do ENDS+=("$i,$j,$k"); done
  done
done

set_conf() { # set_conf IFACE KEY VALUE: net.ipv4.conf.IFACE.KEY, written through /proc
  echo "$3" >"/proc/sys/net/ipv4/conf/$1/$2" ||
    harness_error "mesh setup: cannot set net.ipv4.conf.$1.$2=$3"
}
batch() { # batch TOOL FILE: `ip -b` / `rdma -b` (batch); names the commands on failure
  local out
  out=$("$1" -b "$2" 2>&1) ||
    harness_error "mesh setup: \`$1 -batch\` failed: $out (commands: $(tr '\n' ';' <"$2"))"
}
file_is() { # file_is FILE TEXT: FILE's first line is TEXT
  local line
  read -r line <"$1" 2>/dev/null && [ "$line" = "$2" ]
}
wait_file() { # wait_file SECONDS FILE TEXT WHAT: until FILE's first line is TEXT
  local deadline=$((SECONDS + $1)) got=""
  until file_is "$2" "$3"; do
    if ((SECONDS >= deadline)); then
      read -r got <"$2" 2>/dev/null
      harness_error "$4: $2 is '$got', not '$3' after $1 s"
    fi
    sleep 0.05
  done
}
# 10.231.0.1 -> 0000:0000:0000:0000:0000:ffff:0ae7:0001 (sysfs's spelling of ::ffff:10.231.0.1)
gid_of() {
  local IFS=.
  # shellcheck disable=SC2086
  set -- $1
  printf -v gid '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$1" "$2" "$3" "$4"
}

setup_mesh() {
  local c e i j k table=100 iface
  [ -d /sys/module/rdma_rxe ] || harness_error "rdma_rxe is not loaded (init should have loaded it)"
  local links=/tmp/rdma-vm-links.ip addrs=/tmp/rdma-vm-addrs.ip rxe=/tmp/rdma-vm-rxe.rdma
  {
    echo "link set lo up" # TCP between the hosts (perftest's and our rendezvous) is local
    echo "rule add pref 1000 lookup local"
    echo "rule del pref 0"
    for ((c = 0; c < ncables; c++)); do
      echo "link add ${NET[${C_A[c]},${C_B[c]},${C_K[c]}]} type veth peer name ${NET[${C_B[c]},${C_A[c]},${C_K[c]}]}"
    done
  } >"$links"
  : >"$addrs"
  : >"$rxe"
  for e in "${ENDS[@]}"; do
    iface=${NET[$e]}
    {
      echo "addr add ${ADDR[$e]}/30 dev $iface"
      echo "link set $iface mtu $RDMA_VM_MTU up"
      echo "route add ${PEER_ADDR[$e]}/32 dev $iface table $table"
      echo "rule add pref 100 oif $iface lookup $table"
    } >>"$addrs"
    echo "link add ${DEV[$e]} type rxe netdev $iface" >>"$rxe"
    table=$((table + 1))
  done
  for iface in all default; do
    set_conf "$iface" accept_local 1
    set_conf "$iface" rp_filter 0
  done
  trace "veth pairs"
  batch ip "$links"
  for e in "${ENDS[@]}"; do
    set_conf "${NET[$e]}" accept_local 1
    set_conf "${NET[$e]}" rp_filter 0
  done
  trace "addresses, routes, rules"
  batch ip "$addrs"
  trace "rxe devices"
  batch rdma "$rxe"
  trace "waiting for ACTIVE ports and IPv4-mapped GIDs"
  local gid d
  for e in "${ENDS[@]}"; do
    d=${DEV[$e]}
    gid_of "${ADDR[$e]}"
    wait_file 30 "/sys/class/infiniband/$d/ports/1/state" "4: ACTIVE" "$d: port 1 is not ACTIVE"
    wait_file 30 "/sys/class/infiniband/$d/ports/1/gids/1" "$gid" \
      "$d: GID index 1 is not the IPv4-mapped GID of ${ADDR[$e]}"
  done
  rm -f "$links" "$addrs" "$rxe"
  trace "mesh ready"
}

# matrix M CABLES: sets $matrix_rows (the JSON rows of the device matrix of the first M hosts,
# with the first CABLES cables of each pair: a string cell for 1, a list otherwise) and
# $matrix_hosts (the same rows as MLX hostfile host objects).
matrix() {
  local m=$1 cables=$2 i j k cell row
  matrix_rows="" matrix_hosts=""
  for ((i = 0; i < m; i++)); do
    row=""
    for ((j = 0; j < m; j++)); do
      if ((i == j)); then
        cell=null
      elif ((cables == 1)); then
        cell="\"${DEV[$i,$j,0]}\""
      else
        cell=""
        for ((k = 0; k < cables; k++)); do cell+="${cell:+, }\"${DEV[$i,$j,$k]}\""; done
        cell="[$cell]"
      fi
      row+="${row:+, }$cell"
    done
    matrix_rows+="${matrix_rows:+,$'\n'}  [$row]"
    matrix_hosts+="${matrix_hosts:+,$'\n'}    {\"ssh\": \"h$i\", \"ips\": [\"127.0.0.1\"], \"rdma\": [$row]}"
  done
}

# The files and variables that describe the mesh (README.md, "Inside the guest").
write_descriptions() {
  local i j k c m cables="" devs addrs pd pa
  matrix "$n" "$kk"
  printf '[\n%s\n]\n' "$matrix_rows" >"$run/devices.json"
  printf '{\n  "backend": "jaccl",\n  "envs": [],\n  "hosts": [\n%s\n  ]\n}\n' "$matrix_hosts" \
    >"$run/hostfile.json"
  # Smaller worlds in the same boot: the first m hosts (devices-<m>.json), and with K > 1 also
  # one cable per pair (devices-<m>-1.json).
  for ((m = 2; m <= n; m++)); do
    matrix "$m" "$kk"
    printf '[\n%s\n]\n' "$matrix_rows" >"$run/devices-$m.json"
    if ((kk > 1)); then
      matrix "$m" 1
      printf '[\n%s\n]\n' "$matrix_rows" >"$run/devices-$m-1.json"
    fi
  done

  for ((c = 0; c < ncables; c++)); do
    local a=${C_A[c]} b=${C_B[c]} k=${C_K[c]}
    cables+="${cables:+,$'\n'}    {\"cable\": $c, \"hosts\": [$a, $b], \"index\": $k,"
    cables+=" \"devices\": [\"${DEV[$a,$b,$k]}\", \"${DEV[$b,$a,$k]}\"],"
    cables+=" \"netdevs\": [\"${NET[$a,$b,$k]}\", \"${NET[$b,$a,$k]}\"],"
    cables+=" \"addresses\": [\"${ADDR[$a,$b,$k]}\", \"${ADDR[$b,$a,$k]}\"]}"
  done
  printf '{\n  "hosts": %d,\n  "cables_per_pair": %d,\n  "gid_index": 1,\n  "cables": [\n%s\n  ]\n}\n' \
    "$n" "$kk" "$cables" >"$run/mesh.json"

  {
    echo "export RDMA_VM=1 RDMA_VM_HOSTS=$n RDMA_VM_CABLES_PER_PAIR=$kk RDMA_VM_GID_INDEX=1"
    echo "export RDMA_VM_MTU=$RDMA_VM_MTU"
    echo "export RDMA_VM_OUT=$run RDMA_VM_DEVICES_FILE=$run/devices.json"
    echo "export RDMA_VM_HOSTFILE=$run/hostfile.json RDMA_VM_MESH_FILE=$run/mesh.json"
    for ((i = 0; i < n; i++)); do
      devs="" addrs=""
      for ((j = 0; j < n; j++)); do
        ((i != j)) || continue
        pd="" pa=""
        for ((k = 0; k < kk; k++)); do
          pd+="${pd:+ }${DEV[$i,$j,$k]}" pa+="${pa:+ }${ADDR[$i,$j,$k]}"
        done
        echo "export RDMA_VM_DEV_${i}_${j}='$pd' RDMA_VM_ADDR_${i}_${j}='$pa'"
        devs+="${devs:+ }$pd" addrs+="${addrs:+ }$pa"
      done
      echo "export RDMA_VM_HOST_${i}_DEVICES='$devs' RDMA_VM_HOST_${i}_ADDRS='$addrs'"
    done
  } >"$run/mesh.env"
}

# The host's environment (env -0), minus what bash owns.
load_host_env() {
  local kv name
  while IFS= read -r -d '' kv; do
    name=${kv%%=*}
    [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
    case $name in BASH* | SHELLOPTS | EUID | UID | PPID | SHLVL | PWD | OLDPWD | _) continue ;; esac
    export "${kv?}"
  done <"$run/env"
}

seconds_between() { # seconds_between A B: B - A with one decimal, bash only
  local a=${1/./} b=${2/./}
  local d=$((10#$b - 10#$a))
  printf -v between '%d.%d' $((d / 100)) $(((d % 100) / 10))
}

trace "chroot reached"
read -r t_mesh0 _ </proc/uptime
setup_mesh
write_descriptions
read -r t_mesh1 _ </proc/uptime

mapfile -d '' argv <"$run/argv"
load_host_env
# shellcheck disable=SC1091
source "$run/mesh.env"
cd "$RDMA_VM_CWD" 2>/dev/null || cd /
"${argv[@]}" >>"$run/stdout" 2>>"$run/stderr" </dev/null
status=$?
read -r t_end _ </proc/uptime
seconds_between "$t_mesh0" "$t_mesh1"
mesh_s=$between
seconds_between "$t_mesh1" "$t_end"
printf 'boot_s=%s\nmesh_s=%s\ncommand_s=%s\n' "$t_start" "$mesh_s" "$between" >"$run/timings"
echo "$status" >"$run/exit-status.tmp" && mv "$run/exit-status.tmp" "$run/exit-status"
exit 0
