#!/usr/bin/env python3
"""Builds the support bundle linux-two-names/: one Linux machine listed under two names.

gpu1 and gpu1-ts are the same Debian 12 machine, reached over its LAN address 10.0.0.5 and over
a VPN address 100.64.0.5 (a second interface): the management addresses differ and it has no
Thunderbolt, so neither the address nor a domain UUID tells that they are one machine; its
/etc/machine-id and its SSH host key do. gpu2 is another machine (10.0.0.6) with its own.

Layout as `clusterctl collect -o DIR` writes it (remote/replay_executor.h): KEY.out per probe
command and ssh-host-key per host. Written by hand after the formats of the Debian 12 build
machine's own outputs (os-release, meminfo, `ip -j -d addr` as in
tests/data/fixtures/linux/ip-j-addr.json, machine-id(5)); no RDMA, no Thunderbolt, no cables.
The machine IDs and host key fingerprints are synthetic.

Run it from anywhere: python3 tests/data/bundles/make-linux-two-names.py
"""
import json
import pathlib
import shutil

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "linux-two-names"

OS_RELEASE = (
    'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n'
    'NAME="Debian GNU/Linux"\n'
    'VERSION_ID="12"\n'
    'VERSION="12 (bookworm)"\n'
    "VERSION_CODENAME=bookworm\n"
    "ID=debian\n"
)
MEMINFO = "MemTotal:       65843212 kB\nMemFree:        61234560 kB\n"


def ip_addr(addresses):
    def iface(index, name, mac, v4, kind=None):
        i = {"ifindex": index, "ifname": name, "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
             "mtu": 1500, "qdisc": "fq_codel", "operstate": "UP", "group": "default",
             "txqlen": 1000, "link_type": "ether", "address": mac,
             "broadcast": "ff:ff:ff:ff:ff:ff",
             "addr_info": [{"family": "inet", "local": v4, "prefixlen": 24 if kind is None else 32,
                            "scope": "global", "label": name,
                            "valid_life_time": 4294967295, "preferred_life_time": 4294967295}]}
        if kind:
            i["flags"] = ["POINTOPOINT", "NOARP", "UP", "LOWER_UP"]
            i["link_type"] = "none"
            del i["address"], i["broadcast"]
            i["linkinfo"] = {"info_kind": kind}
        return i
    lo = {"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"], "mtu": 65536,
          "qdisc": "noqueue", "operstate": "UNKNOWN", "group": "default", "txqlen": 1000,
          "link_type": "loopback", "address": "00:00:00:00:00:00",
          "broadcast": "00:00:00:00:00:00",
          "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host",
                         "label": "lo", "valid_life_time": 4294967295,
                         "preferred_life_time": 4294967295}]}
    out = [lo]
    for n, (name, mac, v4, kind) in enumerate(addresses, start=2):
        out.append(iface(n, name, mac, v4, kind))
    return json.dumps(out) + "\n"


HOSTS = {
    # name: (server address in SSH_CONNECTION, machine id, host key, interfaces)
    "gpu1": ("10.0.0.5", "4c0e2b6f9a1d4e3f8b7a6c5d4e3f2a1b",
             "SHA256:Zk3r8pQwVh2mB9xTn4LsYc7uJd1eGf6aHk0oPi5vRtE",
             [("enp5s0", "02:00:00:00:01:05", "10.0.0.5", None),
              ("wg0", None, "100.64.0.5", "wireguard")]),
    "gpu2": ("10.0.0.6", "9d8c7b6a5f4e4d3c8b2a19f8e7d6c5b4",
             "SHA256:Qm7tX2wLp9sVb4nHc8rKz1yJf6uDg3eAo5iWq0xNvPk",
             [("enp5s0", "02:00:00:00:02:05", "10.0.0.6", None),
              ("wg0", None, "100.64.0.6", "wireguard")]),
}


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    names = {"gpu1": "gpu1", "gpu1-ts": "gpu1", "gpu2": "gpu2"}
    for name, machine in names.items():
        address, machine_id, host_key, interfaces = HOSTS[machine]
        if name == "gpu1-ts":
            address = "100.64.0.5"  # the same machine, reached over its VPN address
        d = OUT / name
        d.mkdir(parents=True)
        files = {
            "uname_-s.out": "Linux\n",
            "printenv_SSH_CONNECTION.out": f"10.0.0.200 51234 {address} 22\n",
            "cat_etc_os-release.out": OS_RELEASE,
            "cat_proc_meminfo.out": MEMINFO,
            "cat_sys_class_dmi_id_product_name.out": "ProArt X670E-CREATOR WIFI\n",
            "ip_-j_-d_addr_show.out": ip_addr(interfaces),
            "cat_etc_machine-id.out": machine_id + "\n",
            "ssh-host-key": host_key + "\n",
        }
        for f, text in files.items():
            (d / f).write_text(text)


if __name__ == "__main__":
    main()
