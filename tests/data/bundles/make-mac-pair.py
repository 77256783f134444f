#!/usr/bin/env python3
"""Builds the support bundle mac-pair/ from the recorded outputs of two MacBook Pros.

The bundle has the layout `clusterctl collect -o DIR` writes (remote/replay_executor.h): one
directory per host, KEY.out / KEY.err / KEY.exit per probe command. `clusterctl discover --from
mac-pair` replays it.

Recorded (tests/data/fixtures/macos, from real machines): system_profiler
SPThunderboltDataType -json of each Mac, networksetup -listallhardwareports, ibv_devices of each
Mac, ibv_devinfo of Mac b. Not recorded, written here after those and after ifconfig-en2.txt /
ifconfig-bridge0-default.txt (TN3205): uname, sw_vers, sysctl, rdma_ctl status (a: disabled,
b: enabled, as the system_profiler outputs show), ifconfig -a (Thunderbolt Bridge active with
the three Thunderbolt ports as members, the macOS default; en6 with a self-assigned 169.254
address and an fe80 link-local), `ioreg -rd1 -c IOPlatformExpertDevice` (the layout of
fixtures/macos/ioreg-rd1-IOPlatformExpertDevice.txt, each Mac with its own synthetic
IOPlatformUUID). No neighbour pings were recorded, so the cable comes from the Thunderbolt
identities alone.

Run it from anywhere: python3 tests/data/bundles/make-mac-pair.py
"""
import os
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
FIX = HERE.parent / "fixtures" / "macos"


def ifconfig(mac, en6_v4, en6_v6):
    return (
        "lo0: flags=8049<UP,LOOPBACK,RUNNING,MULTICAST> mtu 16384\n"
        "\tinet 127.0.0.1 netmask 0xff000000\n"
        "en0: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n"
        f"\tether 02:00:00:00:0{mac}:05\n"
        f"\tinet 10.0.0.{5 if mac == 'a' else 6} netmask 0xffffff00 broadcast 10.0.0.255\n"
        "\tstatus: active\n"
        "en1: flags=8963<UP,BROADCAST,SMART,RUNNING,PROMISC,SIMPLEX,MULTICAST> mtu 1500\n"
        f"\tether 02:00:00:00:0{mac}:01\n"
        "\tstatus: inactive\n"
        "en6: flags=8963<UP,BROADCAST,SMART,RUNNING,PROMISC,SIMPLEX,MULTICAST> mtu 1500\n"
        f"\tether 02:00:00:00:0{mac}:02\n"
        f"\tinet6 {en6_v6}%en6 prefixlen 64 secured scopeid 0xc\n"
        f"\tinet {en6_v4} netmask 0xffff0000 broadcast 169.254.255.255\n"
        "\tstatus: active\n"
        "en2: flags=8963<UP,BROADCAST,SMART,RUNNING,PROMISC,SIMPLEX,MULTICAST> mtu 1500\n"
        f"\tether 02:00:00:00:0{mac}:03\n"
        "\tstatus: active\n"
        "bridge0: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n"
        f"\tether 36:4d:04:ea:4e:{'0a' if mac == 'a' else '0b'}\n"
        "\tConfiguration:\n"
        "\t\tid 0:0:0:0:0:0 priority 0 hellotime 0 fwddelay 0\n"
        "\tmember: en1 flags=3<LEARNING,DISCOVER>\n"
        "\t        ifmaxaddr 0 port 10 priority 0 path cost 0\n"
        "\tmember: en6 flags=3<LEARNING,DISCOVER>\n"
        "\t        ifmaxaddr 0 port 12 priority 0 path cost 0\n"
        "\tmember: en2 flags=3<LEARNING,DISCOVER>\n"
        "\t        ifmaxaddr 0 port 11 priority 0 path cost 0\n"
        "\tmedia: <unknown type>\n"
        "\tstatus: active\n"
    )


def write(host, key, out, err="", status=0):
    d = HERE / "mac-pair" / host
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{key}.out").write_text(out)
    if err:
        (d / f"{key}.err").write_text(err)
    if status:
        (d / f"{key}.exit").write_text(f"{status}\n")


for mac in "ab":
    enabled = mac == "b"
    write(mac, "uname_-s", "Darwin\n")
    write(mac, "sw_vers", "ProductName:\t\tmacOS\nProductVersion:\t\t27.0\nBuildVersion:\t\t27A5\n")
    write(mac, "sysctl_-n_hw.model_hw.memsize_machdep.cpu.brand_string",
          "Mac17,6\n137438953472\nApple M5 Max\n")
    write(mac, "system_profiler_SPThunderboltDataType_-json",
          (FIX / f"pair-{mac}.system_profiler-SPThunderboltDataType.json").read_text())
    write(mac, "networksetup_-listallhardwareports",
          (FIX / "pair.networksetup-listallhardwareports.txt").read_text())
    write(mac, "ifconfig_-a", ifconfig(mac, "169.254.10.1" if mac == "a" else "169.254.10.2",
                                       "fe80::a:1" if mac == "a" else "fe80::b:1"))
    write(mac, "rdma_ctl_status", "enabled\n" if enabled else "disabled\n")
    write(mac, "ibv_devices", (FIX / f"pair-{mac}.ibv_devices.txt").read_text())
    write(mac, "ibv_devinfo_-v",
          (FIX / "pair-b.ibv_devinfo.txt").read_text() if enabled else "No IB devices found\n")
    write(mac, "ioreg_-rd1_-c_IOPlatformExpertDevice",
          (FIX / "ioreg-rd1-IOPlatformExpertDevice.txt").read_text().replace(
              "5E0F1C2A-7B3D-5A49-9C1E-0D2F3A4B5C6D",
              "A1B2C3D4-0000-4A00-8000-00000000000A" if mac == "a"
              else "A1B2C3D4-0000-4A00-8000-00000000000B").replace(
              "Mac16,7", "Mac17,6").replace("J516cAP", "J714cAP").replace("J516c", "J714c"))
