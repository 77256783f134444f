"""preflight before a launch (and the launch's own checks before it starts ranks):
  - verify-mesh: on a full-mesh 4-host lab the job runs (exit 0); on a lab missing the h1-h2
    cable launch stops before starting anything (exit 1, the missing pair named, no rank
    output, no job directory);
  - health-quick (`clusterctl health --quick`): before `network apply` the cables lack their
    planned addresses, so it fails and nothing starts (exit 1, the report shown); after
    `network apply` it passes and the job runs;
  - a coordinator port held on rank 0's host stops the launch before any rank starts (exit 1,
    HOST:PORT and `coordinator_port:` named);
  - a long reason every rank shares is printed once by clusterctl (the summary), besides the
    stderr line of each rank that ran."""
import re
import subprocess

from lablib import CLUSTERCTL, Lab, fail


def run(lab, check="verify-mesh"):
    job = lab.job("pre", command={"shell": "echo started"}, preflight=[check])
    return subprocess.run([CLUSTERCTL, "launch", job], capture_output=True, text=True,
                          timeout=120)


with Lab("p") as lab:
    r = run(lab)
    if r.returncode != 0 or r.stdout.count("started") != 4:
        fail(f"full mesh: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    print("full mesh: preflight passed, 4 ranks ran")

    r = run(lab, "health-quick")
    if r.returncode != 1 or "started" in r.stdout:
        fail(f"health-quick, no addresses: exit {r.returncode}, expected 1, nothing started\n"
             f"{r.stdout}\n{r.stderr}")
    if "preflight health-quick failed" not in r.stderr or "FAIL" not in r.stdout + r.stderr:
        fail(f"health-quick, no addresses: no report or message:\n{r.stdout}\n{r.stderr}")
    if lab.job_dirs():
        fail(f"health-quick, no addresses: job directories left: {lab.job_dirs()}")
    print("health-quick before network apply: failed, nothing started")
    subprocess.run([CLUSTERCTL, "--lab", lab.name, "network", "apply"], check=True,
                   capture_output=True)
    r = run(lab, "health-quick")
    if r.returncode != 0 or r.stdout.count("started") != 4:
        fail(f"health-quick after network apply: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    if "preflight health-quick: every check passed" not in r.stderr:
        fail(f"health-quick after network apply: no pass line:\n{r.stderr}")
    print("health-quick after network apply: passed, 4 ranks ran")

    # The coordinator port held on rank 0's host (h1): launch stops before any rank starts.
    port = 32391
    holder = subprocess.Popen(
        ["ip", "netns", "exec", lab.netns("h1"), "python3", "-c",
         "import socket, sys, time\n"
         "s = socket.socket(); s.bind(('0.0.0.0', int(sys.argv[1]))); s.listen(1)\n"
         "print('listening', flush=True); time.sleep(120)", str(port)],
        stdout=subprocess.PIPE, text=True)
    try:
        holder.stdout.readline()
        job = lab.job("port", command={"shell": "echo started"}, coordinator_port=port)
        r = subprocess.run([CLUSTERCTL, "launch", job], capture_output=True, text=True,
                           timeout=120)
    finally:
        holder.kill()
        holder.wait()
    if r.returncode != 1 or "started" in r.stdout:
        fail(f"port held: exit {r.returncode}, expected 1, nothing started\n{r.stdout}\n{r.stderr}")
    if (f":{port} on h1 (rank 0's host) is held by another program" not in r.stderr
            or f"`coordinator_port:` in {job} (now {port})" not in r.stderr):
        fail(f"port held: host:port or what to change not named:\n{r.stderr}")
    if lab.job_dirs():
        fail(f"port held: job directories left: {lab.job_dirs()}")
    # `logs -f` of it exits as launch did (1: README's exit codes, "never started"), and says
    # why under its own name (it said "clusterctl launch: ...").
    r = subprocess.run([CLUSTERCTL, "logs", f"{lab.name}-port", "-f"], capture_output=True,
                       text=True, timeout=60)
    if (r.returncode != 1 or "clusterctl logs: the coordinator port" not in r.stderr
            or "clusterctl launch" in r.stderr):
        fail(f"logs -f of the port-held job: exit {r.returncode}, expected 1\n{r.stderr}")
    print("coordinator port held on h1: exit 1 before any rank started")

    # A long reason every rank shares (a venv missing on every host) is printed by each rank
    # that ran (its own stderr: the job's output) and once by clusterctl, in the summary. Which
    # ranks ran depends on the machine: on a fast one the first failure ends the job (SIGTERM)
    # before some ranks have started. Each rank the summary says exited 127 printed it.
    job = lab.job("venv", command=["/opt/no-such-venv-for-clusterctl/bin/python", "-c", "1"])
    r = subprocess.run([CLUSTERCTL, "launch", job], capture_output=True, text=True,
                       timeout=120)
    reason = "this host has no Python venv at /opt/no-such-venv-for-clusterctl"
    times = r.stderr.count(reason)
    printed = sorted(int(m[1]) for m in re.finditer(
        r"^\[(\d+) h\d+\] clusterctl: cannot run .*" + re.escape(reason), r.stderr, re.M))
    exited = sorted(int(m[1]) for m in re.finditer(r"^ +(\d+)  h\d+ +exit 127 ", r.stderr, re.M))
    if (r.returncode != 4 or not exited or printed != exited or times != len(exited) + 1
            or "in full in the summary" not in r.stderr):
        fail(f"venv missing: exit {r.returncode} (4), the reason {times} times, printed by ranks "
             f"{printed}; the summary's ranks that exited 127: {exited} (each of those and the "
             f"summary once)\n{r.stderr}")
    print(f"venv missing: its reason printed by ranks {printed} (the ranks that ran) and once in "
          f"the summary")

with Lab("q", up_args=["--omit", "h1-h2"]) as lab:
    r = run(lab)
    if r.returncode != 1:
        fail(f"h1-h2 missing: exit {r.returncode}, expected 1\n{r.stdout}\n{r.stderr}")
    if "started" in r.stdout or "preflight verify-mesh failed" not in r.stderr:
        fail(f"h1-h2 missing: ranks ran or no preflight message:\n{r.stdout}\n{r.stderr}")
    if "h1" not in r.stderr or "h2" not in r.stderr or lab.job_dirs():
        fail(f"h1-h2 missing: pair not named or job directory left:\n{r.stderr}")
    print("h1-h2 missing: preflight failed, nothing started")
print("PASS")
