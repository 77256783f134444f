"""preflight before a launch:
  - verify-mesh: on a full-mesh 4-host lab the job runs (exit 0); on a lab missing the h1-h2
    cable launch stops before starting anything (exit 1, the missing pair named, no rank
    output, no job directory);
  - health-quick (`clusterctl health --quick`): before `network apply` the cables lack their
    planned addresses, so it fails and nothing starts (exit 1, the report shown); after
    `network apply` it passes and the job runs."""
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
