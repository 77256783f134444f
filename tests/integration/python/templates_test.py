"""The Python job templates (templates/python-sgd.yaml and python-matmul.yaml) through the real
`clusterctl launch` on a 4-host lab, each template as it is but for three lines: the venv that
python.venv built (BUILD/python/venv, tests/python_venv.sh) instead of /opt/clustercomm/venv,
the script's absolute path in `upload:`, and a job name and log directory of this test's own.
  - sgd: exit 0; every rank prints that its loss went down and that its weights are identical
    to rank 0's, all with the same sha256; the per-rank logs hold the same lines.
  - matmul: exit 0; every rank prints the exact float64 check (the same sha256 on every rank)
    and the float32 check within its bound.
  - corrupt: sgd with SGD_CORRUPT_RANK=2 in `env:`: exit 4, rank 2 names itself as differing
    from rank 0, the summary names rank 2 as the rank that failed first.
Nothing may be left on the hosts. Skipped (77) when python.venv was (no package registry).
Usage: templates_test.py BUILD"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "launch"))
from lablib import CLUSTERCTL, Lab, fail  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
VENV = f"{BUILD}/python/venv"
TEMPLATES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          "..", "..", "..", "templates"))
RANKS = 4

if not os.path.isfile(f"{VENV}/installed"):
    print(f"SKIPPED: no built venv at {VENV} (python.venv, tests/python_venv.sh, was skipped: "
          f"the package registry was unreachable)")
    sys.exit(77)


def replace_once(text, old, new, template):
    if text.count(old) != 1:
        fail(f"{template}: expected {old!r} exactly once, found it {text.count(old)} times "
             f"(the template changed: update this test)")
    return text.replace(old, new)


def job(lab, template, script, tag, env=None):
    """templates/TEMPLATE with this test's venv, upload path, name and logs; its path."""
    with open(f"{TEMPLATES}/{template}") as f:
        text = f.read()
    base = template.removesuffix(".yaml")
    text = replace_once(text, "[/opt/clustercomm/venv/bin/python,", f"[{VENV}/bin/python,",
                        template)
    text = replace_once(text, f"  - src: {script}\n", f"  - src: {TEMPLATES}/{script}\n",
                        template)
    text = replace_once(text, f"\nname: {base}\n", f"\nname: {lab.name}-{tag}\n", template)
    text = replace_once(text, f"\nlogs: logs/{base}\n", f"\nlogs: {lab.logs(tag)}\n", template)
    for name, value in (env or {}).items():
        text = replace_once(text, "\nenv:\n", f'\nenv:\n  {name}: "{value}"\n', template)
    path = f"{lab.workdir}/{tag}.yaml"
    with open(path, "w") as f:
        f.write(text)
    return path


def launch(lab, path, timeout=120):
    t0 = time.time()
    r = subprocess.run([CLUSTERCTL, "--lab", lab.name, "launch", path], capture_output=True,
                       text=True, timeout=timeout, cwd=lab.workdir)
    return r, time.time() - t0


def rank_lines(tag, out, pattern):
    """Per rank, the match of `[R hN] rank R: PATTERN` in launch's stdout (one each)."""
    found = {}
    for rank in range(RANKS):
        rx = re.compile(rf"^\[{rank} h{rank + 1}\] rank {rank}: {pattern}$", re.M)
        m = rx.findall(out)
        if len(m) != 1:
            fail(f"{tag}: rank {rank}: expected one line matching {rx.pattern!r}, found "
                 f"{len(m)}:\n{out}")
        found[rank] = m[0]
    return found


