"""Cases from public reports of mpirun / torchrun / mlx.launch users, on a 3-host lab:
hosts named by the operator's SSH config only (`hosts: [node1, node2, node3]` with `Host node1 /
HostName ADDRESS` in a -F config; the same machine under two aliases). The coordinator the ranks
get is the address ssh reaches, never the alias (before: CLUSTERCOMM_COORDINATOR=node1:32323,
"cannot resolve 'node1'" on every rank, exit 4). A job of `local` (this machine, no SSH) and hosts
reached by SSH gives every rank the same environment: a variable set in the launching shell
(`OMP_NUM_THREADS=8 clusterctl launch ...`) reached the local rank alone (openpmix/prrte#304's
asymmetry: the ranks SSH starts get only their session's variables)."""
import json
import os
import re
import subprocess

from lablib import CLUSTERCTL, Lab, PERF, fail


def alias_config(lab, aliases):
    """An SSH config of `aliases` (alias -> lab host) beside the lab's own entries."""
    lab_dir = os.path.expanduser(f"~/.local/state/clusterctl/labs/{lab.name}")
    state = os.environ.get("XDG_STATE_HOME")
    if state:
        lab_dir = f"{state}/clusterctl/labs/{lab.name}"
    with open(f"{lab_dir}/ssh_config") as f:
        text = f.read()
    entries = dict(re.findall(r"^Host (\S+)\n  HostName (\S+)$", text, re.M))
    path = f"{lab.workdir}/aliases_config"
    with open(path, "w") as f:
        for alias, host in aliases.items():
            f.write(f"Host {alias}\n  HostName {entries[host]}\n  User root\n"
                    f"  IdentityFile {lab_dir}/id_ed25519\n  IdentitiesOnly yes\n"
                    f"  UserKnownHostsFile {lab_dir}/known_hosts\n"
                    f"  StrictHostKeyChecking yes\n\n")
    return path, entries


with Lab("s", hosts=3) as lab:
    config, addresses = alias_config(lab, {"node1": "h1", "node2": "h2", "node3": "h3",
                                           "node1b": "h1"})
    shell = ('echo "COORD=$CLUSTERCOMM_COORDINATOR"; '
             "exec ./clustercomm-perf -o all_reduce -b 8 -e 1K -f 4 -n 2 -c 1")
    for tag, hosts in (("aliases", ["node1", "node2", "node3"]),
                       ("twice", ["node1", "node2", "node1b"])):
        job = f"{lab.workdir}/{tag}.yaml"
        with open(job, "w") as f:
            json.dump({"name": f"{lab.name}-{tag}", "hosts": hosts, "logs": lab.logs(tag),
                       "command": {"shell": shell}, "env": {"CLUSTERCOMM_TIMEOUT_MS": "20000"},
                       "timeouts": {"startup": 60, "total": 90, "grace": 3},
                       "upload": [{"src": PERF, "dest": "clustercomm-perf", "mode": "0755"}]},
                      f)
        r = subprocess.run([CLUSTERCTL, "-F", config, "launch", job], capture_output=True,
                           text=True, timeout=150)
        if r.returncode != 0:
            fail(f"{tag}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        want = f"COORD={addresses['h1']}:32323"
        coords = re.findall(r"^\[\d+ \S+\] (COORD=.*)$", r.stdout, re.M)
        if coords != [want] * 3:
            fail(f"{tag}: coordinators {coords}, want 3 x {want}\n{r.stdout}")
        print(f"{tag}: hosts {hosts} by SSH alias: coordinator {want}, exit 0")
    lab.check_clean("aliases")

    job = f"{lab.workdir}/mixed.yaml"
    with open(job, "w") as f:
        json.dump({"name": f"{lab.name}-mixed", "hosts": ["local", "node2"], "runtime": "none",
                   "logs": lab.logs("mixed"), "env": {"CC_JOB_KNOB": "from-env"},
                   "command": {"shell": 'echo "KNOB=${CC_SHELL_KNOB:-unset} '
                                        'JOB=${CC_JOB_KNOB:-unset}"'},
                   "timeouts": {"startup": 60, "total": 90, "grace": 3}}, f)
    r = subprocess.run([CLUSTERCTL, "-F", config, "launch", job], capture_output=True,
                       text=True, timeout=150, env={**os.environ, "CC_SHELL_KNOB": "shell"})
    if r.returncode != 0:
        fail(f"mixed: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    seen = sorted(re.findall(r"^\[(\d+) \S+\] (KNOB=.*)$", r.stdout, re.M))
    want = [("0", "KNOB=unset JOB=from-env"), ("1", "KNOB=unset JOB=from-env")]
    if seen != want:
        fail(f"mixed: ranks saw {seen}, want {want}\n{r.stdout}\n{r.stderr}")
    if "note: the ranks on local get the environment an SSH session has" not in r.stderr:
        fail(f"mixed: no note on the local ranks' environment\n{r.stderr}")
    print("mixed: local and node2 see the same environment (the job's env, not the shell's)")
print("PASS")
