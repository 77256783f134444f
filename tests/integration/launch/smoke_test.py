"""The all-reduce smoke job on a 4-host lab: 4 ranks, then 8 with ranks_per_host 2, run to
completion (exit 0), every rank's log present and rank 0's table checked; nothing left behind."""
import os

from lablib import Lab, fail, launch, PERF


def smoke(lab, ranks_per_host):
    name = f"smoke{ranks_per_host}"
    job = lab.job(name, ranks_per_host=ranks_per_host,
                  command=["./clustercomm-perf", "-o", "all_reduce", "-b", "8", "-e", "1M",
                           "-f", "4", "-n", "5", "-c", "1"],
                  env={"CLUSTERCOMM_TIMEOUT_MS": "30000"},
                  timeouts={"startup": 60, "total": 120, "grace": 5},
                  upload=[{"src": PERF, "dest": "clustercomm-perf", "mode": "0755"}])
    r = launch(job)
    world = 4 * ranks_per_host
    if r.returncode != 0:
        fail(f"{name}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    if f"job succeeded: {world} ranks exited 0" not in r.stderr:
        fail(f"{name}: no success line:\n{r.stderr}")
    lines = r.stdout.splitlines()
    table = [l for l in lines if l.startswith("[0 h1]") and "#" not in l and "float" in l]
    if len(table) != 9 or any(l.split()[10] != "0" for l in table):  # #wrong, out-of-place
        fail(f"{name}: rank 0's table is not 9 checked rows:\n{r.stdout}")
    if f"nranks {world}" not in r.stdout:
        fail(f"{name}: not {world} ranks:\n{r.stdout}")
    # Two ranks per host share memory and reach the other hosts over the cables' TCP; all_reduce
    # then runs host by host (rank 0's checked table above covers its results).
    want = "transport shm (2 ranks on this host) + tcp" if ranks_per_host == 2 else "transport tcp"
    if want not in r.stdout:
        fail(f"{name}: rank 0 does not report '{want}':\n{r.stdout}")
    left = [e for e in os.listdir("/dev/shm") if e.startswith("ccshm-")]
    if left:
        fail(f"{name}: shared-memory segments left in /dev/shm: {left}")
    logs = lab.latest(name)
    for rank in range(world):
        for stream in ("out", "err"):
            if not os.path.exists(f"{logs}/rank-{rank}.{stream}"):
                fail(f"{name}: no log {logs}/rank-{rank}.{stream}")
    with open(f"{logs}/rank-0.out") as f:
        log0 = f.read()
    if "[0 h1]" in log0 or "all_reduce" not in log0:
        fail(f"{name}: rank 0's log is not its unprefixed output:\n{log0}")
    if ranks_per_host == 2 and "[7 h4]" not in r.stdout + r.stderr and "    7  h4" not in r.stderr:
        fail(f"{name}: rank 7 is not on h4:\n{r.stderr}")
    if not lab.wait_no_strays(3):
        fail(f"{name}: processes left: {lab.strays()}")
    if lab.job_dirs():
        fail(f"{name}: job directories left: {lab.job_dirs()}")
    print(f"{name}: {world} ranks exit 0, logs present")


with Lab("s") as lab:
    smoke(lab, 1)
    smoke(lab, 2)
print("PASS")
