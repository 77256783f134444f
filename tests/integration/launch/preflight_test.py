"""preflight: verify-mesh before a launch: on a full-mesh 4-host lab the job runs (exit 0); on
a lab missing the h1-h2 cable launch stops before starting anything (exit 1, the missing pair
named, no rank output, no job directory)."""
import subprocess

from lablib import CLUSTERCTL, Lab, fail


def run(lab):
    job = lab.job("pre", command={"shell": "echo started"}, preflight=["verify-mesh"])
    return subprocess.run([CLUSTERCTL, "launch", job], capture_output=True, text=True,
                          timeout=120)


with Lab("p") as lab:
    r = run(lab)
    if r.returncode != 0 or r.stdout.count("started") != 4:
        fail(f"full mesh: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    print("full mesh: preflight passed, 4 ranks ran")

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
