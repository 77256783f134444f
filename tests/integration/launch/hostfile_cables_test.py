"""An MLX hostfile job on a 4-host lab with one cable down, and a hostfile with an address no host
has. Before: the down cable was called a stale hostfile ("ips[0] = ... is not an address of h2 on
a port cabled to its left neighbour") with a rewrite that silently changed the rank order, and an
`ips` entry of no host passed (a file without "backend") until MLX died on "Couldn't bind
socket". Now: the cable is named with its fix, as for a cluster state, nothing starts, and no
rewrite is suggested; `hostfile -o` over the file says the rank order changed and why; the
foreign address is named before anything starts.

Also on that lab: libclustercomm ranks (clustercomm-perf) on the ring hostfile, under runtime
clustercomm and mlx-ring, get rank 0's management address as their coordinator (before: rank
0's ips[0], its cable end, which ranks 1-2 had no route to: "Network is unreachable", then 30 s
waiting, exit 4) and run to exit 0 under both (under mlx-ring they listen on the ring's cable
ends, which only ring neighbours reach, and libclustercomm connects every pair: ranks two hosts
apart connect over the management network; before, that failed at once, "Network is
unreachable"); a rank given a coordinator it has no route to fails at once naming it, not after
its timeout; an MPI hostfile naming a host twice is answered with
suggestions that run as printed; a system python3 without clustercomm gets a "to fix:" line."""
import json
import os
import re
import shlex
import shutil
import subprocess
import time

from lablib import CLUSTERCTL, Lab, PERF, fail


def run(*args):
    return subprocess.run([CLUSTERCTL, *args], capture_output=True, text=True, timeout=180)


