"""runtime: mpi on a 4-host lab: templates/mpi.yaml (a real Open MPI program, MPI_Allreduce
across the 4 namespace hosts) run by clusterctl, which writes the hostfile and runs mpirun here
with the lab's ssh options:
  - 4 ranks, then 8 with ranks_per_host 2: exit 0, every rank's log present, rank 0's table
    in its log, each rank on its host;
  - a rank exiting 5 before MPI_Init: exit 4, the summary names it with "exit 5", the other
    ranks ended;
  - a rank exiting 7 while the others sleep: the others are ended by mpirun (Open MPI ends the
    job), and the summary says so, each with its real run time (by its host's clock, not when
    mpirun's output came: a trial showed 0.0 s for ranks that had run);
  - a host cut off mid-job (`ip link set en0 down` in h3's namespace): mpirun never notices,
    the hosts' watches do: exit 4 naming h3 as lost, within detection + grace + 8 s (it hung
    until killed), no mpirun warning quoted as a rank's why, h3's rank and job directory gone;
afterwards no process and no job directory is left on any host (nor mpirun's here)."""
import os
import re
import subprocess
import sys
import threading
import time

import yaml

from lablib import CLUSTERCTL, Lab, ended_after_cut, fail, launch

GRACE = 3
HEARTBEAT_TIMEOUT = 10  # launch/wrapper.h kHeartbeatTimeout
ONLY = os.environ.get("LAUNCH_MPI_ONLY", "")  # run one case while developing: "ended", "lost"
ROW = re.compile(r"^\s+(\d+)\s+(h\d+)\s+(.+?)\s+(\d+\.\d) s(?:\s+(.*))?$")

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


def summary_rows(err):
    """rank -> (status, seconds, note) from the summary table."""
    rows = {}
    for line in err.splitlines():
        m = ROW.match(line)
        if m:
            rows[int(m.group(1))] = (m.group(3).strip(), float(m.group(4)), m.group(5) or "")
    return rows


def run_ended_by_mpirun(lab):
    name = "mpiend"
    job = lab.job(name, runtime="mpi",
                  command={"shell": "if [ \"$OMPI_COMM_WORLD_RANK\" = 2 ]; then sleep 2; exit 7; "
                                    "fi; sleep 30"},
                  timeouts={"grace": GRACE, "total": 60})
    r = launch(job)
    if r.returncode != 4:
        fail(f"{name}: exit {r.returncode}, not 4\n{r.stdout}\n{r.stderr}")
    if "rank 2 on h3 failed (exit 7)" not in r.stderr:
        fail(f"{name}: the summary does not name rank 2 (exit 7):\n{r.stderr}")
    rows = summary_rows(r.stderr)
    if sorted(rows) != [0, 1, 2, 3]:
        fail(f"{name}: no summary row for every rank: {rows}\n{r.stderr}")
    first = rows[2][1]
    for rank in (0, 1, 3):
        status, seconds, note = rows[rank]
        # README: when a rank fails, Open MPI ends the others itself.
        if status != "SIGTERM" or note != "ended by mpirun":
            fail(f"{name}: rank {rank} is '{status}' '{note}', not SIGTERM ended by mpirun:\n"
                 f"{r.stderr}")
        # It ran at least as long as rank 2 (2 s), and was ended soon after (Open MPI takes
        # about 1 s), by its host's clock (a trial's summary said 0.0 s).
        if seconds < 1.5 or seconds > first + 2:
            fail(f"{name}: rank {rank} ran {seconds} s by the summary, rank 2 {first} s: not "
                 f"its run time:\n{r.stderr}")
    lab.check_clean(name)
    print(f"{name}: exit 4, the others ended by mpirun, after {[rows[k][1] for k in rows]} s")


def run_host_lost(lab):
    name = "mpilost"
    job = lab.job(name, runtime="mpi",
                  command={"shell": "echo r$OMPI_COMM_WORLD_RANK; sleep 30"},
                  timeouts={"grace": GRACE, "total": 60})
    p = subprocess.Popen([CLUSTERCTL, "launch", job], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    lines = []  # (time, line) of clusterctl's stderr as it arrives
    reader = threading.Thread(target=lambda: lines.extend((time.time(), l) for l in p.stderr),
                              daemon=True)
    reader.start()
    seen = ""
    deadline = time.time() + 60
    while time.time() < deadline and not all(f"] r{k}" in seen for k in range(4)):
        line = p.stdout.readline()
        if not line:
            break
        seen += line
    if not all(f"] r{k}" in seen for k in range(4)):
        p.kill()
        fail(f"{name}: the 4 ranks did not start: {seen}")
    t0 = time.time()
    subprocess.run(["ip", "netns", "exec", lab.netns("h3"), "ip", "link", "set", "en0", "down"],
                   check=True)
    # The ranks sleep 30 s: a job that ends before that was ended by the loss of h3.
    try:
        p.wait(timeout=HEARTBEAT_TIMEOUT + GRACE + 8 + 5)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        reader.join(timeout=10)
        fail(f"{name}: clusterctl still running {time.time() - t0:.0f} s after h3 was cut off:\n"
             + "".join(l for _, l in lines))
    total = time.time() - t0
    reader.join(timeout=10)
    detection, err = ended_after_cut(name, lines, t0, total, GRACE)
    if p.returncode != 4:
        fail(f"{name}: exit {p.returncode}, expected 4\n{err}")
    if "rank 2 on h3 failed (connection lost: host h3 lost" not in err:
        fail(f"{name}: the summary does not name h3 as lost:\n{err}")
    # mpirun's own warnings are shown as its lines, never as a rank's why.
    quoted = [l for l in err.splitlines()
              if "Warning" in l and not l.startswith("clusterctl: mpirun:")]
    if quoted:
        fail(f"{name}: an mpirun warning quoted outside mpirun's lines: {quoted}\n{err}")
    # h3's watch ends its rank and Open MPI's daemon there, and removes its job directory (its
    # watchdog), as under the other runtimes.
    if not lab.wait_no_strays(HEARTBEAT_TIMEOUT):
        fail(f"{name}: processes left on the hosts: {lab.strays()}\n{err}")
    lab.check_clean(name)
    print(f"{name}: h3 known lost after {detection:.1f} s, clusterctl exit 4 after {total:.1f} s, "
          f"nothing left")


if ONLY in ("", "ended"):
    with Lab("m") as lab:
        if not ONLY:
            run_ok(lab, 1)
            run_ok(lab, 2)
            run_failing(lab)
        run_ended_by_mpirun(lab)
if ONLY in ("", "lost"):
    with Lab("l") as lab:  # a fresh lab: h3's link stays down
        run_host_lost(lab)
print("PASS")
