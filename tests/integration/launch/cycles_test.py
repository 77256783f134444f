"""50 launch/teardown cycles on a 4-host lab leave zero stray processes and zero job files on
every host. Odd cycles end early (rank 1 fails, the others are torn down), even ones normally."""
import time

from lablib import Lab, fail, launch

CYCLES = 50

with Lab("y") as lab:
    ok = lab.job("ok", command=["true"])
    bad = lab.job("bad", command={"shell": "[ \"$CLUSTERCOMM_RANK\" = 1 ] && exit 5; exec sleep 30"},
                  timeouts={"grace": 2})
    t0 = time.time()
    for i in range(CYCLES):
        r = launch(bad if i % 2 else ok, timeout=60)
        want = 4 if i % 2 else 0
        if r.returncode != want:
            fail(f"cycle {i}: exit {r.returncode}, expected {want}\n{r.stderr}")
    took = time.time() - t0
    if not lab.wait_no_strays(3):
        fail(f"after {CYCLES} cycles, processes left: {lab.strays()}")
    strays = sum(len(v) for v in lab.strays().values())
    dirs = lab.job_dirs()
    if dirs:
        fail(f"after {CYCLES} cycles, job directories left: {dirs}")
    print(f"{CYCLES} cycles in {took:.1f} s ({took / CYCLES:.2f} s each): {strays} stray processes, "
          f"{len(dirs)} job directories on {len(lab.hosts)} hosts")
print("PASS")
