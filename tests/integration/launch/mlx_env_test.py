"""MLX jobs get exactly the environment mlx.launch gives
(docs/platform.md#mlx-environment-variables): a stand-in `python` on the lab hosts' PATH prints
its MLX_* variables and the content of the files they name, for an MLX hostfile of the 4 lab
hosts, with the backends jaccl, jaccl-ring and ring. The expected values are computed here from
the hostfile alone."""
import json
import os
import subprocess

from lablib import CLUSTERCTL, Lab, fail

STAND_IN = """#!/bin/sh
# A stand-in for python: what an MLX program would see.
env | grep '^MLX_' | sort
[ -n "$MLX_IBV_DEVICES" ] && printf 'FILE_IBV=%s\\n' "$(cat "$MLX_IBV_DEVICES")"
[ -n "$MLX_HOSTFILE" ] && printf 'FILE_HOSTFILE=%s\\n' "$(cat "$MLX_HOSTFILE")"
echo "ARGS=$*"
"""

PORT = 32323


def hostfile(backend):
    hosts = []
    for i in range(4):
        if backend == "ring":
            hosts.append({"ssh": f"h{i + 1}", "ips": [f"10.98.{i}.1", f"10.98.{i}.2"], "rdma": []})
        else:
            rdma = [None if j == i else
                    (f"rdma_tb{j + 1}" if (i + j) % 2 else [f"rdma_tb{j + 1}", f"rdma_tb{j + 5}"])
                    for j in range(4)]
            if backend == "jaccl-ring":  # only the ring neighbours' cells
                rdma = [c if (j - i) % 4 in (1, 3) else None for j, c in enumerate(rdma)]
            hosts.append({"ssh": f"h{i + 1}", "ips": [f"10.99.0.{i + 1}"], "rdma": rdma})
    return {"backend": backend, "envs": ["MLX_METAL_FAST_SYNCH=1"], "hosts": hosts}


def expected(hf, rank):
    """What mlx.launch sets for rank `rank` (docs/platform.md#mlx-environment-variables), plus the
    files' content parsed."""
    env = {"MLX_RANK": str(rank), "MLX_METAL_FAST_SYNCH": "1"}
    files = {}
    if hf["backend"] in ("jaccl", "jaccl-ring"):
        env["MLX_JACCL_COORDINATOR"] = f"{hf['hosts'][0]['ips'][0]}:{PORT}"
        files["IBV"] = [h["rdma"] for h in hf["hosts"]]
        if hf["backend"] == "jaccl-ring":
            env["MLX_JACCL_RING"] = "1"
    else:
        port, ring = PORT, []
        for h in hf["hosts"]:
            ring.append([f"{ip}:{port + k}" for k, ip in enumerate(h["ips"])])
            port += len(h["ips"])
        files["HOSTFILE"] = ring
    return env, files


with Lab("m") as lab:
    bindir = f"{lab.workdir}/bin"
    os.makedirs(bindir)
    with open(f"{bindir}/python", "w") as f:
        f.write(STAND_IN)
    os.chmod(f"{bindir}/python", 0o755)
    for backend, runtime in (("jaccl", "mlx-jaccl"), ("jaccl-ring", "mlx-jaccl-ring"),
                             ("ring", "mlx-ring")):
        hf = hostfile(backend)
        hf_path = f"{lab.workdir}/hosts-{backend}.json"
        with open(hf_path, "w") as f:
            json.dump(hf, f)
        name = f"mlx-{backend}"
        job = lab.job(name, cluster=f"hostfile:{hf_path}", runtime=runtime,
                      command=["python", "train.py", "--lr", "0.1"],
                      env={"PATH": f"{bindir}:/usr/bin:/bin"})
        # The lab has no RDMA devices: the hostfile's names are made up, so only
        # --unchecked-hostfile gets past the comparison with the cabling (checked below).
        r = subprocess.run([CLUSTERCTL, "--lab", lab.name, "launch", "--unchecked-hostfile", job],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            fail(f"{name}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        for rank in range(4):
            with open(f"{lab.latest(name)}/rank-{rank}.out") as f:
                lines = f.read().splitlines()
            env = dict(l.split("=", 1) for l in lines if l.startswith("MLX_"))
            files = {l.split("=", 1)[0][5:]: json.loads(l.split("=", 1)[1])
                     for l in lines if l.startswith("FILE_")}
            want_env, want_files = expected(hf, rank)
            for k in ("MLX_IBV_DEVICES", "MLX_HOSTFILE"):  # paths: checked through their content
                env.pop(k, None)
            if env != want_env:
                fail(f"{name} rank {rank}: MLX_* {env} != mlx.launch's {want_env}")
            if files != want_files:
                fail(f"{name} rank {rank}: files {files} != mlx.launch's {want_files}")
            if "ARGS=train.py --lr 0.1" not in lines:
                fail(f"{name} rank {rank}: arguments not passed: {lines}")
        print(f"{name}: 4 ranks see mlx.launch's variables and files")
    # Without the flag, a hostfile whose addresses are no host's (the last, mlx-ring: made-up
    # ips) starts nothing: each named, before the cabling is compared.
    r = subprocess.run([CLUSTERCTL, "--lab", lab.name, "launch", job], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 1 or "hosts[0] (h1): ips[0] = 10.98.0.1 is not an address of h1" \
            not in r.stderr or "nothing was started" not in r.stderr:
        fail(f"a hostfile naming addresses the hosts lack: exit {r.returncode}\n{r.stderr}")
print("PASS")
