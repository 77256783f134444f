#!/usr/bin/env python3
"""The `clusterctl rdma enable` walkthrough under a pty, over replayed Macs that change as it goes.

Two Macs from tests/data/bundles/mac-walk (make-mac-walk.py): b has RDMA enabled, a has it
disabled. The test replays a bundle directory of its own whose host entries are symlinks and
flips Mac a through its phases as the walkthrough asks for them (see make-mac-walk.py):
    a -> mac-walk/start/a   disabled; then (a removed) unreachable; then a -> mac-walk/after/a.

It checks, driving the real binary through a pseudo-terminal as an operator would:
  1. the tool walks only a (b is enabled already), prints the seven physical steps and the
     hygiene fixes, and waits with a spinner and the elapsed time;
  2. Ctrl-C (a ^C typed on the terminal) ends it with 130 and the phase saved in the state file;
  3. a re-run resumes at a, sees it go down (unreachable), come back, verifies rdma_ctl status and
     ibv_devices, and exits 0 with a saved as done;
  4. with b's recordings flipped to after the walk too, `rdma status` says every port is ready.

Usage: walkthrough_test.py BUNDLES_DIR   (CLUSTERCTL names the binary)
"""
import json
import os
import pathlib
import pty
import re
import select
import shutil
import signal
import sys
import tempfile
import time

CLUSTERCTL = os.environ["CLUSTERCTL"]
WALK = pathlib.Path(sys.argv[1]).resolve() / "mac-walk"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


class Terminal:
    """The binary on a new pty that is its controlling terminal (so ^C sends SIGINT)."""

    def __init__(self, args, env):
        self.raw = b""
        self.status = None
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # child
            try:
                os.execve(CLUSTERCTL, [CLUSTERCTL] + args, env)
            finally:
                os._exit(127)

    def text(self):
        return ANSI.sub("", self.raw.decode(errors="replace"))

    def _read(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the pty
            data = b""
        self.raw += data
        return bool(data)

    def expect(self, needle, timeout=20):
        deadline = time.monotonic() + timeout
        while needle not in self.text():
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(min(left, 0.1)):
                if needle in self.text():
                    return
                fail(f"no {needle!r} within {timeout} s; the terminal showed:\n{self.text()}")

    def type(self, data):
        os.write(self.fd, data)

    def wait(self, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._read(0.1):
                break
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid != 0:
                os.close(self.fd)
                self.status = os.waitstatus_to_exitcode(status)
                return self.status
            time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        fail(f"still running after {timeout} s; the terminal showed:\n{self.text()}")


def point(bundle, host, target):
    """bundle/host -> target, atomically (None: remove it, the host is unreachable)."""
    link = bundle / host
    if target is None:
        os.remove(link)
        return
    tmp = bundle / f".{host}.new"
    os.symlink(target, tmp)
    os.replace(tmp, link)


def main():
    work = pathlib.Path(tempfile.mkdtemp(prefix="cc-rdma-walk-"))
    try:
        bundle = work / "bundle"
        bundle.mkdir()
        point(bundle, "a", WALK / "start" / "a")
        point(bundle, "b", WALK / "start" / "b")
        state = work / "rdma-enable.json"
        env = dict(os.environ)
        env.pop("NO_COLOR", None)  # a real terminal: progress line (spinner) on
        env["TERM"] = "xterm"
        args = ["rdma", "enable", "--from", str(bundle), "--state", str(state),
                "--poll-interval", "0.2", "--wait-timeout", "60"]

        # 1-2: the steps for a only, the spinner, then Ctrl-C.
        t = Terminal(args, env)
        t.expect("Waiting for a to shut down")
        t.expect("a: waiting for it to shut down  0:0")  # the spinner line with elapsed time
        out = t.text()
        for needle in ["RDMA enabled already: b", "RDMA to enable from macOS Recovery: a",
                       "[1/1] Mac a: enable RDMA from macOS Recovery",
                       "1. Shut down a: Apple menu > Shut Down",
                       '2. Press and hold the power button until "Loading startup options"',
                       "3. Click Options, then Continue.",
                       "4. If asked, pick a user and enter its password.",
                       "5. In the menu bar, choose Utilities > Terminal.",
                       "6. Type `rdma_ctl enable` and press Return.",
                       "7. Reboot: type `reboot` and press Return.",
                       "fix: sudo pmset -a sleep 0",
                       "fix: sudo systemsetup -setrestartpowerfailure on",
                       f"Progress is saved in {state}."]:
            if needle not in out:
                fail(f"missing {needle!r} in:\n{out}")
        t.type(b"\x03")
        if t.wait() != 130:
            fail(f"Ctrl-C: exit {t.status}, want 130; the terminal showed:\n{t.text()}")
        saved = json.loads(state.read_text())
        if saved["macs"]["a"]["phase"] != "waiting-down":
            fail(f"after Ctrl-C the state file says {saved}")
        first = t.text()
        # A rehearsal (a progress file of its own, --state) resumes against the bundles, never
        # the real Macs their hosts are named after (`rdma enable --hosts a,b`).
        resume = f"`clusterctl rdma enable --from {bundle} --state {state}` again to resume"
        if resume not in first or "--hosts" in first:
            fail(f"the resume command is not the rehearsal's {resume!r}:\n{first}")

        # 3: resume, a goes down, comes back enabled.
        t = Terminal(args, env)
        t.expect("[1/1] Mac a: resuming (it had not shut down yet; the steps again:)")
        t.expect("Waiting for a to shut down")
        point(bundle, "a", None)  # shut down, then macOS Recovery
        t.expect("a is down (")
        t.expect("a: waiting for it to come back on SSH")  # spinner
        point(bundle, "a", WALK / "after" / "a")  # `rdma_ctl enable`, reboot, back on SSH
        t.expect("a is back on SSH (")
        t.expect("a: RDMA enabled (rdma_ctl status: enabled; ibv_devices: rdma_en1, rdma_en2, "
                 "rdma_en6).")
        t.expect("RDMA is enabled on a.")
        if t.wait() != 0:
            fail(f"resumed walk: exit {t.status}, want 0; the terminal showed:\n{t.text()}")
        if json.loads(state.read_text())["macs"]["a"]["phase"] != "done":
            fail(f"after the walk the state file says {state.read_text()}")
        for run in (first, t.text()):
            if re.search(r"\] Mac b:", run) or "Shut down b" in run:
                fail(f"Mac b was walked although it has RDMA enabled:\n{run}")

        # 4: the whole cluster after the walk.
        point(bundle, "b", WALK / "after" / "b")
        t = Terminal(["rdma", "status", "--from", str(bundle)], env)
        t.expect("RDMA ready: 2 of 2 hosts and 2 of 2 cabled ports ready")
        if t.wait() != 0:
            fail(f"rdma status after the walk: exit {t.status}, want 0:\n{t.text()}")
        print("ok: walked a only (steps, spinner, Ctrl-C 130, resumed, down, up, verified, exit 0)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
