"""A job seen from another terminal, on a 4-host lab: `launch --detach` prints the job id and
returns at once; `jobs` lists it running; `logs JOB --rank R` shows that rank's lines and
`logs -f` follows (and exits 130 with the job); `stop JOB` ends it as Ctrl-C would (state interrupted, exit code 130 in the
record, the summary in the log directory); nothing is left on the hosts. Two runs of one job
at once: `stop NAME` and `logs NAME` refuse the name (exit 2), naming both run ids; each run's id
stops it."""
import json
import subprocess
import time

from lablib import CLUSTERCTL, Lab, fail


def cc(*args, timeout=60):
    return subprocess.run([CLUSTERCTL, *args], capture_output=True, text=True, timeout=timeout)


with Lab("j") as lab:
    job = lab.job("bg", command={"shell": "i=0; while :; do echo \"tick $CLUSTERCOMM_RANK $i\"; "
                                          "i=$((i+1)); sleep 0.2; done"},
                  timeouts={"grace": 3})
    t0 = time.time()
    r = cc("launch", "--detach", job)
    if r.returncode != 0:
        fail(f"launch --detach: exit {r.returncode}\n{r.stderr}")
    job_id = r.stdout.strip()
    if time.time() - t0 > 5 or not job_id.startswith(f"{lab.name}-bg-"):
        fail(f"launch --detach did not return the id at once: {r.stdout!r}")
    listed = {j["id"]: j for j in json.loads(cc("--json", "jobs").stdout)}
    if listed.get(job_id, {}).get("state") != "running":
        fail(f"jobs does not list {job_id} running: {listed}")
    # Until ranks 2 and 3 have printed: the ranks start after `launch --detach` returns, how
    # long after depends on the machine (a fixed 1.5 s found rank 2's log still empty).
    def rank_lines(rank):
        return cc("logs", job_id, "--rank", str(rank)).stdout.splitlines()
    deadline = time.time() + 60
    while time.time() < deadline and not (rank_lines(2) and rank_lines(3)):
        time.sleep(0.2)
    logs = rank_lines(2)
    if not logs or not all(l.startswith("tick 2 ") for l in logs):
        fail(f"logs --rank 2: {logs}")
    follow = subprocess.Popen([CLUSTERCTL, "logs", job_id, "-f"], stdout=subprocess.PIPE,
                              text=True)
    # `logs -f` shows what the logs hold from their start, whether it begins before or after
    # the stop: rank 3's lines are there either way.
    r = cc("stop", job_id)
    if r.returncode != 0:
        fail(f"stop: exit {r.returncode}\n{r.stderr}")
    out, _ = follow.communicate(timeout=20)
    # `logs -f` exits as the job ended: 130 for a job stopped as Ctrl-C would (README, logs).
    if follow.returncode != 130 or "[3 h4] tick 3 " not in out:
        fail(f"logs -f: exit {follow.returncode}, output:\n{out}")
    listed = {j["id"]: j for j in json.loads(cc("--json", "jobs").stdout)}
    if listed[job_id]["state"] != "interrupted" or listed[job_id]["exit_code"] != 130:
        fail(f"after stop: {listed[job_id]}")
    with open(f"{lab.latest('bg')}/summary.txt") as f:
        if "job interrupted" not in f.read():
            fail("no summary in the log directory")
    if not lab.wait_no_strays(3) or lab.job_dirs():
        fail(f"left behind: {lab.strays()} {lab.job_dirs()}")
    print(f"detach, jobs, logs --rank, logs -f, stop: job {job_id} ended, nothing left")

    # Two runs of one job at once: its name no longer says which run `stop` or `logs` means;
    # both refuse it (exit 2) naming both run ids and how to give one (stop stopped one of
    # them, by the random part of their ids when they started in the same second), and stop
    # nothing. Each run's id still names it.
    twice = lab.job("twice", command={"shell": "while :; do sleep 0.2; done"},
                    timeouts={"grace": 3})
    ids = [cc("launch", "--detach", twice).stdout.strip() for _ in range(2)]
    if not all(i.startswith(f"{lab.name}-twice-") for i in ids):
        fail(f"launch --detach twice: {ids}")
    for cmd in ("stop", "logs"):
        r = cc(cmd, f"{lab.name}-twice")
        if (r.returncode != 2 or f"2 runs of job '{lab.name}-twice' are running" not in r.stderr
                or not all(i in r.stderr for i in ids)
                or f"`clusterctl {cmd} {ids[1]}`" not in r.stderr):
            fail(f"{cmd} of a name two running runs share: exit {r.returncode}\n{r.stderr}")
    listed = {j["id"]: j for j in json.loads(cc("--json", "jobs").stdout)}
    if [listed[i]["state"] for i in ids] != ["running", "running"]:
        fail(f"stop NAME of two runs stopped one: {[listed[i] for i in ids]}")
    for i in ids:
        r = cc("stop", i)
        if r.returncode != 0:
            fail(f"stop {i}: exit {r.returncode}\n{r.stderr}")
    if not lab.wait_no_strays(3) or lab.job_dirs():
        fail(f"left behind: {lab.strays()} {lab.job_dirs()}")
    print(f"two runs of one name: stop and logs of the name refused, naming {ids}; each stopped "
          "by its id")
print("PASS")
