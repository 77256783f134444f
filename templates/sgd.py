"""Data-parallel SGD on numpy over clustercomm: the job of python-sgd.yaml.

Linear regression, y = X w* + noise, on a synthetic dataset: every rank draws its own shard of
--samples rows (seeded by --seed and its rank, so a run is reproducible), and every rank starts
from the same weights (zeros). Each step a rank computes the gradient of the mean squared error
on its shard, all_reduce sums the gradients (and the losses, in the same buffer), each rank
divides by the world size and takes the same step. clustercomm's results are bit-identical on
every rank, so the weights must stay bit-identical on every rank without ever being sent.

At the end every rank checks, and prints one line for each:
  rank R: loss L0 -> L1 after S steps (went down)
  rank R: weights identical to rank 0 (sha256 HEX, F float64)
by all_gather of every rank's weights and a comparison of their bytes with rank 0's. A rank
whose check fails prints `rank R: FAIL: ...` on stderr and exits 1 (the job then fails, exit 4,
its summary naming the rank); a failed collective exits 3 with clustercomm's error.

Run by `clusterctl launch templates/python-sgd.yaml` (runtime clustercomm sets CLUSTERCOMM_RANK,
_SIZE, _COORDINATOR and _TOKEN), or as one process alone (a world of size 1).
SGD_CORRUPT_RANK=R (a test hook) flips the last bit of rank R's first weight before the check.
"""

import argparse
import hashlib
import os
import sys

import numpy as np

import clustercomm


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=4096, help="rows of the dataset per rank")
    p.add_argument("--features", type=int, default=64, help="weights to learn")
    p.add_argument("--steps", type=int, default=100, help="SGD steps")
    p.add_argument("--lr", type=float, default=0.05, help="learning rate")
    p.add_argument("--seed", type=int, default=19, help="seed of the dataset")
    args = p.parse_args()

    try:
        with clustercomm.init() as comm:
            return train(comm, args)
    except clustercomm.Error as e:
        rank = os.environ.get("CLUSTERCOMM_RANK", "?")
        print(f"rank {rank}: FAIL: clustercomm.{type(e).__name__}: {e}", file=sys.stderr)
        return 3


def train(comm, args):
    rank, size, f = comm.rank, comm.size, args.features
    w_true = np.random.default_rng(args.seed).standard_normal(f)  # the same on every rank
    rng = np.random.default_rng([args.seed, rank])  # this rank's own shard
    x = rng.standard_normal((args.samples, f))
    y = x @ w_true + 0.01 * rng.standard_normal(args.samples)

    w = np.zeros(f)
    buf = np.empty(f + 1)  # [gradient..., loss]: one all_reduce per step

    def global_loss_and_grad(w):
        r = x @ w - y
        buf[:f] = (2.0 / args.samples) * (x.T @ r)
        buf[f] = np.mean(r * r)
        comm.all_reduce(buf, out=buf)  # in place: the sum over every rank
        buf[:] /= size
        return buf[f], buf[:f]

    first, _ = global_loss_and_grad(w)
    first = float(first)
    for _ in range(args.steps):
        _, grad = global_loss_and_grad(w)
        w -= args.lr * grad
    last = float(global_loss_and_grad(w)[0])

    corrupt = os.environ.get("SGD_CORRUPT_RANK", "")
    if corrupt == str(rank):
        print(f"rank {rank}: SGD_CORRUPT_RANK={corrupt}: flipping the last bit of weight 0",
              file=sys.stderr)
        w.view(np.uint64)[0] ^= 1

    ok = True
    if last < first:
        print(f"rank {rank}: loss {first:.6g} -> {last:.6g} after {args.steps} steps (went down)")
    else:
        print(f"rank {rank}: FAIL: the loss did not go down: {first:.6g} -> {last:.6g} after "
              f"{args.steps} steps (try a smaller --lr)", file=sys.stderr)
        ok = False

    every = comm.all_gather(w).reshape(size, f)  # row r: rank r's weights
    mine, zero = every[rank].tobytes(), every[0].tobytes()
    digest = hashlib.sha256(zero).hexdigest()[:16]
    if mine == zero:
        print(f"rank {rank}: weights identical to rank 0 (sha256 {digest}, {f} float64)")
    else:
        i = int(np.flatnonzero(every[rank].view(np.uint64) != every[0].view(np.uint64))[0])
        here, there = float(every[rank][i]), float(every[0][i])
        print(f"rank {rank}: FAIL: weights differ from rank 0's: sha256 "
              f"{hashlib.sha256(mine).hexdigest()[:16]} here, {digest} on rank 0; first at "
              f"weight {i}: {here!r} here, {there!r} on rank 0", file=sys.stderr)
        ok = False
    if rank == 0:
        differ = [r for r in range(size) if every[r].tobytes() != zero]
        if differ:
            print(f"rank 0: ranks {differ} hold weights that differ from rank 0's",
                  file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
