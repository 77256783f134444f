"""Every collective x every dtype x n = 1, 2, 4 ranks (processes on loopback TCP), new result /
out= / in place, small and large (past the one-shot all_reduce's 64 KiB), each checked
against the exact expected array and bit-identical on every rank."""

import numpy as np
import pytest

import ranks

DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
          "uint8", "uint16", "uint32", "uint64"]
OPS = ["sum", "prod", "min", "max"]


def expected_reduction(n, shape, dtype_name, op):
    xs = [ranks.pattern(r, shape, dtype_name, op).astype(np.float64) for r in range(n)]
    fold = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max}[op]
    return fold(np.stack(xs), axis=0).astype(ranks.dtype_of(dtype_name))


def same_bits(got, want):
    """got: what a rank returned (ranks.pack); want: the expected array."""
    want = ranks.pack(want)
    if isinstance(got, tuple) or isinstance(want, tuple):
        return got == want
    return got.shape == want.shape and got.dtype == want.dtype and got.tobytes() == want.tobytes()


def shapes_for(n, dtype_name):
    big = (70_000 // ranks.dtype_of(dtype_name).itemsize + 1) * 2 * n  # > 64 KiB, odd-ish
    return [(4 * n,), (2 * n, 3), (big,)]


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_all_reduce(world, dtype_name):
    n = world.n
    results = world.run("reductions", "all_reduce", dtype_name, shapes_for(n, dtype_name), OPS)
    for key in results[0]:
        op, shape, where = key
        want = expected_reduction(n, shape, dtype_name, op)
        for r in range(n):
            got = results[r][key]
            assert same_bits(got, want), f"rank {r} {key}: {got} != {want}"


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_reduce_scatter(world, dtype_name):
    n = world.n
    results = world.run("reductions", "reduce_scatter", dtype_name, shapes_for(n, dtype_name),
                        ["sum", "max"])
    for key in results[0]:
        op, shape, where = key
        full = expected_reduction(n, shape, dtype_name, op)
        k = shape[0] // n
        for r in range(n):
            assert same_bits(results[r][key], full[r * k:(r + 1) * k]), f"rank {r} {key}"


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_all_gather(world, dtype_name):
    n = world.n
    shapes = [(), (3,), (2, 5), (40_001,)]
    results = world.run("all_gathers", dtype_name, shapes)
    for key in results[0]:
        shape, where = key
        parts = [ranks.pattern(r, shape, dtype_name, "sum") for r in range(n)]
        want = np.stack(parts) if not shape else np.concatenate(parts)
        for r in range(n):
            assert same_bits(results[r][key], want), f"rank {r} {key}"


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_broadcast(world, dtype_name):
    n = world.n
    root = n - 1
    results = world.run("broadcasts", dtype_name, [(5,), (3, 4), (300_001,)], root)
    for key in results[0]:
        shape, where = key
        want = ranks.pattern(root, shape, dtype_name, "sum")
        for r in range(n):
            assert same_bits(results[r][key], want), f"rank {r} {key}"


@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16", "int64", "uint8", "bool"])
@pytest.mark.parametrize("count", [3, 1_000_003])
def test_send_recv_ring(worlds, dtype_name, count):
    for n in (2, 4):
        results = worlds(n).run("send_recv", dtype_name, count)
        for r in range(n):
            frm = (r - 1) % n
            want = ranks.pattern(frm, (count,), dtype_name, "sum") if dtype_name != "bool" \
                else (np.arange(count) % (frm + 2) == 0)
            for got in results[r]:
                assert same_bits(got, want), f"n={n} rank {r} from {frm}"


def test_random_floats_bit_identical_on_every_rank(worlds):
    """Float sums of random data depend on the fold order: every rank must still get the
    same bits (one rank computes each element)."""
    for n in (2, 4):
        results = worlds(n).run("random_all_reduce", 100_003)
        assert all(res == results[0] for res in results), f"n={n}: {results}"


def test_info(world):
    infos = world.run("info")
    for r, (rank, size, transport, topology, broken, rep) in enumerate(infos):
        assert (rank, size, topology, broken) == (r, world.n, "mesh", False)
        # Ranks on one host: shared memory (CLUSTERCOMM_TRANSPORT unset, so auto).
        assert transport == ("none (world size 1)" if world.n == 1
                             else f"shm ({world.n} ranks on this host)")
        assert rep == f"<clustercomm.Communicator rank {r} of {world.n}, {transport}>"


@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16", "int8", "uint64"])
def test_all_to_all(world, dtype_name):
    n = world.n
    shapes = [(n,), (2 * n, 3), (shapes_for(n, dtype_name)[2][0],)]
    results = world.run("all_to_alls", dtype_name, shapes)
    for key in results[0]:
        shape, where = key
        k = shape[0] // n
        for r in range(n):
            want = np.concatenate([ranks.pattern(p * n + r, (k,) + shape[1:], dtype_name, "sum")
                                   for p in range(n)])
            assert same_bits(results[r][key], want), f"rank {r} {key}"


def test_split(world):
    n = world.n
    results = world.run("split_groups", 3)
    for r in range(n):
        got = results[r]
        lo, hi = (r // 2) * 2, min((r // 2) * 2 + 1, n - 1)
        members = sorted({lo, hi}, reverse=True)  # keyed by -rank
        assert got["tp"] == (members.index(r), len(members))
        evens = list(range(0, n, 2))
        assert got["evens"] == (None if r % 2 else (evens.index(r), len(evens)))
        for step in range(3):
            assert got[("tp sum", step)] == [sum(100 * q + step for q in members)] * 5
            assert got[("world sum", step)] == [sum(100 * q + step for q in range(n))] * 5
            if r % 2 == 0:
                assert got[("evens gather", step)] == [q + step for q in evens]
            # Block p of member q's input is 10 * q + p; this rank (tp rank i) gets block i of
            # every member, in tp rank order.
            i = members.index(r)
            assert got[("tp all_to_all", step)] == [10 * q + i for q in members]
