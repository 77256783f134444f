#!/usr/bin/env python3
"""libclustercomm ranks on four lab hosts, talking over the lab's cables.

    lab_ranks_test.py RANK_PROGRAM        (root; $CLUSTERCTL, $XDG_STATE_HOME from ctest)

RANK_PROGRAM is comm/tests/rank_main.cc (clustercomm_test_rank). The test:
  1. brings up a 4-host mesh lab (6 cables) and gives every cable a point-to-point IPv4 /30
     on both ends (provisioning does not exist yet, so the test does it itself), in a private
     /24 that overlaps neither the lab's management subnet nor this machine's addresses;
  2. runs rank r on host h(r+1) with `ip netns exec`, the coordinator on h1's management
     address and CLUSTERCOMM_PEER_ADDRS naming, per peer, both ends of the cable to it;
  3. runs every collective with a data check (rank_main "collectives": f32/bf16/i8/u64, all
     ops, counts 0, 1, 1001 and 1 MiB + 7 elements; reduce_scatter, all_gather, broadcast,
     send/recv, barrier) and checks from the interface counters that the payload crossed each
     cable (both directions) while the management interface en0 carried next to nothing;
  4. kills rank 2 with SIGKILL in the middle of a stream of all_reduce calls: every survivor
     must fail (exit 3) within timeout + 1 s with a message naming rank 2.
The lab is removed at the end whatever happens.
"""
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HOSTS = 4
WORLD = HOSTS
KILL_TIMEOUT_MS = 3000
VICTIM = 2


def fail(msg):
    raise AssertionError(msg)


def sh(*args, check=True):
    return subprocess.run(args, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True).stdout


