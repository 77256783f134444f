"""runtime: mpi on a 4-host lab: templates/mpi.yaml (a real Open MPI program, MPI_Allreduce
across the 4 namespace hosts) run by clusterctl, which writes the hostfile and runs mpirun here
with the lab's ssh options:
  - 4 ranks, then 8 with ranks_per_host 2: exit 0, every rank's log present, rank 0's table
    in its log, each rank on its host;
  - a rank exiting 5 before MPI_Init: exit 4, the summary names it with "exit 5", the other
    ranks ended;
afterwards no process and no job directory is left on any host (nor mpirun's here)."""
import os
import sys

import yaml

from lablib import Lab, fail, launch

MPI_PERF = sys.argv[1]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))


def template():
    with open(os.path.join(ROOT, "templates", "mpi.yaml")) as f:
        job = yaml.safe_load(f)
    del job["cluster"]  # lab.job names this test's lab
    job["upload"][0]["src"] = MPI_PERF
    job["command"] = ["./mpi-allreduce-perf", "-b", "8", "-e", "64K", "-f", "8"]
    job["timeouts"].update({"total": 120, "grace": 3})
    return job


def run_ok(lab, ranks_per_host):
    name = f"mpi{ranks_per_host}"
    fields = template()
    fields["ranks_per_host"] = ranks_per_host
    fields["command"] = ["sh", "-c", "echo on $(uname -n); exec \"$@\"", "rank", *fields["command"]]
    job = lab.job(name, **{k: v for k, v in fields.items() if k not in ("name", "logs")})
    r = launch(job)
    world = 4 * ranks_per_host
    if r.returncode != 0:
        fail(f"{name}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    if f"job succeeded: {world} ranks exited 0" not in r.stderr:
        fail(f"{name}: no success line:\n{r.stderr}")
    logs = lab.latest(name)
    for rank in range(world):
        for stream in ("out", "err"):
            if not os.path.exists(f"{logs}/rank-{rank}.{stream}"):
                fail(f"{name}: no log {logs}/rank-{rank}.{stream}")
        with open(f"{logs}/rank-{rank}.out") as f:
            first = f.readline().strip()
        host = f"h{rank // ranks_per_host + 1}"
        if first != f"on {host}":
            fail(f"{name}: rank {rank} ran on '{first}', not {host}")
        if f"[{rank} {host}] on {host}" not in r.stdout:
            fail(f"{name}: rank {rank}'s line is not prefixed [{rank} {host}]:\n{r.stdout}")
    with open(f"{logs}/rank-0.out") as f:
        rows = [l.split() for l in f.read().splitlines()[1:]]
    if [row[0] for row in rows] != ["8", "64", "512", "4096", "32768"]:
        fail(f"{name}: rank 0's log is not MPI_Allreduce's table:\n{rows}")
    lab.check_clean(name)
    print(f"{name}: {world} MPI ranks exit 0, logs present")


def run_failing(lab):
    name = "mpifail"
    fields = template()
    fields["command"] = {"shell": "if [ \"$OMPI_COMM_WORLD_RANK\" = 2 ]; then sleep 1; exit 5; "
                                  "fi; exec ./mpi-allreduce-perf -b 8 -e 8"}
    job = lab.job(name, **{k: v for k, v in fields.items() if k not in ("name", "logs")})
    r = launch(job)
    if r.returncode != 4:
        fail(f"{name}: exit {r.returncode}, not 4\n{r.stdout}\n{r.stderr}")
    if "rank 2 on h3 failed (exit 5)" not in r.stderr:
        fail(f"{name}: the summary does not name rank 2 (exit 5):\n{r.stderr}")
    lab.check_clean(name)
    print(f"{name}: exit 4, rank 2 named")


with Lab("m") as lab:
    run_ok(lab, 1)
    run_ok(lab, 2)
    run_failing(lab)
print("PASS")
