"""A real MLX program for mlx_ring_test.py: joins MLX's ring backend from MLX_RANK and
MLX_HOSTFILE (as `clusterctl launch` with runtime mlx-ring and `mlx.launch --backend ring` set
them), all_sums three arrays and prints, per rank, one HOSTFILE line (the file's content) and
one RESULT line. Exit 0 when every sum is right, 2 when one is not.

--fail-rank R: rank R prints FAILING and exits 3 right after init, while the others wait in
their first all_sum (how each launcher ends a job whose rank failed); those that see its ring
connection close fail with exit 1, so the cause is told from its consequences by the status.

--loop: after the sums, prints LOOPING and all_sums for ever (a job whose cable is cut: its
ranks block on the dead socket, idle)."""
import argparse
import json
import os
import sys
import time

import mlx.core as mx

p = argparse.ArgumentParser()
p.add_argument("--fail-rank", type=int, default=-1)
p.add_argument("--loop", action="store_true")
args = p.parse_args()

t0 = time.monotonic()
group = mx.distributed.init(backend="ring", strict=True)
rank, size = group.rank(), group.size()
with open(os.environ["MLX_HOSTFILE"]) as f:
    print(f"HOSTFILE rank={rank} {json.dumps(json.load(f))}", flush=True)
if rank == args.fail_rank:
    print(f"FAILING rank={rank}", flush=True)
    sys.exit(3)

ok, sums = True, []
for dtype, count in ((mx.float32, 1000), (mx.int32, 1 << 20), (mx.float16, 7)):
    base = mx.arange(count) % 97
    x = (base + rank + 1).astype(dtype)  # exact in every dtype: at most 96 + 4 per rank
    y = mx.distributed.all_sum(x, group=group)
    want = (base * size + size * (size + 1) // 2).astype(dtype)
    ok = ok and bool(mx.array_equal(y, want))
    sums.append(f"{dtype}:{mx.sum(y.astype(mx.int64)).item()}")
print(f"RESULT rank={rank} size={size} ok={ok} sums={','.join(sums)} "
      f"seconds={time.monotonic() - t0:.2f}", flush=True)
if args.loop:
    print(f"LOOPING rank={rank}", flush=True)
    while True:
        mx.eval(mx.distributed.all_sum(mx.ones(1 << 16), group=group))
        time.sleep(0.005)
sys.exit(0 if ok else 2)
