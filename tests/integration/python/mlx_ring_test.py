"""A real MLX program (mlx_ring_prog.py, mlx 0.32.4 from the venv tests/python_venv.sh builds)
on 3-host and 4-host labs after `network apply`, over MLX's TCP ring backend on the cables:

- `clusterctl launch` with runtime mlx-ring on `cluster: hostfile:F`, F written by `clusterctl
  hostfile --format mlx-ring`: exit 0, every rank's RESULT right, its MLX_HOSTFILE the
  hostfile's cable addresses (ports from coordinator_port 32323 up, as mlx.launch counts), and
  the bytes on the cable interfaces (tb*);
- the same program through MLX's own launcher, `mlx.launch --hostfile F --backend ring` (over
  the lab's sshd, with an ssh that reads the lab's ssh_config): the same results;
- a failing variant (rank 1 exits 3 after init, the others wait in all_sum): clusterctl must
  exit 4 naming rank 1 as the rank that failed first (by its host's clock: a neighbour that
  fails on the closed ring connection may be reported sooner) and leave no process; what mlx.launch does (exit code, seconds, what
  it prints, processes left) is printed beside it, not asserted (it is MLX's behaviour);
- on 4 hosts, a cable the ring uses cut mid-job (the ranks loop on all_sum and block, idle, on
  the dead socket; timeouts.total 0): clusterctl names the cable at once and ends the job after
  timeouts.cable (exit 4) with the cable as the reason. Before, it hung silently for ever.

Usage: mlx_ring_test.py VENV_PYTHON. Exit 77 with a SKIPPED: line when the venv has no MLX."""
import glob
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "launch"))
from lablib import CLUSTERCTL, Lab, cut_cable_while, fail  # noqa: E402

PY = sys.argv[1] if len(sys.argv) > 1 else ""
PROG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mlx_ring_prog.py")
MLX_LAUNCH = os.path.join(os.path.dirname(PY), "mlx.launch")
PORT = 32323  # launch's coordinator_port default and mlx.launch's --starting-port default
STATE = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")

if not os.access(PY, os.X_OK):
    print(f"SKIPPED: no venv python {PY!r} (tests/python_venv.sh BUILD makes it)")
    sys.exit(77)
probe = subprocess.run([PY, "-c", "import mlx.core as mx; print(mx.__version__)"],
                       capture_output=True, text=True)
if probe.returncode != 0 or not os.access(MLX_LAUNCH, os.X_OK):
    why = (probe.stderr.strip().splitlines() or ["no mlx.launch"])[-1]
    print(f"SKIPPED: MLX is not installed in {os.path.dirname(os.path.dirname(PY))} "
          f"(python/tests/requirements-optional.txt; tests/python_venv.sh says why): {why}")
    sys.exit(77)


