#!/usr/bin/env python3
"""Compares a lab's live namespaces with its lab.json and with expected port counts.

usage: check_lab.py LAB_JSON [--ports N | --ports h1=N,h2=M,...] [--free N | --free h1=N,...]
                    [--cables N]

Checks, per host: the namespace has lo, en0 (with the recorded IPv4 address) and exactly the
recorded tbK ports, cabled and free; each tbK has the recorded MAC and no IPv4 address; a free
port is up without carrier (an unplugged receptacle); the two ends of every
recorded cable are peers of one veth pair (each end's link_index is the other's ifindex).
"""
import argparse
import json
import subprocess
import sys


def ip_json(netns, *args):
    out = subprocess.run(["ip", "-j", "-n", netns, *args], check=True, capture_output=True,
                         text=True, timeout=10).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lab_json")
    ap.add_argument("--ports", help="N for every host, or h1=N,h2=M")
    ap.add_argument("--free", help="free ports: N for every host, or h1=N,h2=M")
    ap.add_argument("--cables", type=int)
    a = ap.parse_args()
    lab = json.load(open(a.lab_json))
    problems = []
    hosts = {h["name"]: h for h in lab["hosts"]}

    for option, field in ((a.ports, "ports"), (a.free, "free_ports")):
        if not option:
            continue
        if "=" in option:
            want = {k: int(v) for k, v in (p.split("=") for p in option.split(","))}
        else:
            want = {h: int(option) for h in hosts}
        for h, n in want.items():
            have = len(hosts[h].get(field, []))
            if have != n:
                problems.append(f"{h}: lab.json has {have} {field}, want {n}")
    if a.cables is not None and len(lab["cables"]) != a.cables:
        problems.append(f"lab.json has {len(lab['cables'])} cables, want {a.cables}")

    links = {}  # (host, ifname) -> link
    for name, h in hosts.items():
        ls = {l["ifname"]: l for l in ip_json(h["namespace"], "link", "show")}
        addrs = {l["ifname"]: l.get("addr_info", []) for l in ip_json(h["namespace"], "addr", "show")}
        free = h.get("free_ports", [])
        want_names = {"lo", "en0", *h["ports"], *free}
        if set(ls) != want_names:
            problems.append(f"{name}: interfaces {sorted(ls)}, want {sorted(want_names)}")
        v4 = [x["local"] for x in addrs.get("en0", []) if x["family"] == "inet"]
        if v4 != [h["address"]]:
            problems.append(f"{name}: en0 has IPv4 {v4}, want {h['address']}")
        for p in h["ports"]:
            if any(x["family"] == "inet" for x in addrs.get(p, [])):
                problems.append(f"{name}:{p} has an IPv4 address before provisioning")
            if p in ls and "UP" not in ls[p]["flags"]:
                problems.append(f"{name}:{p} is not up")
        for p in free:  # an unplugged receptacle: up, no carrier
            if p in ls and ("UP" not in ls[p]["flags"] or "LOWER_UP" in ls[p]["flags"]):
                problems.append(f"{name}:{p} is a free port but flags are {ls[p]['flags']}")
        for ifname, l in ls.items():
            links[(name, ifname)] = l

    for c in lab["cables"]:
        a_end, b_end = c["a"], c["b"]
        la = links.get((a_end["host"], a_end["port"]))
        lb = links.get((b_end["host"], b_end["port"]))
        label = f"{a_end['host']}:{a_end['port']}-{b_end['host']}:{b_end['port']}"
        if la is None or lb is None:
            problems.append(f"cable {label}: an end is missing")
            continue
        if la["address"] != a_end["mac"] or lb["address"] != b_end["mac"]:
            problems.append(f"cable {label}: MACs {la['address']}/{lb['address']} differ from "
                            f"lab.json {a_end['mac']}/{b_end['mac']}")
        if la.get("link_index") != lb["ifindex"] or lb.get("link_index") != la["ifindex"]:
            problems.append(f"cable {label}: the ends are not one veth pair")

    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    if not problems:
        print(f"{lab['name']}: {len(hosts)} hosts, {len(lab['cables'])} cables match lab.json")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
