"""A job ends cleanly whatever ends it, on a 4-host lab:
  - kill -9 of one rank mid-run: every rank on every host gone within grace + 2 s, exit 4, the
    summary names that rank as the first failure;
  - a host cut off mid-run (every sshd process of h4 killed, so its connections drop): the job
    fails (exit 4) naming rank 3, and h4's rank is ended by its own watchdog within grace + 2 s;
  - a network cut mid-run (`ip link set en0 down` inside h4's namespace: no TCP reset, no EOF,
    nobody notices without the heartbeat): h4's rank is ended by its watchdog within
    HEARTBEAT_TIMEOUT + grace + 2 s and its job directory removed; clusterctl exits 4 naming h4
    as lost, within grace + 8 s of noticing (the other hosts' ranks get SIGTERM at once, and
    teardown does not wait for h4);
  - Ctrl-C on a pty: exit 130, every rank gone.
Rank 0 ignores SIGTERM throughout, so the SIGKILL after the grace period is exercised too.
Afterwards no process and no job directory is left on any host."""
import os
import signal
import subprocess
import threading
import time

from lablib import CLUSTERCTL, Lab, Pty, ended_after_cut, fail

GRACE = 3
HEARTBEAT_TIMEOUT = 10  # launch/wrapper.h kHeartbeatTimeout
ONLY = os.environ.get("LAUNCH_FAULTS_ONLY", "")  # run one case while developing: "netcut"
COMMAND = ("echo ready; if [ \"$CLUSTERCOMM_RANK\" = 0 ]; then trap '' TERM; fi; "
           "exec sleep 300")


def ranks_alive(lab):
    return {h: [p for p in lab.processes(h) if p[2].startswith("sleep 300")] for h in lab.hosts}


def wait_all_ready(proc_out, count, timeout):
    deadline = time.time() + timeout
    text = ""
    while time.time() < deadline and text.count("ready") < count:
        line = proc_out.readline()
        if not line:
            break
        text += line
    return text.count("ready") >= count


