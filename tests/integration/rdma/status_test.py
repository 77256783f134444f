#!/usr/bin/env python3
"""`clusterctl rdma status` and `rdma enable --check` on the replayed Mac bundles.

On the Mac pair bundle, `rdma status` reports Mac a disabled and Mac b's
cabled port waiting for peer a (exit 1). Also the JSON schema, and `enable --check` before the
walk (a needs it: exit 1) and after it (none: exit 0).

Usage: status_test.py BUNDLES_DIR   (CLUSTERCTL names the binary)
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

CLUSTERCTL = os.environ["CLUSTERCTL"]
BUNDLES = pathlib.Path(sys.argv[1]).resolve()


def run(*args):
    p = subprocess.run([CLUSTERCTL, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def check(cond, message, out=""):
    if not cond:
        print(f"FAIL: {message}\n{out}", file=sys.stderr)
        sys.exit(1)


def main():
    pair = str(BUNDLES / "mac-pair")
    rc, out, err = run("rdma", "status", "--from", pair)
    check(rc == 1, f"rdma status on mac-pair: exit {rc}, want 1", out + err)
    rows = [line.split() for line in out.splitlines()]
    check(["a", "-", "-", "-", "disabled"] == rows[1][:5], "Mac a is not disabled", out)
    check(re.search(r"^b +receptacle 2 \(en6\) +rdma_en6 +a receptacle 2 \(en6\) +waiting-for-peer ",
                    out, re.M), "b's port is not waiting for a", out)
    check("PORT_DOWN: its peer a has RDMA disabled" in out, "b's port does not name peer a", out)

    rc, out, err = run("--json", "rdma", "status", "--from", pair)
    check(rc == 1, f"rdma status --json: exit {rc}", out + err)
    j = json.loads(out)
    check(j["schema"] == "clusterctl.rdma-status/1", "schema", out)
    hosts = {h["host"]: h for h in j["hosts"]}
    check(hosts["a"]["state"] == "disabled", "JSON: a disabled", out)
    check([p["state"] for p in hosts["b"]["ports"]] == ["waiting-for-peer"], "JSON: b port", out)
    check(hosts["b"]["ports"][0]["waiting_for"] == "a", "JSON: waiting_for a", out)

    rc, out, err = run("rdma", "enable", "--check", "--from", str(BUNDLES / "mac-walk" / "start"))
    check(rc == 1, f"enable --check before the walk: exit {rc}, want 1", out + err)
    check("1 Mac needs RDMA enabled: a." in out, "--check names a", out)
    rc, out, err = run("--json", "rdma", "enable", "--check", "--from",
                       str(BUNDLES / "mac-walk" / "after"))
    check(rc == 0, f"enable --check after the walk: exit {rc}, want 0", out + err)
    check(json.loads(out)["need_enabling"] == [], "--check --json after the walk", out)

    # A replay without --check: its hosts exist only in the bundles. It stops after the steps
    # and the hygiene report (no wait: without the fix this waited --wait-timeout, 20 minutes by
    # default), saves no progress (the real file under XDG_STATE_HOME), suggests no command
    # against the hosts, and says so.
    with tempfile.TemporaryDirectory(prefix="cc-rdma-replay-") as home:
        env = dict(os.environ, XDG_STATE_HOME=home)
        p = subprocess.run([CLUSTERCTL, "rdma", "enable", "--from", pair, "--wait-timeout", "20"],
                           capture_output=True, text=True, timeout=60, env=env,
                           stdin=subprocess.DEVNULL)
        out = p.stdout + p.stderr
        check(p.returncode == 1, f"enable on a replay: exit {p.returncode}, want 1", out)
        check(f"A replay of {pair}: its hosts exist only in the bundles, so nothing was waited "
              "for or saved (as with --check)." in p.stdout, "the replay is not said", out)
        check("1 Mac needs RDMA enabled: a." in p.stdout, "the replay names a", out)
        check("[1/1] Mac a: enable RDMA from macOS Recovery\n  1. Shut down a:" in p.stdout,
              "the replay's steps", out)
        check("--hosts" not in out and "Progress is saved" not in out,
              "a command against the bundles' hosts, or progress", out)
        check(not list(pathlib.Path(home).rglob("*")), "the replay saved state", out)

    rc, out, err = run("--json", "rdma", "enable", "--from", pair)
    check(rc == 1 and json.loads(out)["need_enabling"] == ["a"], "a replay: --check's JSON", out)
    rc, out, err = run("--json", "rdma", "enable", "--from", pair, "--state", os.devnull)
    check(rc == 2 and "--json goes with --check only" in err, "interactive --json refused", err)
    print("ok: rdma status (text, JSON) and enable --check on replayed Macs")


if __name__ == "__main__":
    main()
