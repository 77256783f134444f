"""An MLX hostfile job on a 4-host lab with one cable down, and a hostfile with an address no host
has. Before: the down cable was called a stale hostfile ("ips[0] = ... is not an address of h2 on
a port cabled to its left neighbour") with a rewrite that silently changed the rank order, and an
`ips` entry of no host passed (a file without "backend") until MLX died on "Couldn't bind
socket". Now: the cable is named with its fix, as for a cluster state, nothing starts, and no
rewrite is suggested; `hostfile -o` over the file says the rank order changed and why; the
foreign address is named before anything starts."""
import json
import os
import re
import subprocess

from lablib import CLUSTERCTL, Lab, fail


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

        # Writing the file again over it: the new order is said, with the cable down.
        r = run("--lab", lab.name, "hostfile", "--hostfile", hosts, "--format", "mlx-ring",
                "-o", hosts)
        if r.returncode != 0:
            fail(f"hostfile over {hosts}: exit {r.returncode}\n{r.stderr}")
        with open(hosts) as f:
            now = [h["ssh"] for h in json.load(f)["hosts"]]
        if now != order and (f"warning: rank order changed: {hosts} was {','.join(order)}, now "
                             f"{','.join(now)}" not in r.stderr or
                             f"h2 {port}: administratively down" not in r.stderr):
            fail(f"rank order {order} -> {now} not said, or not why:\n{r.stderr}")
        print(f"hostfile -o over it: {','.join(order)} -> {','.join(now)}, said with the cable")
    finally:
        subprocess.run(["ip", "-n", lab.netns("h2"), "link", "set", "dev", port, "up"],
                       check=True)

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
