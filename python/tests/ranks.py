"""What runs inside the rank processes of the tests (conftest.World): serve() holds one
Communicator and runs the tasks the test process sends, by name; each task takes the
communicator first and returns something picklable (arrays, tuples of results)."""

import os
import signal
import time
import traceback

import numpy as np

PLACEMENTS = ("new", "out", "inplace")


def serve(conn, rank, size, coordinator, timeout_ms, opts):
    import clustercomm
    try:
        comm = clustercomm.Communicator(rank=rank, size=size, coordinator=coordinator,
                                        timeout_ms=timeout_ms, **opts)
    except BaseException as e:  # noqa: BLE001 - reported to the test
        conn.send(("err", f"{type(e).__name__}: {e}"))
        return
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            break
        if msg is None:
            break
        name, args = msg
        try:
            conn.send(("ok", globals()[name](comm, *args)))
        except BaseException as e:  # noqa: BLE001
            conn.send(("err", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    comm.close()
    conn.send(("closed", None))


def pack(a):
    """What a rank returns for a result: small arrays as they are, large ones as (shape,
    dtype, sha1 of the bytes), so megabytes are not pickled back for every case."""
    a = np.asarray(a)
    if a.nbytes <= 4096:
        return a.copy()
    import hashlib
    return (a.shape, str(a.dtype), hashlib.sha1(a.tobytes()).hexdigest())


def dtype_of(name):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def pattern(rank, shape, dtype_name, op):
    """Rank `rank`'s input: small integers, exact in every dtype, summed or multiplied over
    up to 4 ranks (sum <= 44, product <= 81: inside int8)."""
    count = int(np.prod(shape)) if shape else 1
    base = (np.arange(count, dtype=np.int64) * 3 + rank * 5) % 11
    if op == "sum":
        v = base + 1
    elif op == "prod":
        v = base % 3 + 1
    else:
        v = base - 5 if dtype_of(dtype_name).kind in "if" or dtype_name == "bfloat16" else base
    return v.astype(np.float64).astype(dtype_of(dtype_name)).reshape(shape)


def reductions(comm, coll, dtype_name, shapes, ops):
    """all_reduce or reduce_scatter for every op x shape x placement: {(op, shape, where): result}."""
    n, r = comm.size, comm.rank
    out = {}
    for op in ops:
        for shape in shapes:
            for where in PLACEMENTS:
                x = pattern(r, shape, dtype_name, op)
                if coll == "all_reduce":
                    if where == "new":
                        res = comm.all_reduce(x, op=op)
                    elif where == "out":
                        o = np.full_like(x, 7)
                        res = comm.all_reduce(x, op, out=o)
                        assert res is o
                    else:
                        res = comm.all_reduce(x, op=op, out=x)
                        assert res is x
                else:
                    k = shape[0] // n
                    if where == "new":
                        res = comm.reduce_scatter(x, op=op)
                    elif where == "out":
                        o = np.full_like(x[:k], 7)
                        res = comm.reduce_scatter(x, op, out=o)
                        assert res is o
                    else:
                        block = x[r * k:(r + 1) * k]
                        res = comm.reduce_scatter(x, op=op, out=block)
                        assert res is block
                out[(op, shape, where)] = pack(res)
    return out


def all_gathers(comm, dtype_name, shapes):
    n, r = comm.size, comm.rank
    out = {}
    for shape in shapes:
        for where in PLACEMENTS:
            x = pattern(r, shape, dtype_name, "sum")
            if where == "new":
                res = comm.all_gather(x)
            elif where == "out":
                o = np.zeros((n * shape[0],) + shape[1:] if shape else (n,), x.dtype)
                res = comm.all_gather(x, out=o)
                assert res is o
            else:
                k = shape[0] if shape else 1
                o = np.zeros((n * k,) + shape[1:], x.dtype)
                o[r * k:(r + 1) * k] = x.reshape((k,) + shape[1:])
                mine = o[r * k:(r + 1) * k]
                if not shape:
                    mine = mine.reshape(())
                res = comm.all_gather(mine, out=o)
                assert res is o
            out[(shape, where)] = pack(res)
    return out


def broadcasts(comm, dtype_name, shapes, root):
    r = comm.rank
    out = {}
    for shape in shapes:
        for where in PLACEMENTS:
            x = pattern(root, shape, dtype_name, "sum") if r == root else \
                np.zeros(shape, dtype_of(dtype_name))
            if where == "new":
                res = comm.broadcast(x, root)
            elif where == "out":
                o = np.full_like(x, 3)
                res = comm.broadcast(x, root=root, out=o)
                assert res is o
            else:
                res = comm.broadcast(x, root, out=x)
                assert res is x
            out[(shape, where)] = pack(res)
    return out


def send_recv(comm, dtype_name, count):
    """A ring: rank r sends its pattern to r+1 and receives r-1's, once into out= and once
    into a new array (evens send first, odds receive first)."""
    n, r = comm.size, comm.rank
    to, frm = (r + 1) % n, (r - 1) % n
    x = pattern(r, (count,), dtype_name, "sum") if dtype_name != "bool" else \
        (np.arange(count) % (r + 2) == 0)
    dt = x.dtype
    got = []
    for form in ("out", "new"):
        if r % 2 == 0:
            comm.send(x, to)
        if form == "out":
            o = np.empty(count, dt)
            res = comm.recv(o, frm)
            assert res is o
        else:
            res = comm.recv((count,), dtype_name if dtype_name == "bfloat16" else dt, peer=frm)
        if r % 2 == 1:
            comm.send(x, peer=to)
        got.append(pack(res))
    return got


def bad_arguments(comm):
    """Rank 0 makes every mistake (each must raise before anything is sent); then both ranks
    all_reduce, whose result proves no stray message went out."""
    seen = []
    if comm.rank == 0:
        import clustercomm
        x = np.arange(8, dtype=np.float32)
        ro = np.zeros(8, np.float32)
        ro.flags.writeable = False
        ro16 = np.zeros(16, np.float32)
        ro16.flags.writeable = False
        two_d = np.zeros((4, 4), np.float32)
        cases = {
            "non-contiguous x": lambda: comm.all_reduce(two_d[:, 1]),
            "reversed x": lambda: comm.all_reduce(x[::-1]),
            "list x": lambda: comm.all_reduce([1.0, 2.0]),
            "bool x": lambda: comm.all_reduce(np.zeros(3, bool)),
            "complex x": lambda: comm.all_reduce(np.zeros(3, np.complex64)),
            "read-only out": lambda: comm.all_reduce(x, out=ro),
            "out dtype": lambda: comm.all_reduce(x, out=np.zeros(8, np.float64)),
            "out shape": lambda: comm.all_reduce(x, out=np.zeros((2, 4), np.float32)),
            "non-contiguous out": lambda: comm.all_reduce(x, out=np.zeros(16, np.float32)[::2]),
            "overlapping out": lambda: comm.all_reduce(x[:4], out=x[2:6]),
            "op name": lambda: comm.all_reduce(x, op="avg"),
            "op type": lambda: comm.all_reduce(x, op=1),
            "reduce_scatter rows": lambda: comm.reduce_scatter(np.zeros(3, np.float32)),
            "reduce_scatter 0-d": lambda: comm.reduce_scatter(np.float32(1)),
            "reduce_scatter out": lambda: comm.reduce_scatter(x, out=np.zeros(8, np.float32)),
            "all_gather out": lambda: comm.all_gather(x, out=np.zeros(8, np.float32)),
            "all_to_all rows": lambda: comm.all_to_all(np.zeros(3, np.float32)),
            "all_to_all overlapping out": lambda: comm.all_to_all(x[:4], out=x[2:6]),
            "all_gather read-only out": lambda: comm.all_gather(x, out=ro16),
            "broadcast root": lambda: comm.broadcast(x, 2),
            "broadcast negative root": lambda: comm.broadcast(x, root=-1),
            "send to self": lambda: comm.send(x, 0),
            "send to nobody": lambda: comm.send(x, 7),
            "send list": lambda: comm.send([1, 2], 1),
            "recv read-only": lambda: comm.recv(ro, 1),
            "recv shape": lambda: comm.recv((-1,), "float32", 1),
            "recv shape type": lambda: comm.recv("abc", np.float32, 1),
            "recv dtype": lambda: comm.recv((2,), "no-such-dtype", 1),
        }
        for label, call in cases.items():
            try:
                call()
                seen.append((label, None, "no error"))
            except Exception as e:  # noqa: BLE001
                seen.append((label, type(e).__name__, str(e)))
        assert not comm.broken
        del clustercomm
    res = comm.all_reduce(np.full(5, comm.rank + 1, np.int32))
    return seen, res


def killed_rank(comm, victim):
    """The victim dies by SIGKILL after a barrier; the others then all_reduce and must get
    PeerLostError naming it: (kind, ranks, message, seconds, broken, next call's error)."""
    comm.barrier()
    if comm.rank == victim:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.2)
    t0 = time.monotonic()
    try:
        comm.all_reduce(np.ones(1000, np.float32))
        return ("no error",)
    except Exception as e:  # noqa: BLE001
        took = time.monotonic() - t0
        try:
            comm.barrier()
            nxt = "no error"
        except Exception as e2:  # noqa: BLE001
            nxt = type(e2).__name__
        return type(e).__name__, getattr(e, "ranks", None), str(e), took, comm.broken, nxt


def silent_peer(comm):
    """Rank 0 waits for a message rank 1 never sends (rank 1 returns at once)."""
    if comm.rank != 0:
        return None
    t0 = time.monotonic()
    try:
        comm.recv((4,), np.float32, 1)
        return ("no error",)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, e.ranks, str(e), time.monotonic() - t0, comm.broken


def interrupted_recv(comm):
    """Rank 0 blocks in recv until the test sends it SIGINT: (what, when caught, broken, next)."""
    try:
        comm.recv((4,), np.float32, 1)
        return ("no error",)
    except KeyboardInterrupt:
        caught = time.monotonic()
    try:
        comm.barrier()
        nxt = "no error"
    except Exception as e:  # noqa: BLE001
        nxt = type(e).__name__
    return "KeyboardInterrupt", caught, comm.broken, nxt


def barrier_after(comm, seconds):
    time.sleep(seconds)
    try:
        comm.barrier()
        return ("no error",)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, e.ranks, str(e)


def leak_check(comm, calls):
    """calls all_reduces (in place, new, out=) and argument errors; what grew meanwhile."""
    import gc
    import sys
    import tracemalloc
    x = np.ones(16, np.float32)
    o = np.empty_like(x)
    bad = x[::2]

    def one_round(i):
        comm.all_reduce(x, out=x)
        comm.all_reduce(x, out=o)
        comm.all_reduce(x)
        if i % 10 == 0:
            try:
                comm.all_reduce(bad)
            except ValueError:
                pass

    for i in range(100):  # warm-up: caches, numpy's free lists
        one_round(i)
    gc.collect()
    refs = (sys.getrefcount(x), sys.getrefcount(o), sys.getrefcount(bad))
    objects = len(gc.get_objects())
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(calls):
        one_round(i)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return (refs, (sys.getrefcount(x), sys.getrefcount(o), sys.getrefcount(bad)),
            objects, len(gc.get_objects()), grown)


def broken_leak_check(comm, calls):
    """On a broken communicator: BrokenError `calls` times; what grew."""
    import gc
    import tracemalloc
    for _ in range(50):
        try:
            comm.barrier()
        except Exception:  # noqa: BLE001
            pass
    gc.collect()
    objects = len(gc.get_objects())
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kinds = set()
    for _ in range(calls):
        try:
            comm.barrier()
        except Exception as e:  # noqa: BLE001
            kinds.add(type(e).__name__)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return kinds, objects, len(gc.get_objects()), grown


def random_all_reduce(comm, count):
    """float32 sums of random data (rank-seeded): the fold order matters for the bits."""
    x = np.random.default_rng(comm.rank).standard_normal(count).astype(np.float32)
    return pack(comm.all_reduce(x)), pack(comm.all_reduce(x.astype(np.float16)))


def info(comm):
    return comm.rank, comm.size, comm.transport, comm.topology, comm.broken, repr(comm)


def all_to_alls(comm, dtype_name, shapes):
    """Block p of rank r's x is pattern(r * n + p): rank r's result block p must be
    pattern(p * n + r)."""
    n, r = comm.size, comm.rank
    out = {}
    for shape in shapes:
        k = shape[0] // n
        blocks = [pattern(r * n + p, (k,) + shape[1:], dtype_name, "sum") for p in range(n)]
        for where in PLACEMENTS:
            x = np.concatenate(blocks)
            if where == "new":
                res = comm.all_to_all(x)
            elif where == "out":
                o = np.zeros_like(x)
                res = comm.all_to_all(x, out=o)
                assert res is o
            else:
                res = comm.all_to_all(x, out=x)
                assert res is x
            out[(shape, where)] = pack(res)
    return out


def split_groups(comm, steps):
    """Pairs {0, 1}, {2, 3}, ... as tensor-parallel groups (keyed by -rank: reversed), the
    even ranks as a second group (odd ranks: NO_COLOR, None), each used in turn with the
    world; returns what every call gave."""
    import clustercomm
    n, r = comm.size, comm.rank
    tp = comm.split(r // 2, -r)
    evens = comm.split(0 if r % 2 == 0 else clustercomm.NO_COLOR)
    got = {"tp": (tp.rank, tp.size), "evens": None if evens is None else (evens.rank, evens.size)}
    for step in range(steps):
        x = np.full(5, 100 * r + step, np.int64)
        got[("tp sum", step)] = tp.all_reduce(x).tolist()
        got[("world sum", step)] = comm.all_reduce(x).tolist()
        if evens is not None:
            got[("evens gather", step)] = evens.all_gather(np.int32(r + step)).tolist()
        got[("tp all_to_all", step)] = tp.all_to_all(
            np.arange(tp.size, dtype=np.int32) + 10 * r).tolist()
        comm.barrier()
    tp.close()
    if evens is not None:
        evens.close()
    return got
