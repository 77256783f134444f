"""restart: on-failure on a 4-host lab: a job whose rank 0 fails its first two starts succeeds
on the third (exit 0) with max_attempts 3; with max_attempts 2 it fails (exit 4) after two
starts; each attempt's directories are removed."""
import os
import subprocess

from lablib import CLUSTERCTL, Lab, fail

with Lab("r") as lab:
    for max_attempts, want_rc, want_starts in ((3, 0, 3), (2, 4, 2)):
        counter = f"{lab.workdir}/starts-{max_attempts}"
        script = (f"if [ \"$CLUSTERCOMM_RANK\" = 0 ]; then n=$(cat {counter} 2>/dev/null || "
                  f"echo 0); n=$((n + 1)); echo $n > {counter}; [ $n -ge 3 ] || exit 1; fi; "
                  "sleep 0.5")
        job = lab.job(f"restart{max_attempts}", command={"shell": script},
                      restart={"policy": "on-failure", "max_attempts": max_attempts},
                      timeouts={"grace": 2})
        r = subprocess.run([CLUSTERCTL, "launch", job], capture_output=True, text=True,
                           timeout=120)
        if r.returncode != want_rc:
            fail(f"max_attempts {max_attempts}: exit {r.returncode}, expected {want_rc}\n{r.stderr}")
        with open(counter) as f:
            starts = int(f.read())
        if starts != want_starts:
            fail(f"max_attempts {max_attempts}: rank 0 started {starts} times, not {want_starts}")
        if f"attempt 1 of {max_attempts} failed" not in r.stderr:
            fail(f"max_attempts {max_attempts}: no restart note:\n{r.stderr}")
        if not lab.wait_no_strays(3) or lab.job_dirs():
            fail(f"left behind: {lab.strays()} {lab.job_dirs()}")
        print(f"max_attempts {max_attempts}: {starts} starts, exit {r.returncode}")
print("PASS")
