"""The stall warning and timeouts.total, on a 4-host lab: rank 1 spins silently (a busy loop,
like a hung collective) while the others sleep silently; with timeouts.stall 3 s, clusterctl
warns about rank 1 only, and timeouts.total ends the job (exit 4, summary says why)."""
import subprocess

from lablib import CLUSTERCTL, Lab, fail

with Lab("t") as lab:
    job = lab.job("stall", command={"shell": "if [ \"$CLUSTERCOMM_RANK\" = 1 ]; then "
                                             "exec sh -c 'while :; do :; done'; fi; exec sleep 60"},
                  timeouts={"stall": 3, "total": 14, "grace": 2})
    r = subprocess.run([CLUSTERCTL, "launch", job], capture_output=True, text=True, timeout=60)
    if r.returncode != 4:
        fail(f"exit {r.returncode}, expected 4 (timeouts.total)\n{r.stderr}")
    if "rank 1 on h2 has printed nothing for" not in r.stderr:
        fail(f"no stall warning for rank 1:\n{r.stderr}")
    for rank, host in ((0, "h1"), (2, "h3"), (3, "h4")):
        if f"rank {rank} on {host} has printed nothing" in r.stderr:
            fail(f"a stall warning for idle rank {rank}:\n{r.stderr}")
    if "longer than timeouts.total (14 s)" not in r.stderr:
        fail(f"the summary does not say timeouts.total ended it:\n{r.stderr}")
    if not lab.wait_no_strays(3) or lab.job_dirs():
        fail(f"left behind: {lab.strays()} {lab.job_dirs()}")
    print([l for l in r.stderr.splitlines() if "warning" in l][0])
print("PASS")
