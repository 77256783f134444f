"""One rank of bench/compare-python: float32 sum all_reduce from Python, timed per call.

    python py_allreduce_perf.py {clustercomm,mlx,mpi} [-b 8] [-e 64M] [-f 8] [-n 50] [-w -1]
                                 --out FILE   ("{rank}" in FILE: this rank)

Backends (each joins its world from the environment the driver sets):
  clustercomm  clustercomm.init() (CLUSTERCOMM_RANK/SIZE/COORDINATOR/TOKEN); numpy float32 in,
               a preallocated out= (the figure is the call, not an allocation). Also times the
               default out-of-place call (a new result array each call) at the smallest size.
  mlx          mx.distributed.init(backend="ring", strict=True) (MLX_RANK, MLX_HOSTFILE);
               mx.distributed.all_sum(x) and mx.eval of the result inside the timed loop.
  mpi          mpi4py (started by mpirun): MPI.COMM_WORLD.Allreduce(x, y, op=MPI.SUM) on numpy.
Sizes: -b to -e by factor -f, plus -e itself when the factor skips it; iterations per size
as bench/sizes.h: K = clamp(256 MiB / size, 5, -n) after max(2, K / 5) warm-ups (or -w).
Writes this rank's "SIZE US" lines (mean microseconds per call over the K timed calls;
"default SIZE US" for the allocating call) to --out, "{rank}" in it replaced by this rank;
the driver takes the max over ranks.
Errors go to stderr with the rank and the backend; exit 1.
"""

import argparse
import sys
import time


def parse_size(s):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    mult = units.get(s[-1:].lower(), 1)
    try:
        return int(float(s[:-1] if mult > 1 else s) * mult)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r}: expected bytes, e.g. 8, 4K, 64M") from None


def sizes(lo, hi, factor):
    out, s = [], lo
    while s <= hi:
        out.append(s)
        if factor < 2:
            break
        s *= factor
    if out and out[-1] != hi and hi > lo:
        out.append(hi)
    return out


def iters_for(size, n):
    return max(5, min(n, (256 << 20) // max(size, 1)))


def warmup_for(size, n, w):
    return w if w >= 0 else max(2, iters_for(size, n) // 5)


def timed(call, k):
    t0 = time.perf_counter()
    for _ in range(k):
        call()
    return (time.perf_counter() - t0) * 1e6 / k


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("backend", choices=["clustercomm", "mlx", "mpi"])
    p.add_argument("-b", "--minbytes", type=parse_size, default=8)
    p.add_argument("-e", "--maxbytes", type=parse_size, default=64 << 20)
    p.add_argument("-f", "--stepfactor", type=int, default=8)
    p.add_argument("-n", "--iters", type=int, default=50)
    p.add_argument("-w", "--warmup_iters", type=int, default=-1)
    p.add_argument("--out", required=True, help="file for this rank's SIZE US lines")
    a = p.parse_args()
    if a.minbytes < 4 or a.minbytes % 4 or a.maxbytes < a.minbytes:
        p.error(f"-b {a.minbytes} -e {a.maxbytes}: need 4 <= b <= e, b a multiple of 4 (float32)")

    import numpy as np

    rank = "?"
    try:
        if a.backend == "clustercomm":
            import clustercomm
            comm = clustercomm.init()
            rank, barrier = comm.rank, comm.barrier
            tok = np.zeros(1, np.float32)

            def make(count):
                x, y = np.ones(count, np.float32), np.empty(count, np.float32)
                return lambda: comm.all_reduce(x, out=y)

            def make_default(count):
                x = np.ones(count, np.float32)
                return lambda: comm.all_reduce(x)
        elif a.backend == "mlx":
            import mlx.core as mx
            world = mx.distributed.init(backend="ring", strict=True)
            rank = world.rank()
            tok = mx.zeros(1, mx.float32)

            def barrier():
                mx.eval(mx.distributed.all_sum(tok, group=world))

            def make(count):
                x = mx.ones(count, mx.float32)
                mx.eval(x)
                return lambda: mx.eval(mx.distributed.all_sum(x, group=world))
            make_default = None
        else:
            from mpi4py import MPI
            w = MPI.COMM_WORLD
            rank, barrier = w.Get_rank(), w.Barrier

            def make(count):
                x, y = np.ones(count, np.float32), np.empty(count, np.float32)
                return lambda: w.Allreduce(x, y, op=MPI.SUM)
            make_default = None

        lines = []
        for size in sizes(a.minbytes, a.maxbytes, a.stepfactor):
            count, k = size // 4, iters_for(size, a.iters)
            variants = [("", make(count))]
            if make_default is not None and size == a.minbytes:
                variants.append(("default ", make_default(count)))
            for label, call in variants:
                for _ in range(warmup_for(size, a.iters, a.warmup_iters)):
                    call()
                barrier()
                lines.append(f"{label}{size} {timed(call, k):.3f}\n")
        barrier()
        if a.backend == "clustercomm":
            comm.close()
        with open(a.out.replace("{rank}", str(rank)), "w") as f:
            f.writelines(lines)
    except Exception as e:  # one line naming the rank and backend, then exit 1
        print(f"py_allreduce_perf: {a.backend} rank {rank}: {type(e).__name__}: {e}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
