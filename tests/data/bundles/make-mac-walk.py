#!/usr/bin/env python3
"""Builds mac-walk/: the Mac pair before and after `clusterctl rdma enable` walks Mac a.

Two replay bundles (the layout of `clusterctl collect -o DIR`, remote/replay_executor.h):

  mac-walk/start/{a,b}  the cluster before the walk: mac-pair/ as it is (a: RDMA disabled; b:
                        enabled, rdma_en6 PORT_DOWN because of a), plus the hygiene probes of
                        `rdma enable` (provision/mac_hygiene.h), not recorded on the real Macs
                        and written here: a sleeps after 10 minutes, does not restart after a
                        power failure and has no automatic login; b has all three set.
  mac-walk/after/{a,b}  the same Macs once a has RDMA enabled: a's rdma_ctl says enabled and
                        ibv_devices lists one rdma_enX per Thunderbolt port (as b's, with a's own
                        GUIDs); on both Macs rdma_en6 is PORT_ACTIVE (4), and b's Thunderbolt
                        item for a now advertises the "rdma" XDomain service (protocol 64087).

How the walkthrough test (tests/integration/rdma/walkthrough_test.py) changes Mac a while the
tool runs. A replayed host answers each command from BUNDLE/HOST/ when the command runs, and a
missing BUNDLE/HOST is an unreachable host (remote::ReplayExecutor). So the test replays a
bundle directory of its own whose host entries are symlinks, and flips them:
  a -> mac-walk/start/a   disabled           (the walkthrough prints the steps)
  (a removed)             unreachable        (shut down, in macOS Recovery)
  a -> mac-walk/after/a   back, enabled      (the walkthrough verifies it)
Each flip is atomic (a new symlink renamed over the old one). Nothing in clusterctl knows about
phases: normal replays are untouched.

Also useful by hand:
  clusterctl rdma status --from tests/data/bundles/mac-walk/start   # a disabled, exit 1
  clusterctl rdma status --from tests/data/bundles/mac-walk/after   # ready, exit 0
  clusterctl rdma enable --check --from tests/data/bundles/mac-walk/start

Run it from anywhere after make-mac-pair.py: python3 tests/data/bundles/make-mac-walk.py
"""
import json
import pathlib
import re
import shutil

HERE = pathlib.Path(__file__).resolve().parent
PAIR = HERE / "mac-pair"
OUT = HERE / "mac-walk"

HYGIENE = {
    "a": {
        "pmset_-g": (
            "System-wide power settings:\n"
            "Currently in use:\n"
            " standby              1\n"
            " Sleep On Power Button 1\n"
            " hibernatefile        /var/vm/sleepimage\n"
            " powernap             1\n"
            " disksleep            10\n"
            " sleep                10\n"
            " hibernatemode        3\n"
            " ttyskeepawake        1\n"
            " displaysleep         10\n"
            " tcpkeepalive         1\n"
        ),
        "systemsetup_-getrestartpowerfailure": "Restart After Power Failure: Off\n",
        "defaults_read_Library_Preferences_com.apple.loginwindow_autoLoginUser": (
            "", "The domain/default pair of (/Library/Preferences/com.apple.loginwindow, "
            "autoLoginUser) does not exist\n", 1),
    },
    "b": {
        "pmset_-g": (
            "System-wide power settings:\n"
            "Currently in use:\n"
            " standby              0\n"
            " Sleep On Power Button 1\n"
            " autorestart          1\n"
            " hibernatefile        /var/vm/sleepimage\n"
            " powernap             0\n"
            " disksleep            0\n"
            " sleep                0\n"
            " hibernatemode        0\n"
            " ttyskeepawake        1\n"
            " displaysleep         10\n"
            " tcpkeepalive         1\n"
        ),
        "systemsetup_-getrestartpowerfailure": "Restart After Power Failure: On\n",
        "defaults_read_Library_Preferences_com.apple.loginwindow_autoLoginUser": "admin\n",
    },
}


def write(d, key, out, err="", status=0):
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{key}.out").write_text(out)
    if err:
        (d / f"{key}.err").write_text(err)
    if status:
        (d / f"{key}.exit").write_text(f"{status}\n")


def copy_host(src, dst, mac):
    shutil.copytree(src, dst)
    for key, value in HYGIENE[mac].items():
        if isinstance(value, tuple):
            write(dst, key, *value)
        else:
            write(dst, key, value)


def port_active(devinfo, device):
    """ibv_devinfo text with `device`'s port PORT_ACTIVE (4)."""
    blocks = re.split(r"(?=^hca_id:)", devinfo, flags=re.M)
    return "".join(
        b.replace("PORT_DOWN (1)", "PORT_ACTIVE (4)") if b.startswith(f"hca_id:\t{device}\n")
        else b for b in blocks)


if OUT.exists():
    shutil.rmtree(OUT)
for mac in "ab":
    copy_host(PAIR / mac, OUT / "start" / mac, mac)
    copy_host(PAIR / mac, OUT / "after" / mac, mac)

b_devinfo = (PAIR / "b" / "ibv_devinfo_-v.out").read_text()
after_a = OUT / "after" / "a"
write(after_a, "rdma_ctl_status", "enabled\n")
write(after_a, "ibv_devices", re.sub(r"\b00000000000000(\d\d)\b", r"0000000000000a\1",
                                     (PAIR / "b" / "ibv_devices.out").read_text()))
write(after_a, "ibv_devinfo_-v",
      port_active(re.sub(r"0000:0000:0000:00(\d\d)", r"0000:0000:0000:0a\1", b_devinfo),
                  "rdma_en6"))

after_b = OUT / "after" / "b"
write(after_b, "ibv_devinfo_-v", port_active(b_devinfo, "rdma_en6"))
profile = json.loads((PAIR / "b" / "system_profiler_SPThunderboltDataType_-json.out").read_text())
for bus in profile["SPThunderboltDataType"]:
    for item in bus.get("_items", []):
        if item.get("domain_uuid_key") == "00000004-0000-4000-8000-000000000004":  # Mac a
            item["services_title"].append({
                "_name": "unknown_xd_service", "protocol_id_key": 64087,
                "protocol_revision_key": 0, "protocol_version_key": 1,
                "service_uuid_key": "00000009-0000-4000-8000-000000000009"})
write(after_b, "system_profiler_SPThunderboltDataType_-json", json.dumps(profile, indent=2) + "\n")
