"""clustercomm over the direct cables: on a 4-host lab after `network apply`, a job whose cluster
is the discovered cluster.json gives every rank CLUSTERCOMM_PEER_ADDRS ("MY_ADDR>PEER_ADDR" on
the pair's cable, empty for itself), the all-reduce runs to exit 0, and the bytes go over the
cable interfaces (tb*), not the management network; a cable that is down is refused before any
rank starts; and a cable cut mid-job (h2 tb2 set down while the ranks loop on all_reduce) is
named at once and ends the job after timeouts.cable (exit 4), the summary's reason the cable,
where before the ranks waited out libclustercomm's timeout and the summary blamed a rank."""
import json
import re
import subprocess

from lablib import CLUSTERCTL, Lab, PERF, cut_cable_while, fail


def cable_bytes(lab):
    """Bytes sent over every host's cable interfaces."""
    total = 0
    for h in lab.hosts:
        out = subprocess.run(["ip", "-n", lab.netns(h), "-j", "-s", "link", "show"],
                             capture_output=True, text=True, check=True).stdout
        for link in json.loads(out):
            if link["ifname"].startswith("tb"):
                total += link["stats64"]["tx"]["bytes"]
    return total


with Lab("c") as lab:
    state = lab.addressed_state()
    job = lab.job("cables", cluster=state,
                  command={"shell": "echo \"PEERS=$CLUSTERCOMM_PEER_ADDRS\"; exec ./clustercomm-perf "
                                    "-o all_reduce -b 1M -e 4M -f 4 -n 5 -c 1"},
                  env={"CLUSTERCOMM_TIMEOUT_MS": "30000"},
                  timeouts={"startup": 60, "total": 120, "grace": 5},
                  upload=[{"src": PERF, "dest": "clustercomm-perf", "mode": "0755"}])
    before = cable_bytes(lab)
    r = subprocess.run([CLUSTERCTL, "--lab", lab.name, "launch", job], capture_output=True,
                       text=True, timeout=180)
    sent = cable_bytes(lab) - before
    if r.returncode != 0:
        fail(f"exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    for rank in range(4):
        m = re.search(rf"^\[{rank} h{rank + 1}\] PEERS=(.*)$", r.stdout, re.M)
        if not m:
            fail(f"rank {rank} printed no PEERS line:\n{r.stdout}")
        entries = m.group(1).split(",")
        if len(entries) != 4 or entries[rank] != "":
            fail(f"rank {rank}: PEERS is not one entry per rank, its own empty: {entries}")
        for peer, e in enumerate(entries):
            if peer != rank and not re.fullmatch(r"\d+\.\d+\.\d+\.\d+>\d+\.\d+\.\d+\.\d+", e):
                fail(f"rank {rank}: entry for rank {peer} is not MY_ADDR>PEER_ADDR: {e!r}")
    # 4 ranks x (1 + 4) MiB buffers x 7 runs (warm-up and 5 timed): well over 20 MB on the cables.
    if sent < 20_000_000:
        fail(f"only {sent} bytes went over the cable interfaces:\n{r.stdout}")
    print(f"4 ranks over the cables: PEERS set, exit 0, {sent} bytes on tb*")

    # One cable down (h2's tb3, set down on the host), no preflight: launch checks the cables the
    # ranks route over before it starts any, and refuses at once (exit 1, a check failed) naming
    # the cable, the host and port, and the command that brings it up. Before, the ranks waited
    # 30 s for their peer and exited 4 blaming a firewall.
    subprocess.run(["ip", "-n", lab.netns("h2"), "link", "set", "dev", "tb3", "down"], check=True)
    try:
        r = subprocess.run([CLUSTERCTL, "--lab", lab.name, "launch", job], capture_output=True,
                           text=True, timeout=180)
    finally:
        subprocess.run(["ip", "-n", lab.netns("h2"), "link", "set", "dev", "tb3", "up"],
                       check=True)
    if r.returncode != 1 or "PEERS=" in r.stdout or lab.job_dirs():
        fail(f"h2 tb3 down: exit {r.returncode} (expected 1, nothing started)\n{r.stdout}\n"
             f"{r.stderr}")
    if not re.search(r"^clusterctl launch: cable (h2 tb3 - h4 tb\d|h4 tb\d - h2 tb3) is down: "
                     r"(h4 tb\d: no carrier; )?h2 tb3: administratively down(; h4 tb\d: no carrier)?; "
                     r"fix: bring the port that is down up: on h2 `sudo ip link set dev tb3 up`",
                     r.stderr, re.M) or "nothing was started" not in r.stderr:
        fail(f"h2 tb3 down: the cable, port and fix are not named:\n{r.stderr}")
    print("h2 tb3 down: launch refused before starting a rank, naming the cable and the fix")

    # A cable cut mid-job: the ranks loop on all_reduce over the cables; h2 tb2 is set down once
    # every rank runs. libclustercomm's timeout (60 s here) would end the job later, blaming a
    # rank; the cable watch names the cable within a look or two (2 s each) and ends the job
    # after timeouts.cable (8 s).
    loop = lab.job("cut", cluster=state,
                   # Runs until the cut ends it: one clustercomm-perf run is 256 calls of
                   # 1 MiB (its budget, bench/sizes.h), under 2 s on a quiet machine.
                   command={"shell": "echo ready; while ./clustercomm-perf -o all_reduce "
                                     "-b 1M -e 1M -n 100000 -c 1; do :; done; exit 1"},
                   env={"CLUSTERCOMM_TIMEOUT_MS": "60000"},
                   timeouts={"startup": 60, "total": 120, "grace": 3, "cable": 8},
                   upload=[{"src": PERF, "dest": "clustercomm-perf", "mode": "0755"}])
    p = subprocess.Popen([CLUSTERCTL, "--lab", lab.name, "launch", loop], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time_to_run = (4, lambda line: line.rstrip().endswith("] ready"))
    # settle: the collectives run when the cable goes
    _, err, took = cut_cable_while(p, lab, "h2", "tb2", time_to_run, "cable cut", settle=2)
    cable = r"cable (h2 tb2 - h\d tb\d|h\d tb\d - h2 tb2) is down: [^\n]*h2 tb2: administratively down"
    if p.returncode != 4:
        fail(f"cable cut: exit {p.returncode} (expected 4)\n{err}")
    if not re.search(rf"^clusterctl: {cable}[^\n]*\(a cable the ranks use: they are ended if it "
                     r"is still down in 8 s, timeouts.cable\)$", err, re.M):
        fail(f"cable cut: the cable was not named as it went down:\n{err}")
    if not re.search(rf"^job failed: {cable}[^\n]*\(down for \d+ s", err, re.M):
        fail(f"cable cut: the summary's reason is not the cable:\n{err}")
    if took > 8 + 2 * 2 + 3 + 15:  # timeouts.cable, two looks, grace, slack for a loaded machine
        fail(f"cable cut: the job took {took:.0f} s to end after the cut\n{err}")
    print(f"h2 tb2 cut mid-job: named, the job ended {took:.0f} s later (exit 4) for the cable")
print("PASS")