def want_sums(n):
    """What RESULT's sums= must say for n ranks (mlx_ring_prog.py's arrays)."""
    out = []
    for dtype, count in (("float32", 1000), ("int32", 1 << 20), ("float16", 7)):
        total = sum((i % 97) * n + n * (n + 1) // 2 for i in range(count))
        out.append(f"mlx.core.{dtype}:{total}")
    return ",".join(out)


def lines_of(text, prefix):
    """{rank: rest of line} of the lines `PREFIX rank=R ...` (any launcher's prefix before)."""
    found = {}
    for line in text.replace("\r", "").splitlines():
        m = re.search(rf"{prefix} rank=(\d+) (.*)$", line)
        if m:
            found[int(m.group(1))] = m.group(2)
    return found


def cable_addresses(lab, host):
    out = subprocess.run(["ip", "-n", lab.netns(host), "-j", "-4", "addr", "show"],
                         capture_output=True, text=True, check=True).stdout
    return {a["local"] for link in json.loads(out) if link["ifname"].startswith("tb")
            for a in link.get("addr_info", [])}


def cable_bytes(lab):
    total = 0
    for h in lab.hosts:
        out = subprocess.run(["ip", "-n", lab.netns(h), "-j", "-s", "link", "show"],
                             capture_output=True, text=True, check=True).stdout
        total += sum(link["stats64"]["tx"]["bytes"] for link in json.loads(out)
                     if link["ifname"].startswith("tb"))
    return total


def mlx_launch(lab, hf_path, *prog_args):
    """mlx.launch over the lab's sshd: (exit code, seconds, stdout, stderr)."""
    bindir = f"{lab.workdir}/bin"
    os.makedirs(bindir, exist_ok=True)
    with open(f"{bindir}/ssh", "w") as f:  # mlx.launch runs plain `ssh HOST`
        f.write(f"#!/bin/sh\nexec /usr/bin/ssh -F '{STATE}/clusterctl/labs/{lab.name}/ssh_config'"
                " -o BatchMode=yes -o ConnectTimeout=10 \"$@\"\n")
    os.chmod(f"{bindir}/ssh", 0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    t0 = time.monotonic()
    try:
        r = subprocess.run([MLX_LAUNCH, "--hostfile", hf_path, "--backend", "ring", "--python",
                            PY, PROG, *prog_args], capture_output=True, text=True, timeout=90,
                           env=env, cwd=lab.workdir, stdin=subprocess.DEVNULL)
        return r.returncode, time.monotonic() - t0, r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        return ("timeout", time.monotonic() - t0, (e.stdout or b"").decode(errors="replace"),
                (e.stderr or b"").decode(errors="replace"))


def check_good_run(what, n, stdout, expect_hostfile):
    results = lines_of(stdout, "RESULT")
    hostfiles = lines_of(stdout, "HOSTFILE")
    for rank in range(n):
        if rank not in results:
            fail(f"{what}: rank {rank} printed no RESULT line:\n{stdout}")
        if not results[rank].startswith(f"size={n} ok=True sums={want_sums(n)} "):
            fail(f"{what}: rank {rank}: {results[rank]!r}, want size={n} ok=True "
                 f"sums={want_sums(n)}")
        if json.loads(hostfiles.get(rank, "null")) != expect_hostfile:
            fail(f"{what}: rank {rank}'s MLX_HOSTFILE {hostfiles.get(rank)} != "
                 f"{json.dumps(expect_hostfile)}")
    return max(float(r.rsplit("seconds=", 1)[1]) for r in results.values())


def port_of(lab, host, address):
    """The interface of `host` that holds `address`."""
    out = subprocess.run(["ip", "-n", lab.netns(host), "-j", "-4", "addr", "show"],
                         capture_output=True, text=True, check=True).stdout
    for link in json.loads(out):
        if any(a["local"] == address for a in link.get("addr_info", [])):
            return link["ifname"]
    fail(f"{host} has no interface with {address}")


def cable_cut(lab, hf_path, hf):
    """A ring cable cut mid-job: named at once, the job ended after timeouts.cable (exit 4)."""
    job = lab.job("cut", cluster=f"hostfile:{hf_path}", runtime="mlx-ring",
                  command=[PY, PROG, "--loop"], timeouts={"startup": 60, "grace": 3, "cable": 8})
    host = hf["hosts"][1]["ssh"]
    port = port_of(lab, host, hf["hosts"][1]["ips"][0])
    p = subprocess.Popen([CLUSTERCTL, "--lab", lab.name, "launch", job], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    looping = (4, lambda line: "LOOPING rank=" in line)
    _, err, took = cut_cable_while(p, lab, host, port, looping, "cable cut")
    cable = rf"cable [^\n]*{host} {port}[^\n]* is down: [^\n]*{host} {port}: administratively down"
    if p.returncode != 4:
        fail(f"cable cut: exit {p.returncode} (want 4):\n{err}")
    if not re.search(rf"^clusterctl: {cable}[^\n]*\(a cable the ranks use", err, re.M):
        fail(f"cable cut: {host} {port} not named as it went down:\n{err}")
    if not re.search(rf"^job failed: {cable}", err, re.M):
        fail(f"cable cut: the summary's reason is not the cable {host} {port}:\n{err}")
    if not lab.wait_no_strays(15):
        fail(f"cable cut: processes left: {lab.strays()}")
    return (f"n=4 cable {host} {port} cut mid-job: named, clusterctl exit 4 {took:.0f} s after "
            f"the cut, the cable the reason")


report = []
for n in (3, 4):
    started = time.time()
    with Lab("x", hosts=n) as lab:
        for args in (["network", "apply"], ["discover", "-o", f"{lab.workdir}/cluster.json"],
                     ["hostfile", f"{lab.workdir}/cluster.json", "--format", "mlx-ring", "-o",
                      f"{lab.workdir}/hosts.json"]):
            r = subprocess.run([CLUSTERCTL, "--lab", lab.name, *args], capture_output=True,
                               text=True, timeout=120)
            if r.returncode != 0:
                fail(f"n={n}: clusterctl {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
        hf_path = f"{lab.workdir}/hosts.json"
        with open(hf_path) as f:
            hf = json.load(f)
        if hf.get("backend") != "ring" or len(hf["hosts"]) != n:
            fail(f"n={n}: {hf_path} is not a ring hostfile of {n} hosts: {hf}")
        # Every address MLX is given is one of its host's cable (tb*) addresses.
        expect, port = [], PORT
        for i, h in enumerate(hf["hosts"]):
            cables = cable_addresses(lab, h["ssh"])
            if not h["ips"] or not set(h["ips"]) <= cables:
                fail(f"n={n}: rank {i} ({h['ssh']}): ips {h['ips']} are not among its cable "
                     f"addresses {sorted(cables)}")
            expect.append([f"{ip}:{port + k}" for k, ip in enumerate(h["ips"])])
            port += len(h["ips"])

        # clusterctl launch, runtime mlx-ring.
        job = lab.job("ring", cluster=f"hostfile:{hf_path}", runtime="mlx-ring",
                      command=[PY, PROG], timeouts={"startup": 60, "total": 120, "grace": 5})
        before = cable_bytes(lab)
        t0 = time.monotonic()
        r = subprocess.run([CLUSTERCTL, "--lab", lab.name, "launch", job], capture_output=True,
                           text=True, timeout=150)
        ours_s = time.monotonic() - t0
        sent = cable_bytes(lab) - before
        if r.returncode != 0:
            fail(f"n={n}: clusterctl launch: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        check_good_run(f"n={n} clusterctl launch", n, r.stdout, expect)
        for rank in range(n):
            with open(f"{lab.latest('ring')}/rank-{rank}.out") as f:
                if f"RESULT rank={rank} size={n} ok=True" not in f.read():
                    fail(f"n={n}: rank {rank}'s log has no RESULT ok line")
        # Every rank sends its 4 MiB int32 array's (n - 1) / n twice around the ring.
        if sent < n * 4 * 2**20:
            fail(f"n={n}: only {sent} bytes went over the cable interfaces")
        if not lab.wait_no_strays(10):
            fail(f"n={n}: processes left after clusterctl launch: {lab.strays()}")

        # mlx.launch, the same program on the same hostfile.
        rc, theirs_s, out, err = mlx_launch(lab, hf_path)
        if rc != 0:
            fail(f"n={n}: mlx.launch: exit {rc}\n{out}\n{err}")
        check_good_run(f"n={n} mlx.launch", n, out, expect)
        if not lab.wait_no_strays(10):
            fail(f"n={n}: processes left after mlx.launch: {lab.strays()}")
        report.append(f"n={n} good run: clusterctl exit 0 in {ours_s:.1f} s, mlx.launch exit {rc} "
                      f"in {theirs_s:.1f} s; same sums; {sent} bytes on tb*")

        # Rank 1 fails right after init.
        job = lab.job("fail", cluster=f"hostfile:{hf_path}", runtime="mlx-ring",
                      command=[PY, PROG, "--fail-rank", "1"],
                      timeouts={"startup": 60, "total": 120, "grace": 5})
        t0 = time.monotonic()
        r = subprocess.run([CLUSTERCTL, "--lab", lab.name, "launch", job], capture_output=True,
                           text=True, timeout=150)
        ours_s = time.monotonic() - t0
        if r.returncode != 4 or not re.search(r"^\[1 h\d\] FAILING rank=1", r.stdout, re.M):
            fail(f"n={n} failing rank: clusterctl exit {r.returncode} (want 4), output:\n"
                 f"{r.stdout}\n{r.stderr}")
        # The summary: rank 1's exit 3, failed first; each other rank either exit 1 (it saw its
        # ring neighbour's socket close: MLX's "[ring] connection to a peer was lost") or ended
        # by clusterctl's SIGTERM before it noticed (which ranks notice first is MLX's timing).
        for rank in range(n):
            row = (rf"^ +{rank} +h\d+ +exit 3 +[\d.]+ s +<- failed first" if rank == 1 else
                   rf"^ +{rank} +h\d+ +(exit 1 +[\d.]+ s|SIGTERM +[\d.]+ s +ended by clusterctl)")
            if not re.search(row, r.stderr, re.M):
                fail(f"n={n} failing rank: no summary row {row!r}:\n{r.stderr}")
        # Rank 1, whenever its exit status reached clusterctl: the wrapper records when each
        # rank ended on its host, and a neighbour that failed on the closed connection was
        # reported first about one run in two.
        blamed = re.search(r"^ +(\d+) +h\d+ +exit \d .*<- failed first", r.stderr, re.M)
        if not blamed or "job failed: rank 1 on " not in r.stderr:
            fail(f"n={n} failing rank: rank 1 not named the first failure:\n{r.stderr}")
        if not lab.wait_no_strays(10) or lab.job_dirs():
            fail(f"n={n} failing rank: left after clusterctl: processes {lab.strays()}, job "
                 f"directories {lab.job_dirs()}")
        rc, theirs_s, out, err = mlx_launch(lab, hf_path, "--fail-rank", "1")
        if os.environ.get("MLX_RING_TEST_VERBOSE"):
            print(f"---- clusterctl stdout\n{r.stdout}\n---- stderr\n{r.stderr}\n---- mlx.launch"
                  f" stdout\n{out}\n---- stderr\n{err}\n----")
        left = not lab.wait_no_strays(10)
        strays = lab.strays()
        for p in (p for procs in strays.values() for p in procs):  # MLX's leftovers
            os.kill(p[0], 9)
        err = re.sub(r"\x1b\[[0-9;]*m", "", err).replace("\r", "")
        warned = sorted(int(m) for m in re.findall(r"\[WARN\] Node with rank (\d+) exited", err))
        report.append(
            f"n={n} rank 1 exits 3: clusterctl exit {r.returncode} in {ours_s:.1f} s (every rank"
            f" in the summary, rank {blamed.group(1)} failed first); mlx.launch exit {rc} in "
            f"{theirs_s:.1f} s, a WARN line for ranks {warned}, {err.count('Traceback')} "
            f"tracebacks of its own, "
            f"{'processes LEFT: ' + str(strays) if left else 'no process left'}, ranks' stderr "
            f"{'on its stdout' if 'connection to a peer was lost' in out else 'elsewhere'}")
        # mlx.launch's temporary files (mktemp in /tmp on every host, which the lab hosts
        # share with this machine): copies of MLX_HOSTFILE (removed here) and pid files.
        copies, pidfiles = [], 0
        for path in glob.glob("/tmp/tmp.*"):
            try:
                if os.path.getmtime(path) < started:
                    continue
                with open(path) as f:
                    text = f.read(4096)
            except OSError:
                continue
            if text.strip() == json.dumps(expect):
                copies.append(path)
            pidfiles += bool(re.fullmatch(r"\d+\n", text))
        for path in copies:
            os.unlink(path)
        report.append(f"n={n}: mlx.launch left {len(copies)} MLX_HOSTFILE copies (removed now) "
                      f"and about {pidfiles} pid files in /tmp; clusterctl none")

        if n == 4:
            report.append(cable_cut(lab, hf_path, hf))

for line in report:
    print(line)
print("PASS")