class Lab:
    def __init__(self, clusterctl, name):
        self.clusterctl = clusterctl
        self.name = name
        state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
        self.json_path = os.path.join(state, "clusterctl", "labs", name, "lab.json")
        self.record = None

    def up(self):
        subprocess.run([self.clusterctl, "lab", "down", "--name", self.name],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run([self.clusterctl, "lab", "up", "--hosts", str(HOSTS), "--name", self.name],
                       check=True, stdout=subprocess.DEVNULL)
        with open(self.json_path) as f:
            self.record = json.load(f)

    def down(self):
        subprocess.run([self.clusterctl, "lab", "down", "--name", self.name],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def ns(self, host):
        return next(h["namespace"] for h in self.record["hosts"] if h["name"] == host)

    def mgmt_address(self, host):
        return next(h["address"] for h in self.record["hosts"] if h["name"] == host)


def pick_cable_subnet(lab):
    """A /24 for the cables that overlaps neither the lab's subnet nor any local address."""
    taken = [ipaddress.ip_network(lab.record["subnet"], strict=False)]
    for link in json.loads(sh("ip", "-j", "addr")):
        for a in link.get("addr_info", []):
            if a.get("family") == "inet":
                taken.append(ipaddress.ip_network(f"{a['local']}/{a['prefixlen']}", strict=False))
    for line in sh("ip", "-4", "route", "show", "table", "all").splitlines():
        dst = line.split()[0] if line else ""
        if dst and dst[0].isdigit():
            try:
                taken.append(ipaddress.ip_network(dst, strict=False))
            except ValueError:
                pass
    for third in range(254, 0, -1):
        for second in (254, 253, 252):
            net = ipaddress.ip_network(f"10.{second}.{third}.0/24")
            if not any(net.overlaps(t) for t in taken if t.prefixlen > 0):
                return net
    fail("no free 10.25x.y.0/24 for the cables")


def address_cables(lab):
    """Gives each cable its own /30; returns {(host, peer_host): (local_ip, remote_ip, port)}."""
    net = pick_cable_subnet(lab)
    base = int(net.network_address)
    routes = {}
    for i, cable in enumerate(lab.record["cables"]):
        a, b = cable["a"], cable["b"]
        ip_a = str(ipaddress.ip_address(base + 4 * i + 1))
        ip_b = str(ipaddress.ip_address(base + 4 * i + 2))
        sh("ip", "-n", lab.ns(a["host"]), "addr", "add", f"{ip_a}/30", "dev", a["port"])
        sh("ip", "-n", lab.ns(b["host"]), "addr", "add", f"{ip_b}/30", "dev", b["port"])
        routes[(a["host"], b["host"])] = (ip_a, ip_b, a["port"])
        routes[(b["host"], a["host"])] = (ip_b, ip_a, b["port"])
    print(f"cables addressed in {net}: " + ", ".join(
        f"{h}:{p}={l}" for (h, _), (l, _, p) in sorted(routes.items())))
    hosts = [f"h{i + 1}" for i in range(HOSTS)]
    for h in hosts:
        for p in hosts:
            if h != p and (h, p) not in routes:
                fail(f"the lab has no cable between {h} and {p}")
    # Each cable answers on its own addresses (the kernel may need a moment after addr add).
    if shutil.which("ping"):
        for (h, p), (local, remote, port) in routes.items():
            out = subprocess.run(["ip", "netns", "exec", lab.ns(h), "ping", "-c", "1", "-W", "2",
                                  "-I", port, remote], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
            if out.returncode != 0:
                fail(f"{h}:{port} ({local}) cannot ping {p} at {remote}:\n{out.stdout}")
    return routes


def counters(lab):
    """{(host, ifname): (rx_bytes, tx_bytes)} for en0 and every tb port of every host."""
    out = {}
    for h in lab.record["hosts"]:
        for link in json.loads(sh("ip", "-n", h["namespace"], "-s", "-j", "link")):
            name = link["ifname"]
            if name == "en0" or name.startswith("tb"):
                s = link["stats64"]
                out[(h["name"], name)] = (s["rx"]["bytes"], s["tx"]["bytes"])
    return out


def payload_lower_bound():
    """Payload bytes rank_main "collectives" sends at least, each way between every pair
    (n = 4), counting only its large calls: all_reduce of 1 MiB + 7 elements (reduce-scatter
    then all-gather: a shard each way), reduce_scatter and all_gather of 1 MiB / 4 + 3
    elements per rank. Small calls, broadcast, send/recv and TCP/IP headers come on top; 5%
    slack leaves room for a different shard split."""
    total = 0
    for e in (4, 2, 1, 8):  # f32, bf16, i8, u64
        big = (1 << 20) // e + 7
        total += 4 * 2 * (big // WORLD) * e  # sum, prod, min, max
        per_rank = (1 << 20) // e // WORLD + 3
        total += 2 * per_rank * e
    return int(total * 0.95)


class Ranks:
    def __init__(self, lab, program, routes, logdir):
        self.lab, self.program, self.routes, self.logdir = lab, program, routes, logdir
        self.procs = []
        self.logs = []

    def env(self, rank, port, timeout_ms):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("CLUSTERCOMM_") and not k.startswith("MLX_")}
        me = f"h{rank + 1}"
        peers = []
        for j in range(WORLD):
            if j == rank:
                peers.append("")
            else:
                local, remote, _ = self.routes[(me, f"h{j + 1}")]
                peers.append(f"{local}>{remote}")
        env.update({
            "CLUSTERCOMM_RANK": str(rank),
            "CLUSTERCOMM_SIZE": str(WORLD),
            "CLUSTERCOMM_COORDINATOR": f"{self.lab.mgmt_address('h1')}:{port}",
            "CLUSTERCOMM_TOKEN": "lab-ranks-test-token",
            "CLUSTERCOMM_TIMEOUT_MS": str(timeout_ms),
            "CLUSTERCOMM_PEER_ADDRS": ",".join(peers),
        })
        return env

    def start(self, mode, port, timeout_ms):
        self.procs, self.logs = [], []
        for r in range(WORLD):
            log = os.path.join(self.logdir, f"{mode}-{port}-rank{r}.log")
            self.logs.append(log)
            with open(log, "w") as f:
                # `ip netns exec` execs the program: the pid is the rank's own.
                self.procs.append(subprocess.Popen(
                    ["ip", "netns", "exec", self.lab.ns(f"h{r + 1}"), self.program, mode],
                    env=self.env(r, port, timeout_ms), stdin=subprocess.DEVNULL,
                    stdout=f, stderr=subprocess.STDOUT))

    def log(self, r):
        with open(self.logs[r]) as f:
            return f.read()

    def wait(self, seconds):
        """Exit codes (None = still running after `seconds`) and exit times."""
        deadline = time.monotonic() + seconds
        exited = [None] * WORLD
        while time.monotonic() < deadline and None in exited:
            for r, p in enumerate(self.procs):
                if exited[r] is None and p.poll() is not None:
                    exited[r] = time.monotonic()
            time.sleep(0.01)
        return [p.returncode for p in self.procs], exited

    def kill_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def run_collectives(lab, ranks):
    before = counters(lab)
    t0 = time.monotonic()
    ranks.start("collectives", 29611, 60000)
    codes, _ = ranks.wait(400)
    logs = "\n".join(f"--- rank {r} (exit {codes[r]}):\n{ranks.log(r)}" for r in range(WORLD))
    if codes != [0] * WORLD:
        ranks.kill_all()
        fail(f"collectives over the cables failed: exit codes {codes}\n{logs}")
    after = counters(lab)
    print(f"collectives: all {WORLD} ranks correct in {time.monotonic() - t0:.1f} s")

    want = payload_lower_bound()
    cable_total = 0
    for cable in lab.record["cables"]:
        for end in (cable["a"], cable["b"]):
            key = (end["host"], end["port"])
            rx = after[key][0] - before[key][0]
            tx = after[key][1] - before[key][1]
            cable_total += tx
            print(f"  {end['host']}:{end['port']} rx {rx} B, tx {tx} B (at least {want} B each)")
            if rx < want or tx < want:
                fail(f"{end['host']}:{end['port']} carried rx {rx} / tx {tx} bytes, expected at "
                     f"least {want} each way: traffic did not take this cable")
    for h in lab.record["hosts"]:
        key = (h["name"], "en0")
        mgmt = (after[key][0] - before[key][0]) + (after[key][1] - before[key][1])
        print(f"  {h['name']}:en0 rx+tx {mgmt} B")
        if mgmt > 512 * 1024 or mgmt * 100 > cable_total:
            fail(f"{h['name']}:en0 (management) carried {mgmt} bytes during the collectives; "
                 f"the cables carried {cable_total}: data went over the management network")


def run_kill(ranks):
    ranks.start("loop", 29612, KILL_TIMEOUT_MS)
    deadline = time.monotonic() + 120
    for r in range(WORLD):
        while "looping" not in ranks.log(r):
            if ranks.procs[r].poll() is not None or time.monotonic() > deadline:
                ranks.kill_all()
                fail(f"rank {r} never started looping (exit {ranks.procs[r].returncode}):\n"
                     + ranks.log(r))
            time.sleep(0.01)
    time.sleep(0.1)
    killed_at = time.monotonic()
    ranks.procs[VICTIM].send_signal(signal.SIGKILL)
    codes, exited = ranks.wait(KILL_TIMEOUT_MS / 1000 + 10)
    ranks.kill_all()
    bound = KILL_TIMEOUT_MS / 1000 + 1
    for r in range(WORLD):
        if r == VICTIM:
            continue
        log = ranks.log(r)
        took = None if exited[r] is None else exited[r] - killed_at
        print(f"  rank {r}: exit {codes[r]} after "
              f"{'never' if took is None else f'{took * 1000:.0f} ms'}: {log.strip()}")
        if codes[r] != 3:
            fail(f"rank {r} exited {codes[r]} after rank {VICTIM} was killed, expected 3:\n{log}")
        if f"rank {VICTIM}" not in log:
            fail(f"rank {r}'s error does not name rank {VICTIM}:\n{log}")
        if took > bound:
            fail(f"rank {r} took {took:.2f} s to fail, more than timeout + 1 s = {bound} s")
    print(f"kill -9 of rank {VICTIM}: every survivor failed within {bound} s naming it")


def main():
    if len(sys.argv) != 2:
        print("usage: lab_ranks_test.py RANK_PROGRAM", file=sys.stderr)
        return 2
    program = os.path.abspath(sys.argv[1])
    clusterctl = os.environ.get("CLUSTERCTL")
    if not clusterctl:
        print("set CLUSTERCTL to the clusterctl binary", file=sys.stderr)
        return 2
    # Lab names are machine-wide: ours is unique per build tree (tests/CMakeLists.txt).
    suffix = os.environ.get("CLUSTERCTL_TEST_SUFFIX") or \
        os.environ.get("CLUSTERCTL_TEST_LAB", "ct8none")[-4:]
    name = "ccm" + suffix
    # Turn SIGTERM/SIGINT into an exception so the lab still comes down.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    lab = Lab(clusterctl, name)
    logdir = tempfile.mkdtemp(prefix="clustercomm-lab-")
    ranks = None
    try:
        lab.up()
        routes = address_cables(lab)
        ranks = Ranks(lab, program, routes, logdir)
        run_collectives(lab, ranks)
        run_kill(ranks)
        print("PASS")
        return 0
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    finally:
        if ranks:
            ranks.kill_all()
        lab.down()
        shutil.rmtree(logdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
