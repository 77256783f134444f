#!/usr/bin/env python3
"""Compares what `clusterctl discover` found (a cluster state file) with a lab's truth (lab.json).

usage: check_discover.py LAB_JSON CLUSTER_JSON [--hosts h1,h2,...]

With --hosts, only those hosts and the cables between them are expected. Checks: the schema;
exactly the expected hosts, in order, each with its recorded management address and with ports
= its cabled plus free receptacles; its machine_id = the lab's own for it (lab.json: the file
`ip netns exec` bind-mounts over /etc/machine-id); its ssh_host_key = the SHA256 fingerprint of
its hosts/hN/ssh_host_ed25519_key.pub (as `ssh-keygen -l` prints it); exactly the lab's cables as
unordered port pairs (parallel cables counted), each seen from both ends by neighbour probing; no
problems.
"""
import argparse
import base64
import collections
import hashlib
import json
import os
import sys


def fingerprint(pub_file):
    """SHA256:BASE64 (unpadded) of an OpenSSH public key file's key blob."""
    blob = base64.b64decode(open(pub_file).read().split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lab_json")
    ap.add_argument("cluster_json")
    ap.add_argument("--hosts")
    a = ap.parse_args()
    lab = json.load(open(a.lab_json))
    state = json.load(open(a.cluster_json))
    want_hosts = a.hosts.split(",") if a.hosts else [h["name"] for h in lab["hosts"]]
    problems = []

    if state.get("schema") != "clusterctl.cluster/1":
        problems.append(f"schema is {state.get('schema')!r}")
    got_hosts = [h["host"] for h in state["hosts"]]
    if got_hosts != want_hosts:
        problems.append(f"hosts {got_hosts}, want {want_hosts}")
    if state["problems"]:
        problems.append(f"problems: {state['problems']}")
    truth = {h["name"]: h for h in lab["hosts"]}
    for h in state["hosts"]:
        t = truth.get(h["host"])
        if t is None:
            continue
        if h["management_address"] != t["address"]:
            problems.append(f"{h['host']}: management address {h['management_address']}, "
                            f"want {t['address']}")
        if h.get("machine_id") != t.get("machine_id") or not t.get("machine_id"):
            problems.append(f"{h['host']}: machine_id {h.get('machine_id')!r}, "
                            f"want {t.get('machine_id')!r}")
        key = fingerprint(os.path.join(lab["dir"], "hosts", h["host"], "ssh_host_ed25519_key.pub"))
        if h.get("ssh_host_key") != key:
            problems.append(f"{h['host']}: ssh_host_key {h.get('ssh_host_key')!r}, want {key!r}")
        ports = [p["interface"]["name"] for p in h["ports"]]
        want_ports = t["ports"] + t.get("free_ports", [])
        if ports != want_ports:
            problems.append(f"{h['host']}: ports {ports}, want {want_ports}")

    def key(a_host, a_port, b_host, b_port):
        return tuple(sorted([(a_host, a_port), (b_host, b_port)]))

    want = collections.Counter(
        key(c["a"]["host"], c["a"]["port"], c["b"]["host"], c["b"]["port"]) for c in lab["cables"]
        if c["a"]["host"] in want_hosts and c["b"]["host"] in want_hosts)
    got = collections.Counter(
        key(c["a"]["host"], c["a"]["interface"], c["b"]["host"], c["b"]["interface"])
        for c in state["cables"])
    if got != want:
        problems.append(f"cables differ: missing {sorted((want - got).elements())}, "
                        f"unexpected {sorted((got - want).elements())}")
    for c in state["cables"]:
        label = f"{c['a']['host']}:{c['a']['interface']}-{c['b']['host']}:{c['b']['interface']}"
        if not (c["seen_from_a"] and c["seen_from_b"]):
            problems.append(f"cable {label} not seen from both ends")
        if c["sources"] != ["neighbour"]:
            problems.append(f"cable {label} sources {c['sources']}, want ['neighbour']")

    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)
    print(f"discover matches the lab: {len(got_hosts)} hosts, {sum(got.values())} cables")


if __name__ == "__main__":
    main()
