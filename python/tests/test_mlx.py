"""MLX arrays (mlx==0.32.4, CPU backend; python/tests/requirements-optional.txt).

What MLX's DLPack export is, as these tests find it: `__dlpack__` always returns an unversioned
"dltensor" capsule (also when asked for max_version=(1, 0)), device (1, 0) = kDLCPU, pointing at
the array's own buffer (a slice: its offset in the parent's), evaluating a lazy array first.
An unversioned capsule has no read-only flag, so clustercomm takes an MLX array as `out=` too
and writes into its buffer in place (python/README.md says what that means for MLX).

Then: our all_reduce equals `mx.distributed.all_sum` on MLX's own ring backend, n = 2 and 3
processes on loopback, each holding both an MLX ring group and a clustercomm Communicator."""

import ctypes
import json
import multiprocessing as mp
import os
import socket
import traceback

import numpy as np
import pytest

import clustercomm

mx = pytest.importorskip(
    "mlx.core", reason="MLX is not installed here (python/tests/requirements-optional.txt: "
    "mlx==0.32.4 and mlx-cpu==0.32.4; tests/python_venv.sh notes why pip left it out)")


class _DLTensor(ctypes.Structure):  # DLPack's DLTensor (dlpack.h), the head of DLManagedTensor
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


def dlpack_export(a):
    """(capsule name, device, address of the first element) of what a.__dlpack__() gives."""
    cap = a.__dlpack__()
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    name = get_name(cap).decode()
    assert name == "dltensor", f"MLX now exports a {name!r} capsule: update this test"
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    t = _DLTensor.from_address(get(cap, b"dltensor"))
    return name, (t.device_type, t.device_id), t.data + t.byte_offset


@pytest.fixture(scope="module")
def one():
    with clustercomm.Communicator() as c:  # size 1: the result is x, through the same checks
        yield c


def test_mlx_dlpack_export_is_an_unversioned_cpu_capsule_of_the_arrays_own_buffer():
    big = mx.arange(16, dtype=mx.float32)
    mx.eval(big)
    name, device, addr = dlpack_export(big)
    assert (name, device, big.__dlpack_device__()) == ("dltensor", (1, 0), (1, 0))
    view = np.asarray(big)  # MLX's buffer protocol: writable, the same memory
    assert view.flags.writeable and view.ctypes.data == addr
    # Asked for a versioned capsule (which could carry a read-only flag), MLX still gives
    # the unversioned one: clustercomm cannot tell a read-only MLX array, and none is.
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    assert get_name(big.__dlpack__(max_version=(1, 0))) == b"dltensor"
    _, _, slice_addr = dlpack_export(big[1:9])
    assert slice_addr == addr + 4


def test_all_reduce_reads_the_mlx_buffer_itself(one):
    """The binding's overlap check tells where it saw x: out= a numpy view of the MLX buffer
    is accepted only at x's own address (in place) and refused one element off."""
    big = mx.arange(16, dtype=mx.float32)
    x = big[1:9]  # a view into big's buffer, 4 bytes in
    mx.eval(big, x)
    base = np.asarray(big)
    assert dlpack_export(x)[2] == base.ctypes.data + 4
    with pytest.raises(ValueError, match="overlaps x without being x itself"):
        one.all_reduce(x, out=base[0:8])
    with pytest.raises(ValueError, match="overlaps x without being x itself"):
        one.all_reduce(x, out=base[2:10])
    got = one.all_reduce(x, out=base[1:9])  # exactly x's memory: in place, no copy of x
    assert np.array_equal(got, np.arange(1, 9, dtype=np.float32))
    res = one.all_reduce(x)
    assert type(res) is np.ndarray and res.ctypes.data != base.ctypes.data + 4


def test_all_reduce_out_mlx_array_is_written_in_place(one):
    x = mx.arange(8, dtype=mx.int32) * 3
    mx.eval(x)
    addr = dlpack_export(x)[2]
    o = mx.zeros(8, dtype=mx.int32)
    mx.eval(o)
    o_addr = dlpack_export(o)[2]
    assert one.all_reduce(x, out=o) is o
    assert dlpack_export(o)[2] == o_addr and o.tolist() == list(range(0, 24, 3))
    assert one.all_reduce(x, out=x) is x and dlpack_export(x)[2] == addr


def test_lazy_mlx_array_is_evaluated_by_its_export(one):
    x = mx.arange(6, dtype=mx.float32) * 2 + 1  # a graph, not yet computed
    assert np.array_equal(one.all_reduce(x), np.arange(6, dtype=np.float32) * 2 + 1)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int8", "int32",
                                   "int64", "uint8", "uint16", "uint64"])
def test_every_mlx_dtype_clustercomm_reduces(one, dtype):
    x = (mx.arange(5) + 1).astype(getattr(mx, dtype))
    res = one.all_reduce(x)
    assert res.dtype.name == dtype and res.astype(np.float64).tolist() == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("dtype", ["bool_", "complex64"])
def test_mlx_dtypes_clustercomm_refuses(one, dtype):
    with pytest.raises(TypeError, match="x: dtype (bool|complex64) is not supported"):
        one.all_reduce(mx.zeros(3, dtype=getattr(mx, dtype)))


# --- against MLX's ring backend ---------------------------------------------------------------

# (dtype, kind): "int": small integers, exact in every dtype and in any order of summing;
# "random": standard normal floats, whose sum depends on the order of the additions.
CASES = [("float32", "int"), ("float16", "int"), ("bfloat16", "int"), ("int32", "int"),
         ("int64", "int"), ("uint8", "int"), ("float32", "random"), ("float16", "random")]