with Lab("hc") as lab:
    state = lab.addressed_state()
    hosts = os.path.join(lab.workdir, "hosts.json")
    r = run("--lab", lab.name, "hostfile", state, "--format", "mlx-ring", "-o", hosts)
    if r.returncode != 0:
        fail(f"hostfile: exit {r.returncode}\n{r.stderr}")
    with open(hosts) as f:
        written = json.load(f)
    order = [h["ssh"] for h in written["hosts"]]
    job = lab.job("ring", cluster=f"hostfile:{hosts}", runtime="mlx-ring",
                  command={"shell": "echo RAN"}, timeouts={"startup": 30, "grace": 5})

    # h2's cable to its left neighbour in the ring, set down on h2.
    left = order[order.index("h2") - 1]
    port = None
    for c in json.load(open(state))["cables"]:
        ends = {c["a"]["host"]: c["a"]["interface"], c["b"]["host"]: c["b"]["interface"]}
        if set(ends) == {"h2", left}:
            port = ends["h2"]
            break
    if port is None:
        fail(f"no cable h2 - {left} in {state}")
    subprocess.run(["ip", "-n", lab.netns("h2"), "link", "set", "dev", port, "down"], check=True)
    try:
        r = run("--lab", lab.name, "launch", job)
        if r.returncode != 1 or "RAN" in r.stdout or lab.job_dirs():
            fail(f"h2 {port} down: exit {r.returncode} (expected 1, nothing started)\n"
                 f"{r.stdout}\n{r.stderr}")
        if not re.search(rf"cable (h2 {port} - {left} tb\d|{left} tb\d - h2 {port}) is down: .*"
                         rf"h2 {port}: administratively down.*; fix: bring the port that is down "
                         rf"up: on h2 `sudo ip link set dev {port} up`", r.stderr) or \
                "hostfile --hostfile" in r.stderr or "does not match" in r.stderr:
            fail(f"h2 {port} down: not named as a down cable with its fix:\n{r.stderr}")
        print(f"h2 {port} down: launch named the cable and its fix, suggested no new hostfile")

        # Writing it again over a copy (over the file it reads is refused: README, "Files"):
        # the new order is said, with the cable down.
        again = os.path.join(lab.workdir, "hosts-again.json")
        shutil.copyfile(hosts, again)
        r = run("--lab", lab.name, "hostfile", "--hostfile", hosts, "--format", "mlx-ring",
                "-o", again)
        if r.returncode != 0:
            fail(f"hostfile over {again}: exit {r.returncode}\n{r.stderr}")
        with open(again) as f:
            now = [h["ssh"] for h in json.load(f)["hosts"]]
        if now != order and (f"warning: rank order changed: {again} was {','.join(order)}, now "
                             f"{','.join(now)}" not in r.stderr or
                             f"h2 {port}: administratively down" not in r.stderr):
            fail(f"rank order {order} -> {now} not said, or not why:\n{r.stderr}")
        print(f"hostfile -o over it: {','.join(order)} -> {','.join(now)}, said with the cable")
    finally:
        subprocess.run(["ip", "-n", lab.netns("h2"), "link", "set", "dev", port, "up"],
                       check=True)

    # libclustercomm ranks on a ring hostfile: the coordinator is rank 0's management address.
    ring = os.path.join(lab.workdir, "ring.json")
    r = run("--lab", lab.name, "hostfile", state, "--format", "mlx-ring", "-o", ring)
    if r.returncode != 0:
        fail(f"hostfile {ring}: exit {r.returncode}\n{r.stderr}")
    with open(ring) as f:
        ring_hosts = json.load(f)["hosts"]
    first = ring_hosts[0]["ssh"]
    mgmt = {h.get("host"): h.get("management_address") for h in json.load(open(state))["hosts"]}
    perf = ("exec ./clustercomm-perf -o all_reduce -b 64K -e 64K -n 2 -c 1")
    show = "echo \"COORD=$CLUSTERCOMM_COORDINATOR\"; "
    for runtime in ("clustercomm", "mlx-ring"):
        mine = lab.job(f"ring-{runtime}", cluster=f"hostfile:{ring}", runtime=runtime,
                      command={"shell": show + perf}, env={"CLUSTERCOMM_TIMEOUT_MS": "30000"},
                      timeouts={"startup": 60, "total": 120, "grace": 5},
                      upload=[{"src": PERF, "dest": "clustercomm-perf", "mode": "0755"}])
        t0 = time.monotonic()
        r = run("--lab", lab.name, "launch", mine)
        took = time.monotonic() - t0
        coords = set(re.findall(r"^\[\d+ h\d\] COORD=(\S+)$", r.stdout, re.M))
        if coords != {f"{mgmt[first]}:32323"}:
            fail(f"runtime {runtime}: coordinators {coords}, want {mgmt[first]}:32323 (rank 0 "
                 f"{first}'s management address, not its cable end {ring_hosts[0]['ips']})\n"
                 f"{r.stdout}\n{r.stderr}")
        # Under mlx-ring every rank listens on its MLX_HOSTFILE addresses (cable ends), and
        # libclustercomm connects every pair of ranks, where MLX's ring connects neighbours
        # only: two hosts apart there is no route to them, so those pairs connect over the
        # management network (before: "Network is unreachable", exit 1).
        if r.returncode != 0 or "unreachable" in r.stdout + r.stderr:
            fail(f"runtime {runtime} on {ring}: exit {r.returncode} after {took:.1f} s\n"
                 f"{r.stdout}\n{r.stderr}")
        print(f"runtime {runtime} on the ring hostfile: coordinator {mgmt[first]}:32323, exit "
              f"{r.returncode} after {took:.1f} s")

    # A rank with no route to its coordinator (the ring file's own rank 0 address, which
    # libclustercomm takes from MLX_HOSTFILE without CLUSTERCOMM_COORDINATOR, as under
    # mlx.launch, which sets neither variable) fails at once.
    cable_end = ring_hosts[0]["ips"][0]
    mine = lab.job("ring-noroute", cluster=f"hostfile:{ring}", runtime="mlx-ring",
                  command={"shell": "unset CLUSTERCOMM_COORDINATOR CLUSTERCOMM_COORDINATOR_FROM; " +
                                    perf},
                  env={"CLUSTERCOMM_TIMEOUT_MS": "60000"},
                  timeouts={"startup": 90, "total": 120, "grace": 5},
                  upload=[{"src": PERF, "dest": "clustercomm-perf", "mode": "0755"}])
    t0 = time.monotonic()
    r = run("--lab", lab.name, "launch", mine)
    took = time.monotonic() - t0
    said = re.search(rf"rank (\d): could not connect to the coordinator \(rank 0\) at "
                     rf"{re.escape(cable_end)}:32323 \(Network is unreachable\).*it came from "
                     rf"MLX_HOSTFILE", r.stdout + r.stderr)
    if r.returncode == 0 or not said or took > 40:
        fail(f"no route to {cable_end}: exit {r.returncode} after {took:.1f} s (expected a "
             f"failure at once, naming the rank and address)\n{r.stdout}\n{r.stderr}")
    print(f"no route to the coordinator {cable_end}: rank {said.group(1)} said so, exit "
          f"{r.returncode} after {took:.1f} s (timeout 60 s)")

    # An MPI hostfile naming each host twice: the suggestions run as printed.
    mpidup = os.path.join(lab.workdir, "mpidup.txt")
    with open(mpidup, "w") as f:
        f.write("h1 slots=1\nh2 slots=1\nh1 slots=1\nh2 slots=1\n")
    mine = lab.job("mpidup", cluster=f"hostfile:{mpidup}", command={"shell": "echo RAN"})
    r = run("--lab", lab.name, "launch", mine)
    cmd = re.search(r"`(clusterctl --lab \S+ hostfile --hosts \S+ --format )mlx-jaccl( -o "
                    r"\S+)` \(--format mlx-ring for TCP\)", r.stderr)
    hosts_yaml = re.search(r"`hosts: \[([^\]]*)\]`", r.stderr)
    per_host = re.search(r"`ranks_per_host: (\d+)`", r.stderr)
    if r.returncode != 2 or not cmd or not hosts_yaml or not per_host or \
            f"h1 is named on 2 lines ({mpidup}:1, {mpidup}:3)" not in r.stderr:
        fail(f"MPI hostfile with h1, h2 twice: exit {r.returncode}, suggestions not found\n"
             f"{r.stderr}")
    argv = shlex.split(cmd.group(1) + "mlx-ring" + cmd.group(2))
    out = run(*argv[1:])
    if out.returncode != 0:
        fail(f"suggested `{' '.join(argv)}`: exit {out.returncode}\n{out.stderr}")
    mine = lab.job("mpidup-fixed", hosts=[h.strip() for h in hosts_yaml.group(1).split(",")],
                  ranks_per_host=int(per_host.group(1)), command={"shell": "echo RAN"})
    with open(mine) as f:
        fixed = json.load(f)
    del fixed["cluster"]  # the suggestion is `hosts:` instead of it
    with open(mine, "w") as f:
        json.dump(fixed, f)
    out = run("--lab", lab.name, "launch", mine)
    if out.returncode != 0 or out.stdout.count("RAN") != 4:
        fail(f"suggested hosts: [{hosts_yaml.group(1)}], ranks_per_host: {per_host.group(1)}: "
             f"exit {out.returncode}\n{out.stdout}\n{out.stderr}")
    print("MPI hostfile naming hosts twice: both suggestions ran as printed")

    # A system python3 without clustercomm: the summary says which interpreter and the fix.
    mine = lab.job("nomodule", command=["python3", "-c", "import clustercomm"])
    r = run("--lab", lab.name, "launch", mine)
    if r.returncode != 4 or not re.search(
            r"to fix: on h1 \(rank 0\), .*: no module named 'clustercomm': the interpreter that "
            r"ran is python3 \(as the rank's PATH on the host found it\), .*`python3 -m venv "
            r"/opt/clustercomm/venv && /opt/clustercomm/venv/bin/pip install ./python`",
            r.stdout + r.stderr):
        fail(f"python3 without clustercomm: exit {r.returncode}, no fix named\n{r.stdout}\n"
             f"{r.stderr}")
    print("python3 without clustercomm: the summary names the interpreter and the fix")

    # A hand-written file (no "backend") with an address of no host: named, nothing started.
    foreign = {"hosts": [dict(h) for h in written["hosts"]]}
    foreign["hosts"][2]["ips"] = ["10.162.148.33"]
    with open(hosts, "w") as f:
        json.dump(foreign, f)
    r = run("--lab", lab.name, "launch", job)
    name = foreign["hosts"][2]["ssh"]
    if r.returncode != 1 or "RAN" in r.stdout or lab.job_dirs() or \
            f"{hosts}: hosts[2] ({name}): ips[0] = 10.162.148.33 is not an address of {name} " \
            f"(its addresses: " not in r.stderr:
        fail(f"foreign address: exit {r.returncode} (expected 1, named)\n{r.stdout}\n{r.stderr}")
    print("an ips entry of no host: named before anything started")
print("PASS")
