"""restart: on-failure on a 4-host lab: a job whose rank 0 fails its first two starts succeeds
on the third (exit 0) with max_attempts 3; with max_attempts 2 it fails (exit 4) after two
starts; each attempt's directories are removed. Each attempt's lines follow clusterctl's marker
of its start in every rank log (they shared rank-0.out with nothing between them), and
`clusterctl logs` shows them."""
import os
import re
import subprocess

from lablib import CLUSTERCTL, Lab, fail

MARKER = re.compile(r"^--- clusterctl: attempt (\d) of (\d) started \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ "
                    r"\(job \S+\) ---$")


def attempts_in(text, max_attempts):
    """[(attempt number, its lines)] of a rank log, in order; fails on lines before a marker."""
    out = []
    for line in text.splitlines():
        m = MARKER.match(line)
        if m:
            if int(m.group(2)) != max_attempts:
                fail(f"marker of {m.group(2)} attempts, not {max_attempts}: {line}")
            out.append((int(m.group(1)), []))
        elif not out:
            fail(f"a line before the first attempt's marker: {line!r}\n{text}")
        else:
            out[-1][1].append(line)
    return out


with Lab("r") as lab:
    for max_attempts, want_rc, want_starts in ((3, 0, 3), (2, 4, 2)):
        counter = f"{lab.workdir}/starts-{max_attempts}"
        script = (f"if [ \"$CLUSTERCOMM_RANK\" = 0 ]; then n=$(cat {counter} 2>/dev/null || "
                  f"echo 0); n=$((n + 1)); echo $n > {counter}; echo start $n; "
                  "[ $n -ge 3 ] || exit 1; fi; sleep 0.5")
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
        with open(f"{lab.latest(f'restart{max_attempts}')}/rank-0.out") as f:
            got = attempts_in(f.read(), max_attempts)
        want = [(n, [f"start {n}"]) for n in range(1, want_starts + 1)]
        if got != want:
            fail(f"max_attempts {max_attempts}: rank 0's log by attempt {got}, not {want}")
        with open(f"{lab.latest(f'restart{max_attempts}')}/rank-3.err") as f:
            if [n for n, _ in attempts_in(f.read(), max_attempts)] != list(range(1, want_starts + 1)):
                fail(f"max_attempts {max_attempts}: rank 3's stderr log is not marked per attempt")
        shown = subprocess.run([CLUSTERCTL, "logs", f"{lab.name}-restart{max_attempts}", "--rank",
                                "0"], capture_output=True, text=True, timeout=30)
        if attempts_in(shown.stdout, max_attempts) != want:
            fail(f"max_attempts {max_attempts}: `clusterctl logs --rank 0` shows\n{shown.stdout}")
        if not lab.wait_no_strays(3) or lab.job_dirs():
            fail(f"left behind: {lab.strays()} {lab.job_dirs()}")
        print(f"max_attempts {max_attempts}: {starts} starts, exit {r.returncode}")
print("PASS")
