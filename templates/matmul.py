"""Tensor-parallel matmul on numpy over clustercomm: the job of python-matmul.yaml.

C = A @ B with A of shape (M, K) and B of shape (K, N), split along K, the standard partition
of a row-parallel layer: rank r holds columns lo..hi-1 of A and the matching rows lo..hi-1 of
B (lo = K*r//size, hi = K*(r+1)//size), computes its partial product A[:, lo:hi] @ B[lo:hi, :]
of the full shape (M, N), and all_reduce sums the partial products into C on every rank. A
and B come from --seed, so every rank also computes the single-process product A @ B itself
and checks C against it, twice:

  float64 with integer values in [-8, 8]: every product and every partial sum is an integer
  of magnitude at most 64*K, far below 2**53, so it is exact in float64 in any summation
  order (numpy's BLAS blocking, the shards, the all-reduce's fold): C must equal A @ B
  exactly, byte for byte.

  float32 with standard normal values: rounding differs with the order, so C is checked
  against A @ B elementwise within 2 * gamma_n * (|A| @ |B|), gamma_n = n*u / (1 - n*u),
  u = 2**-24 (float32's unit roundoff), n = K + size. Any order of summing a length-K dot
  product is within gamma_K * (|a| . |b|) of the exact value (Higham, "Accuracy and Stability
  of Numerical Algorithms", 3.1); the sharded sum is a summation of depth at most
  ceil(K/size) + size <= n, the reference of depth K <= n, so the two are within twice that
  of each other. The bound holds for every input, and it is tight enough to catch a real
  fault: a missing or doubled shard moves an element by about sqrt(K/size), hundreds of
  times the bound.

Every rank prints one line for each check that passed:
  rank R: float64 C (MxN, K=K in S shards) equals the single-process product exactly (sha256 HEX)
  rank R: float32 C (MxN) within 2*gamma_n*(|A|@|B|) of the single-process product: ...
A rank whose check fails prints `rank R: FAIL: ...` on stderr and exits 1; a failed collective
exits 3 with clustercomm's error.
"""

import argparse
import hashlib
import os
import sys

import numpy as np

import clustercomm


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=256, help="rows of A and C")
    p.add_argument("--k", type=int, default=1024, help="columns of A, rows of B (split)")
    p.add_argument("--n", type=int, default=192, help="columns of B and C")
    p.add_argument("--seed", type=int, default=19, help="seed of A and B")
    args = p.parse_args()

    try:
        with clustercomm.init() as comm:
            return check(comm, args)
    except clustercomm.Error as e:
        rank = os.environ.get("CLUSTERCOMM_RANK", "?")
        print(f"rank {rank}: FAIL: clustercomm.{type(e).__name__}: {e}", file=sys.stderr)
        return 3


def sharded_product(comm, a, b):
    """A @ B from this rank's column shard of A and row shard of B, all_reduced."""
    k = a.shape[1]
    lo, hi = k * comm.rank // comm.size, k * (comm.rank + 1) // comm.size
    partial = np.ascontiguousarray(a[:, lo:hi] @ b[lo:hi, :])  # what this rank contributes
    comm.all_reduce(partial, out=partial)  # in place: the sum over every rank
    return partial


def check(comm, args):
    rank, size, m, k, n = comm.rank, comm.size, args.m, args.k, args.n
    if k < size:
        print(f"rank {rank}: FAIL: --k {k} is less than the world size {size}: a rank would "
              f"hold no shard", file=sys.stderr)
        return 1
    rng = np.random.default_rng(args.seed)  # the same A and B on every rank
    ok = True

    a = rng.integers(-8, 9, (m, k)).astype(np.float64)
    b = rng.integers(-8, 9, (k, n)).astype(np.float64)
    c, want = sharded_product(comm, a, b), a @ b
    digest = hashlib.sha256(want.tobytes()).hexdigest()[:16]
    if c.tobytes() == want.tobytes():
        print(f"rank {rank}: float64 C ({m}x{n}, K={k} in {size} shards) equals the "
              f"single-process product exactly (sha256 {digest})")
    else:
        bad = np.argwhere(c != want)
        i, j = (int(v) for v in bad[0])
        got, expected = float(c[i, j]), float(want[i, j])
        print(f"rank {rank}: FAIL: float64 C differs from the single-process product in "
              f"{len(bad)} of {m * n} elements; first C[{i},{j}] = {got!r}, expected "
              f"{expected!r}", file=sys.stderr)
        ok = False

    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c, want = sharded_product(comm, a, b), a @ b
    u, terms = 2.0**-24, k + size
    gamma = terms * u / (1 - terms * u)
    bound = 2 * gamma * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    err = np.abs(c.astype(np.float64) - want.astype(np.float64))
    worst = float(np.max(err / bound))
    if worst <= 1.0:
        print(f"rank {rank}: float32 C ({m}x{n}) within 2*gamma_n*(|A|@|B|) of the "
              f"single-process product: max |error| {float(err.max()):.3g}, at most "
              f"{worst:.3g} of the bound (n={terms})")
    else:
        i, j = np.unravel_index(int(np.argmax(err / bound)), err.shape)
        got, expected = float(c[i, j]), float(want[i, j])
        print(f"rank {rank}: FAIL: float32 C[{i},{j}] = {got!r} is {err[i, j]:.3g} from the "
              f"single-process {expected!r}, beyond the bound {bound[i, j]:.3g} "
              f"(2*gamma_n*(|A|@|B|), n={terms})", file=sys.stderr)
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
