"""Hostile values reach the rank unchanged, and secrets stay secret, on a 4-host lab:
  - args, cwd and env holding spaces, quotes, $(...), backquotes, backslashes, globs and
    newlines arrive exactly (each rank prints them as JSON), and nothing they contain runs;
  - a secret_env value reaches the rank (it prints a digest) but appears in no log, nowhere in
    clusterctl's output and in no `ps` listing of this machine while the job runs."""
import hashlib
import json
import os
import secrets
import subprocess
import time

from lablib import CLUSTERCTL, Lab, fail, launch

HOSTILE = ["two words", "it's \"quoted\"", "$(touch /tmp/ln-pwned)", "`touch /tmp/ln-pwned`",
           "back\\slash", "new\nline", "*", "-n", "", "semi;colon | pipe & amp"]
PRINT = ("import hashlib, json, os, sys, time; time.sleep(float(os.environ['NAP'])); "
         "print(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd(), 'env': os.environ['HOSTILE'],"
         " 'secret': hashlib.sha256(os.environ['TOKEN_X'].encode()).hexdigest()}))")


with Lab("h") as lab:
    cwd = f"{lab.workdir}/dir with 'quotes' $(x) and\nnewline"
    os.makedirs(cwd)
    secret = "s3cr3t-" + secrets.token_hex(16)
    hostile_env = "\n".join(HOSTILE)
    job = lab.job("hostile", command=["python3", "-c", PRINT, *HOSTILE], cwd=cwd,
                  env={"HOSTILE": hostile_env, "NAP": "2"},
                  secret_env={"TOKEN_X": {"from_env": "LN_SECRET_SOURCE"}})
    env = dict(os.environ, LN_SECRET_SOURCE=secret)
    p = subprocess.Popen([CLUSTERCTL, "launch", job], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    # From the start to the end of the run, ranks napping included: no process listing of this
    # machine (whose pids the lab's hosts share) shows the secret. (A fixed 1.5 s could end
    # before a loaded machine had started a rank, and then showed nothing of the ranks.)
    listings = while_ranks = 0
    deadline = time.time() + 60
    while p.poll() is None and time.time() < deadline:
        ps = subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True, text=True).stdout
        listings += 1
        while_ranks += "os.environ['NAP']" in ps
        if secret in ps:
            p.kill()
            fail("the secret appears in a ps listing")
        time.sleep(0.1)
    out, err = p.communicate(timeout=60)
    if not while_ranks:
        fail(f"no ps listing showed the ranks running ({listings} listings): the check saw "
             "nothing of them")
    if p.returncode != 0:
        fail(f"exit {p.returncode}\n{out}\n{err}")
    want_digest = hashlib.sha256(secret.encode()).hexdigest()
    for rank in range(4):
        with open(f"{lab.latest('hostile')}/rank-{rank}.out") as f:
            got = json.loads(f.read())
        if got["argv"] != HOSTILE:
            fail(f"rank {rank}: argv {got['argv']!r} != {HOSTILE!r}")
        if got["cwd"] != cwd:
            fail(f"rank {rank}: cwd {got['cwd']!r} != {cwd!r}")
        if got["env"] != hostile_env:
            fail(f"rank {rank}: env {got['env']!r} != {hostile_env!r}")
        if got["secret"] != want_digest:
            fail(f"rank {rank}: the secret did not arrive intact")
    if os.path.exists("/tmp/ln-pwned"):
        os.remove("/tmp/ln-pwned")
        fail("a hostile value was executed")
    for root, _, files in os.walk(lab.logs("hostile")):
        for name in files:
            with open(os.path.join(root, name), errors="replace") as f:
                if secret in f.read():
                    fail(f"the secret is in the log {name}")
    if secret in out or secret in err:
        fail("the secret is in clusterctl's output")
    if lab.job_dirs():
        fail(f"job directories left: {lab.job_dirs()}")
    print(f"hostile values intact on 4 ranks; secret in none of {listings} ps listings "
          f"({while_ranks} while the ranks ran), logs or output")
print("PASS")
