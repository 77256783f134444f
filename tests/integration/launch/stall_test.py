"""The stall warning and timeouts.total, on a 4-host lab: rank 1 spins silently (a busy loop,
like a hung collective) while the others sleep silently; with timeouts.stall 3 s, clusterctl
warns about rank 1 only, and timeouts.total ends the job (exit 4, summary says why).
Then a stopped rank: rank 1 stops itself (SIGSTOP) and rank 0 fails once it is stopped, as a
rank whose collective timed out would; with the stall sampler off (timeouts.stall 0) the look clusterctl
takes at the first failure must name rank 1 as the cause, and SIGCONT after SIGTERM must end it
within the grace."""
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
        fail(f"left behind: {lab.strays()} {lab.job_dirs()}\nlaunch's stderr:\n{r.stderr}")
    print([l for l in r.stderr.splitlines() if "warning" in l][0])

    # Rank 0 fails once rank 1 is stopped (the lab's hosts share this machine's /tmp and pids),
    # not a fixed 4 s after its own start: on a loaded machine rank 1 may start later than that,
    # and then rank 0 failed first with nothing stopped to name.
    stopped_pid = f"{lab.workdir}/stopped-rank1.pid"
    job = lab.job("stopped", command={"shell": (
        "case \"$CLUSTERCOMM_RANK\" in "
        f"1) echo $$ > {stopped_pid}.new && mv {stopped_pid}.new {stopped_pid}; kill -STOP $$ ;; "
        f"0) until p=$(cat {stopped_pid} 2>/dev/null) && "
        "grep -q '^State:[[:space:]]*T' /proc/$p/status 2>/dev/null; do sleep 0.1; done; "
        "exit 1 ;; esac; exec sleep 60")},
                  timeouts={"stall": 0, "total": 60, "grace": 5})
    r = subprocess.run([CLUSTERCTL, "launch", job], capture_output=True, text=True, timeout=60)
    if r.returncode != 4:
        fail(f"exit {r.returncode}, expected 4 (rank 0 failed)\n{r.stderr}")
    want = ("job failed: rank 1 on h2 was stopped (SIGSTOP, Ctrl-Z or a debugger) and the "
            "others waited for it; then rank 0 on h1 failed (exit 1)")
    if want not in r.stderr:
        fail(f"the summary does not name the stopped rank 1:\n{r.stderr}")
    rows = [l for l in r.stderr.splitlines() if l.lstrip().startswith("1  h2")]
    if len(rows) != 1 or "SIGTERM" not in rows[0] or "was stopped" not in rows[0]:
        fail(f"rank 1's row should say SIGTERM (SIGCONT let it take it) and was stopped: {rows}")
    if not lab.wait_no_strays(3) or lab.job_dirs():
        fail(f"left behind: {lab.strays()} {lab.job_dirs()}\nlaunch's stderr:\n{r.stderr}")
    print(want)
print("PASS")
