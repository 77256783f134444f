"""Helpers shared by the launch lab tests: a 4-host lab that is removed whatever happens, job
files, and the counts the tests assert on (processes on the lab hosts, job directories)."""
import glob
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

CLUSTERCTL = os.environ["CLUSTERCTL"]
SUFFIX = os.environ.get("CLUSTERCTL_TEST_SUFFIX", "")
PERF = sys.argv[1] if len(sys.argv) > 1 else ""  # bench/clustercomm-perf, when a test needs it


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


class Lab:
    """`lab up` on enter, `lab down` on exit (also after a failure)."""

    def __init__(self, tag, hosts=4, up_args=()):
        self.up_args = list(up_args)
        self.name = f"ln{SUFFIX}{tag}"
        self.hosts = [f"h{i + 1}" for i in range(hosts)]
        self.workdir = f"/tmp/clusterctl-launch-test-{self.name}"

    def __enter__(self):
        subprocess.run([CLUSTERCTL, "lab", "down", "--name", self.name], capture_output=True)
        subprocess.run([CLUSTERCTL, "lab", "up", "--hosts", str(len(self.hosts)), "--name",
                        self.name, *self.up_args], check=True, stdout=subprocess.DEVNULL)
        os.makedirs(self.workdir, exist_ok=True)
        return self

    def __exit__(self, *exc):
        subprocess.run([CLUSTERCTL, "lab", "down", "--name", self.name], capture_output=True)
        subprocess.run(["rm", "-rf", self.workdir])

    def netns(self, host):
        return f"cc-{self.name}-{host}"

    def addressed_state(self):
        """`network apply`, then `discover -o`: the path of the cabled, addressed cluster.json."""
        subprocess.run([CLUSTERCTL, "--lab", self.name, "network", "apply"], check=True,
                       capture_output=True)
        state = os.path.join(self.workdir, "cluster.json")
        subprocess.run([CLUSTERCTL, "--lab", self.name, "discover", "-o", state], check=True,
                       capture_output=True)
        return state

    def processes(self, host):
        """(pid, comm, args) of every process in the host's namespace but its sshd's."""
        out = subprocess.run(["ip", "netns", "pids", self.netns(host)], capture_output=True,
                             text=True).stdout.split()
        procs = []
        for pid in out:
            try:
                with open(f"/proc/{pid}/comm") as f:
                    comm = f.read().strip()
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    args = f.read().replace(b"\0", b" ").decode(errors="replace")
                with open(f"/proc/{pid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if comm == "sshd" or state == "Z":
                continue
            procs.append((int(pid), comm, args))
        return procs

    def strays(self):
        return {h: self.processes(h) for h in self.hosts if self.processes(h)}

    def wait_no_strays(self, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if not self.strays():
                return True
            time.sleep(0.1)
        return not self.strays()

    def check_clean(self, tag, seconds=5):
        """Fails the test unless, within `seconds`, no process of ours is left on the hosts and
        no job directory of this lab is left in /tmp."""
        if not self.wait_no_strays(seconds):
            fail(f"{tag}: processes left on the hosts: {self.strays()}")
        if self.job_dirs():
            fail(f"{tag}: job directories left: {self.job_dirs()}")

    def job(self, name, **fields):
        """Writes a job file (JSON is YAML) with cluster lab:NAME and logs in the work dir."""
        job = {"name": f"{self.name}-{name}", "cluster": f"lab:{self.name}",
               "logs": self.logs(name)}
        job.update(fields)
        path = f"{self.workdir}/{name}.yaml"
        with open(path, "w") as f:
            json.dump(job, f)
        return path

    def logs(self, name):
        """The job's `logs:` directory; each run writes its own JOBID/ in it."""
        return f"{self.workdir}/logs/{name}"

    def latest(self, name):
        """The newest run's log directory (LOGS/latest)."""
        return f"{self.logs(name)}/latest"


    def job_dirs(self):
        """This lab's job directories (the lab hosts share this machine's /tmp)."""
        return glob.glob(f"/tmp/clusterctl-job-{self.name}-*")


def ended_after_cut(tag, lines, t0, total, grace):
    """A host was cut off at t0 and clusterctl exited `total` s later; `lines` is its stderr as
    (arrival time, line). It must have said it was ending the job (the host known lost) and
    exited within that + grace + 8 s: the healthy hosts' ranks get SIGTERM at once and the lost
    host is not waited for again. Unloaded it takes detection + grace + 0.3 s; a loaded CI run
    (2026-12-03) took detection + grace + 7.3 s after every rank had ended, cause not found yet
    (the healthy hosts' cleanup over SSH is the suspect), so the slack is 8 s, not 2. Returns
    (the detection's time after t0, the whole stderr)."""
    err = "".join(line for _, line in lines)
    noticed = [at for at, line in lines if "ending the job" in line]
    if not noticed:
        fail(f"{tag}: clusterctl never said it was ending the job:\n{err}")
    detection = noticed[0] - t0
    if total > detection + grace + 8:
        fail(f"{tag}: clusterctl exited {total:.1f} s after the cut, more than detection "
             f"({detection:.1f} s) + grace ({grace} s) + 8 s:\n{err}")
    return detection, err


def cut_cable_while(p, lab, host, port, ready, tag, within=60, settle=0):
    """Job process `p` (launched with stdout and stderr piped, as text) runs; once `ready` =
    (count, predicate) lines of its stdout satisfy the predicate, and `settle` s more, takes
    `port` of `host` down, waits up to `within` s for `p` to end (failing, `p` killed, if it
    hangs), and brings the port up again whatever happened. Returns (stdout, stderr, seconds
    from the cut to the end)."""
    want, is_ready = ready
    try:
        seen = 0
        deadline = time.time() + 90
        while seen < want and time.time() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            seen += bool(is_ready(line))
        if seen < want:
            fail(f"{tag}: the ranks did not all start ({seen} of {want})")
        time.sleep(settle)
        subprocess.run(["ip", "-n", lab.netns(host), "link", "set", "dev", port, "down"],
                       check=True)
        cut = time.time()
        try:
            out, err = p.communicate(timeout=within)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            fail(f"{tag}: the job did not end within {within} s of the cut (it hung):\n{err}")
        return out, err, time.time() - cut
    finally:
        subprocess.run(["ip", "-n", lab.netns(host), "link", "set", "dev", port, "up"],
                       check=True)
        if p.poll() is None:
            p.kill()


def launch(job, *args, timeout=120, env=None):
    return subprocess.run([CLUSTERCTL, "launch", job, *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


class Pty:
    """clusterctl on a new pty that is its controlling terminal, so ^C sends SIGINT."""

    def __init__(self, args):
        self.buf = b""
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execv(args[0], args)

    def read_until(self, pattern, count, timeout):
        deadline = time.time() + timeout
        while self.text().count(pattern) < count and time.time() < deadline:
            r, _, _ = select.select([self.fd], [], [], 0.1)
            if r:
                try:
                    self.buf += os.read(self.fd, 65536)
                except OSError:
                    break
        return self.text().count(pattern) >= count

    def text(self):
        return self.buf.decode(errors="replace")

    def send(self, data):
        os.write(self.fd, data)

    def wait(self, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.read_until("\0never", 1, 0.1)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.read_until("\0never", 1, 0.2)
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        fail(f"clusterctl did not exit within {timeout} s; output:\n{self.text()}")