COUNTS = [7, 100_003]  # one-shot (< 64 KiB) and chunked on our side


def ring_inputs(rank, dtype, kind, count):
    if kind == "int":
        v = (np.arange(count, dtype=np.int64) * 7 + rank * 3) % 13
    else:
        v = np.random.default_rng(rank * 1000 + count).standard_normal(count)
    return v


def ring_rank(conn, rank, n, hostfile, coordinator):
    """One rank: MLX's ring group from MLX_RANK + MLX_HOSTFILE, and a Communicator; for each
    case (ours, MLX's) as float64 arrays (bfloat16 and float16 widen exactly)."""
    try:
        os.environ.update(MLX_RANK=str(rank), MLX_HOSTFILE=hostfile)
        import mlx.core as mx_
        group = mx_.distributed.init(backend="ring", strict=True)
        assert (group.rank(), group.size()) == (rank, n)
        out = {}
        with clustercomm.Communicator(rank=rank, size=n, coordinator=coordinator,
                                      timeout_ms=30000) as comm:
            for dtype, kind in CASES:
                for count in COUNTS:
                    x = mx_.array(ring_inputs(rank, dtype, kind, count)).astype(
                        getattr(mx_, dtype))
                    mx_.eval(x)
                    ours = comm.all_reduce(x)
                    theirs = mx_.distributed.all_sum(x, group=group)
                    mx_.eval(theirs)
                    assert ours.dtype.name == dtype and theirs.dtype == getattr(mx_, dtype)
                    out[(dtype, kind, count)] = (
                        ours.astype(np.float64),
                        np.asarray(theirs.astype(mx_.float64 if dtype != "bfloat16"
                                                 else mx_.float32)).astype(np.float64),
                        np.asarray(x.astype(mx_.float32)).astype(np.float64))
        conn.send(("ok", out))
    except BaseException as e:  # noqa: BLE001 - reported to the test
        conn.send(("err", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))


def free_ports(count):
    """`count` consecutive free loopback ports below the ephemeral range (32768..): MLX's ring
    connects before its peer listens, and a connect to an ephemeral-range port on the same
    address can take that very port as its source (a TCP self-connect), so the peer's bind
    then fails with EADDRINUSE."""
    rng = np.random.default_rng()
    for _ in range(50):
        base = int(rng.integers(20000, 32000 - count))
        socks = []
        try:
            for p in range(base, base + count):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return list(range(base, base + count))
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free loopback ports in 20000..32000")


def run_ring(n, tmp_path):
    ports = free_ports(n + 1)
    hostfile = tmp_path / f"mlx-hostfile-{n}.json"
    hostfile.write_text(json.dumps([[f"127.0.0.1:{p}"] for p in ports[:n]]))
    coordinator = f"127.0.0.1:{ports[n]}"
    ctx = mp.get_context("spawn")
    conns, procs = [], []
    for r in range(n):
        parent, child = ctx.Pipe()
        p = ctx.Process(target=ring_rank, args=(child, r, n, str(hostfile), coordinator),
                        daemon=True)
        p.start()
        child.close()
        conns.append(parent)
        procs.append(p)
    results, errors = [], []
    try:
        for r, c in enumerate(conns):
            if not c.poll(120):
                errors.append(f"rank {r}: no answer within 120 s")
                continue
            try:
                status, value = c.recv()
            except EOFError:
                status, value = "died", f"exit code {procs[r].exitcode}"
            if status != "ok":
                errors.append(f"rank {r}: {value}")
            results.append(value)
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join()
    assert not errors, "\n".join(errors)
    return results


UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float16": 2.0 ** -11}


@pytest.mark.parametrize("n", [2, 3], ids=lambda n: f"n={n}")
def test_all_reduce_equals_mlx_ring_all_sum(n, tmp_path):
    results = run_ring(n, tmp_path)
    for key in results[0]:
        dtype, kind, count = key
        inputs = [res[key][2] for res in results]
        for r, res in enumerate(results):
            ours, theirs, _ = res[key]
            assert ours.shape == theirs.shape == (count,)
            # Bit-identical on every rank, on both sides.
            assert np.array_equal(ours, results[0][key][0]), f"{key}: rank {r} differs (ours)"
            assert np.array_equal(theirs, results[0][key][1]), f"{key}: rank {r} differs (MLX)"
        ours, theirs, _ = results[0][key]
        if kind == "int" or n == 2:
            # Integers are exact in any order; two summands give a + b = b + a in IEEE.
            bad = np.flatnonzero(ours != theirs)
            assert bad.size == 0, (f"{key}: {bad.size} elements differ, first at "
                                   f"{bad[0]}: ours {ours[bad[0]]}, MLX {theirs[bad[0]]}")
        else:
            # Three floats summed in two orders: each result is within (n - 1) roundings of
            # the exact sum, so they differ by at most 2 (n - 1) u sum|x_i| (u: unit roundoff).
            bound = 2 * (n - 1) * UNIT_ROUNDOFF[dtype] * np.sum(np.abs(inputs), axis=0)
            diff = np.abs(ours - theirs)
            worst = int(np.argmax(diff - bound))
            assert np.all(diff <= bound), (f"{key}: element {worst}: ours {ours[worst]}, MLX "
                                           f"{theirs[worst]}, bound {bound[worst]}")
            # Both are the sum: against the float64 sum of the rounded inputs, same bound.
            exact = np.sum(inputs, axis=0)
            assert np.all(np.abs(ours - exact) <= bound), f"{key}: ours is not the sum"