def wait_gone(lab, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not any(ranks_alive(lab).values()):
            return True
        time.sleep(0.05)
    return False


def wait_sleeping(lab, timeout):
    """Every host's rank has become its `sleep 300`. A rank prints "ready" before it sets its
    trap and execs sleep: on a loaded machine `ps` right after "ready" can still show its
    shell, and kill9 then found no rank to kill ("expected rank 2's sleep on h3, found []")."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if all(len(v) == 1 for v in ranks_alive(lab).values()):
            return True
        time.sleep(0.05)
    return False


def start(lab, name):
    job = lab.job(name, command={"shell": COMMAND}, timeouts={"grace": GRACE, "startup": 30,
                                                              "total": 120})
    p = subprocess.Popen([CLUSTERCTL, "launch", job], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    if not wait_all_ready(p.stdout, 4, 30) or not wait_sleeping(lab, 30):
        p.kill()
        fail(f"{name}: the 4 ranks did not start: {ranks_alive(lab)} {p.communicate()}")
    return p


def kill9(lab):
    p = start(lab, "kill9")
    victims = ranks_alive(lab)["h3"]
    if len(victims) != 1:
        fail(f"kill9: expected rank 2's sleep on h3, found {victims}")
    t0 = time.time()
    os.kill(victims[0][0], signal.SIGKILL)
    if not wait_gone(lab, GRACE + 2):
        fail(f"kill9: ranks alive {GRACE + 2} s after kill -9: {ranks_alive(lab)}")
    gone = time.time() - t0
    out, err = p.communicate(timeout=30)
    if p.returncode != 4:
        fail(f"kill9: exit {p.returncode}, expected 4\n{err}")
    if "rank 2 on h3 failed (SIGKILL)" not in err or "<- failed first" not in err:
        fail(f"kill9: the summary does not name rank 2:\n{err}")
    # Rank 0 ignored SIGTERM: clusterctl names its SIGKILL in its own line; the wrapper's shell
    # said "Killed" under rank 0's prefix, as if the rank had.
    if (f"clusterctl: rank 0 on h1 still running after the {GRACE} s grace period: SIGKILL"
            not in err or "[0 h1] Killed" in err):
        fail(f"kill9: the SIGKILL of rank 0 not said by clusterctl alone:\n{err}")
    lab.check_clean("kill9", 3)
    print(f"kill9: every rank gone {gone:.1f} s after kill -9 (grace {GRACE} s), exit 4")


def cut_off(lab):
    p = start(lab, "cutoff")
    sshd = [pid for pid in subprocess.run(["ip", "netns", "pids", lab.netns("h4")],
                                          capture_output=True, text=True).stdout.split()
            if open(f"/proc/{pid}/comm").read().strip() == "sshd"]
    t0 = time.time()
    for pid in sshd:
        os.kill(int(pid), signal.SIGKILL)
    if not wait_gone(lab, GRACE + 2):
        fail(f"cutoff: ranks alive {GRACE + 2} s after h4 was cut off: {ranks_alive(lab)}")
    gone = time.time() - t0
    out, err = p.communicate(timeout=60)
    if p.returncode != 4:
        fail(f"cutoff: exit {p.returncode}, expected 4\n{err}")
    if "rank 3 on h4 failed (connection lost" not in err:
        fail(f"cutoff: the summary does not name rank 3's lost connection:\n{err}")
    lab.check_clean("cutoff", 3)
    print(f"cutoff: h4's rank ended by its watchdog, all gone {gone:.1f} s after the cut, exit 4")


def net_cut(lab):
    p = start(lab, "netcut")
    lines = []  # (time, line) of clusterctl's stderr as it arrives

    def read_err():
        for line in p.stderr:
            lines.append((time.time(), line))
    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()
    h4_dirs = [d for d in lab.job_dirs() if d.endswith("-h3")]  # host index 3 = h4
    if len(h4_dirs) != 1:
        fail(f"netcut: expected h4's job directory, found {lab.job_dirs()}")
    t0 = time.time()
    subprocess.run(["ip", "netns", "exec", lab.netns("h4"), "ip", "link", "set", "en0", "down"],
                   check=True)
    limit = HEARTBEAT_TIMEOUT + GRACE + 2
    deadline = t0 + limit
    while time.time() < deadline and ranks_alive(lab)["h4"]:
        time.sleep(0.1)
    if ranks_alive(lab)["h4"]:
        fail(f"netcut: h4's rank alive {limit} s after the cut: {ranks_alive(lab)}")
    gone = time.time() - t0
    while time.time() < deadline and os.path.exists(h4_dirs[0]):
        time.sleep(0.1)
    if os.path.exists(h4_dirs[0]):
        fail(f"netcut: h4's job directory {h4_dirs[0]} still there {limit} s after the cut")
    # Failover: once h4 is known lost (clusterctl says "ending the job"), the healthy hosts'
    # ranks get SIGTERM at once (rank 0 ignores it: SIGKILL after the grace period) and
    # clusterctl does not wait for h4 again (lablib.ended_after_cut).
    p.wait(timeout=120)
    total = time.time() - t0
    reader.join(timeout=10)
    detection, err = ended_after_cut("netcut", lines, t0, total, GRACE)
    if p.returncode != 4:
        fail(f"netcut: exit {p.returncode}, expected 4\n{err}")
    if "rank 3 on h4 failed (connection lost: host h4 lost" not in err:
        fail(f"netcut: the summary does not name h4 as lost:\n{err}")
    lab.check_clean("netcut", 3)
    print(f"netcut: h4's rank ended by its watchdog {gone:.1f} s after the cut "
          f"(limit {limit} s), h4 known lost after {detection:.1f} s, clusterctl exit 4 after "
          f"{total:.1f} s (limit {detection + GRACE + 8:.1f} s)")


def ctrl_c(lab):
    job = lab.job("ctrlc", command={"shell": COMMAND}, timeouts={"grace": GRACE})
    t = Pty([CLUSTERCTL, "launch", job])
    if not t.read_until("ready", 4, 30) or not wait_sleeping(lab, 30):
        fail(f"ctrlc: the ranks did not start:\n{t.text()}")
    t0 = time.time()
    t.send(b"\x03")
    rc = t.wait(GRACE + 20)
    if rc != 130:
        fail(f"ctrlc: exit {rc}, expected 130\n{t.text()}")
    if any(ranks_alive(lab).values()):
        fail(f"ctrlc: ranks alive after exit: {ranks_alive(lab)}")
    lab.check_clean("ctrlc", 3)
    print(f"ctrlc: exit 130 after {time.time() - t0:.1f} s, nothing left")


if not ONLY:
    with Lab("f") as lab:
        kill9(lab)
        ctrl_c(lab)
    with Lab("c") as lab:  # a fresh lab: cut_off kills h4's sshd for good
        cut_off(lab)
if ONLY in ("", "netcut"):
    with Lab("n") as lab:  # a fresh lab: h4's link stays down
        net_cut(lab)
print("PASS")