def succeeded(tag, r):
    if r.returncode != 0:
        fail(f"{tag}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    if f"job succeeded: {RANKS} ranks exited 0" not in r.stderr:
        fail(f"{tag}: no success line:\n{r.stderr}")


def sgd(lab):
    r, took = launch(lab, job(lab, "python-sgd.yaml", "sgd.py", "sgd"))
    succeeded("sgd", r)
    losses = rank_lines("sgd", r.stdout,
                        r"loss (\S+) -> (\S+) after 100 steps \(went down\)")
    digests = rank_lines("sgd", r.stdout,
                         r"weights identical to rank 0 \(sha256 ([0-9a-f]{16}), 64 float64\)")
    for rank, (first, last) in losses.items():
        if not float(last) < float(first):
            fail(f"sgd: rank {rank}: the loss {first} -> {last} did not go down:\n{r.stdout}")
    if len(set(losses.values())) != 1 or len(set(digests.values())) != 1:
        fail(f"sgd: the ranks disagree on the loss or on rank 0's weights:\n{r.stdout}")
    for rank in range(RANKS):
        with open(f"{lab.latest('sgd')}/rank-{rank}.out") as f:
            log = f.read()
        if f"rank {rank}: weights identical to rank 0 (sha256 {digests[rank]}" not in log:
            fail(f"sgd: rank {rank}'s log lacks its weights line:\n{log}")
    lab.check_clean("sgd")
    first, last = losses[0]
    print(f"sgd: {RANKS} ranks exit 0 in {took:.1f} s; loss {first} -> {last}; weights "
          f"identical on every rank (sha256 {digests[0]})")


def matmul(lab):
    r, took = launch(lab, job(lab, "python-matmul.yaml", "matmul.py", "matmul"))
    succeeded("matmul", r)
    exact = rank_lines("matmul", r.stdout,
                       r"float64 C \(256x192, K=1024 in 4 shards\) equals the single-process "
                       r"product exactly \(sha256 ([0-9a-f]{16})\)")
    bound = rank_lines("matmul", r.stdout,
                       r"float32 C \(256x192\) within 2\*gamma_n\*\(\|A\|@\|B\|\) of the "
                       r"single-process product: max \|error\| (\S+), at most (\S+) of the "
                       r"bound \(n=1028\)")
    if len(set(exact.values())) != 1:
        fail(f"matmul: the ranks' float64 products differ:\n{r.stdout}")
    for rank, (err, ratio) in bound.items():
        if not 0 <= float(ratio) <= 1:
            fail(f"matmul: rank {rank}: float32 error at {ratio} of the bound:\n{r.stdout}")
    lab.check_clean("matmul")
    print(f"matmul: {RANKS} ranks exit 0 in {took:.1f} s; float64 exact (sha256 {exact[0]}); "
          f"float32 max error {bound[0][0]}, {bound[0][1]} of the bound")


def corrupt(lab):
    r, took = launch(lab, job(lab, "python-sgd.yaml", "sgd.py", "corrupt",
                              env={"SGD_CORRUPT_RANK": "2"}))
    if r.returncode != 4:
        fail(f"corrupt: exit {r.returncode}, expected 4\n{r.stdout}\n{r.stderr}")
    named = re.search(r"^\[2 h3\] rank 2: FAIL: weights differ from rank 0's: sha256 "
                      r"[0-9a-f]{16} here, [0-9a-f]{16} on rank 0; first at weight 0: ",
                      r.stderr, re.M)
    if not named:
        fail(f"corrupt: rank 2 did not name itself as differing from rank 0:\n{r.stderr}")
    row = re.search(r"^ *2 +h3 +exit 1 .*<- failed first$", r.stderr, re.M)  # the summary's
    if not row or "rank 2 on h3 failed" not in r.stderr:
        fail(f"corrupt: the summary does not name rank 2 as failing first:\n{r.stderr}")
    for rank in (0, 1, 3):
        if f"[{rank} h{rank + 1}] rank {rank}: FAIL" in r.stdout + r.stderr:
            fail(f"corrupt: rank {rank} failed too:\n{r.stdout}\n{r.stderr}")
    lab.check_clean("corrupt")
    print(f"corrupt: exit 4 in {took:.1f} s, rank 2 named: {named.group(0)[:60]}...")


with Lab("v") as lab:
    sgd(lab)
    matmul(lab)
    corrupt(lab)
print("PASS")
