"""The package itself: version, init() from CLUSTERCOMM_* and from MLX's ring variables,
the context manager and close(), the exception classes, bfloat16 without ml_dtypes."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import clustercomm
from conftest import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_version_is_the_projects():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        line = next(ln for ln in f if ln.startswith("project(clusterctl VERSION"))
    assert clustercomm.__version__ == line.split()[2]


def test_size_one_world_copies_and_closes():
    with clustercomm.Communicator() as c:
        assert (c.rank, c.size, c.transport, c.broken) == (0, 1, "none (world size 1)", False)
        x = np.arange(6, dtype=np.float64).reshape(2, 3)
        y = c.all_reduce(x, op="max")
        assert y is not x and np.array_equal(y, x) and y.dtype == x.dtype
        assert np.array_equal(c.all_gather(x), x) and c.all_gather(np.int8(3)).shape == (1,)
        c.barrier()
    assert c.closed and repr(c) == "<clustercomm.Communicator (closed)>"
    with pytest.raises(ValueError, match="closed"):
        c.barrier()
    c.close()  # idempotent


def test_zero_copy_option_and_release_buffer():
    # Every mode is accepted (None: the platform's default); a size-1 world has no transport
    # to register with, and release_buffer is a local no-op that takes any array (and names a
    # bad argument like every call).
    for mode in (None, "message", "cached", "off", True, False):
        with clustercomm.Communicator(ibv_zero_copy=mode) as c:
            x = np.arange(1 << 16, dtype=np.float32)
            assert np.array_equal(c.all_reduce(x), x)
            assert c.release_buffer(x) is None
            c.release_buffer(np.zeros(0, np.int8))
            with pytest.raises(TypeError):
                c.release_buffer("not an array")
    with pytest.raises(ValueError, match="ibv_zero_copy"):
        clustercomm.Communicator(ibv_zero_copy="yes")
    with pytest.raises(TypeError, match="ibv_zero_copy"):
        clustercomm.Communicator(ibv_zero_copy=1)


def test_shm_single_copy_min_reaches_the_communicator():
    # The explicit constructor takes what CLUSTERCOMM_SHM_SINGLE_COPY_MIN gives from_env: the
    # tuning the communicator reports carries it (0, off, by default), beside the others.
    with clustercomm.Communicator() as c:
        assert c.tuning["shm_single_copy_min"] == 0
        assert c.tuning["one_shot_max_bytes"] == 65536 and c.tuning["window_chunks"] == 8
    with clustercomm.Communicator(shm_single_copy_min=1 << 20, spin_us=50) as c:
        assert c.tuning["shm_single_copy_min"] == 1 << 20 and c.tuning["spin_us"] == 50
    with clustercomm.Communicator(shm_single_copy_min=1 << 40) as c:
        assert c.tuning["shm_single_copy_min"] == 1 << 40
    with pytest.raises(ValueError, match=r"^shm_single_copy_min: -1 is negative: give a number "
                                         r"of bytes .*, or 0 for never$"):
        clustercomm.Communicator(shm_single_copy_min=-1)
    with pytest.raises(ValueError, match=r"^shm_single_copy_min: 1099511627777 is not in \[0, "):
        clustercomm.Communicator(shm_single_copy_min=(1 << 40) + 1)
    with pytest.raises(TypeError, match="shm_single_copy_min"):
        clustercomm.Communicator(shm_single_copy_min="1M")


def test_shm_single_copy_min_is_used_by_two_ranks_on_shm():
    # Two ranks on this host over shared memory, each with single copy from 1 KiB on: the
    # all_reduce of 64 KiB is right, and each reports its own value.
    port = free_port()
    outs = run_ranks(lambda r: {"R": str(r)}, 2, f"""
        import os, numpy as np, clustercomm
        r = int(os.environ["R"])
        with clustercomm.Communicator(rank=r, size=2, coordinator="127.0.0.1:{port}",
                                      transport="shm", shm_single_copy_min=1024,
                                      timeout_ms=20000) as c:
            y = c.all_reduce(np.full(1 << 14, r + 1, dtype=np.float32))
            assert np.all(y == 3), y[:4]
            print("ok", c.transport.split(" ")[0], c.tuning["shm_single_copy_min"])
        """)
    for rc, out in outs:
        assert rc == 0 and out.split()[-3:] == ["ok", "shm", "1024"], out


def run_ranks(env_for_rank, n, code):
    procs = []
    for r in range(n):
        env = dict(os.environ)
        for k in list(env):
            if k.startswith(("CLUSTERCOMM_", "MLX_")):
                del env[k]
        env.update(env_for_rank(r))
        procs.append(subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        outs.append((p.returncode, out))
    return outs


INIT_JOB = """
    import numpy as np, clustercomm
    with clustercomm.init() as c:
        s = c.all_reduce(np.array([c.rank + 1.0]))
        print(c.rank, c.size, c.topology, c.transport, int(s[0]))
"""


def test_init_from_clustercomm_variables():
    port = free_port()
    outs = run_ranks(lambda r: {"CLUSTERCOMM_RANK": str(r), "CLUSTERCOMM_SIZE": "3",
                                "CLUSTERCOMM_COORDINATOR": f"127.0.0.1:{port}",
                                "CLUSTERCOMM_TOKEN": "pytest", "CLUSTERCOMM_TIMEOUT_MS": "30000"},
                     3, INIT_JOB)
    for r, (rc, out) in enumerate(outs):
        # Three ranks on one host: shared memory (CLUSTERCOMM_TRANSPORT unset).
        assert rc == 0 and out.strip() == f"{r} 3 mesh shm (3 ranks on this host) 6", out


def test_init_from_mlx_ring_variables(tmp_path):
    ports = [free_port() for _ in range(3)]
    hostfile = tmp_path / "hosts.json"
    hostfile.write_text(json.dumps([[f"127.0.0.1:{p}"] for p in ports]))
    outs = run_ranks(lambda r: {"MLX_RANK": str(r), "MLX_HOSTFILE": str(hostfile)}, 3, INIT_JOB)
    for r, (rc, out) in enumerate(outs):
        assert rc == 0 and out.strip() == f"{r} 3 ring shm (3 ranks on this host) 6", out


def test_init_names_a_malformed_variable():
    outs = run_ranks(lambda r: {"CLUSTERCOMM_RANK": "0", "CLUSTERCOMM_SIZE": "two"}, 1, """
        import clustercomm
        try:
            clustercomm.init()
        except clustercomm.InvalidArgumentError as e:
            print(type(e).__name__, e.ranks, e)
    """)
    rc, out = outs[0]
    assert rc == 0 and out.startswith("InvalidArgumentError () environment variable "
                                      "CLUSTERCOMM_SIZE is 'two'"), out


def test_exception_classes():
    assert issubclass(clustercomm.TimeoutError, TimeoutError)
    assert issubclass(clustercomm.PeerLostError, ConnectionError)
    assert issubclass(clustercomm.InvalidArgumentError, ValueError)
    assert issubclass(clustercomm.SystemCallError, OSError)
    for name in ("InvalidArgumentError", "TimeoutError", "PeerLostError", "ProtocolError",
                 "AuthError", "WorldError", "SystemCallError", "BrokenError",
                 "InterruptedCallError"):
        cls = getattr(clustercomm, name)
        assert issubclass(cls, clustercomm.Error)
        e = cls("message", [1, 2])
        assert str(e) == "message" and e.ranks == (1, 2)


def test_bfloat16_without_ml_dtypes_is_a_clear_error():
    outs = run_ranks(lambda r: {}, 1, """
        import sys, threading
        sys.modules["ml_dtypes"] = None  # as if not installed
        import numpy as np, socket, clustercomm
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
        comms = [None, None]
        def make(r):
            comms[r] = clustercomm.Communicator(rank=r, size=2, coordinator=f"127.0.0.1:{port}")
        ts = [threading.Thread(target=make, args=(r,)) for r in range(2)]
        [t.start() for t in ts]; [t.join() for t in ts]
        try:
            comms[0].recv((2,), "bfloat16", 1)
        except ImportError as e:
            print("ImportError:", e)
        t = threading.Thread(target=comms[1].barrier); t.start(); comms[0].barrier(); t.join()
        print("still usable:", not comms[0].broken and not comms[1].broken)
        ts = [threading.Thread(target=c.close) for c in comms]  # each close waits for the other
        [t.start() for t in ts]; [t.join() for t in ts]
    """)
    rc, out = outs[0]
    assert rc == 0, out
    assert "ImportError: bfloat16 arrays are numpy arrays of ml_dtypes.bfloat16, and the " \
           "ml_dtypes package is not installed: pip install ml_dtypes" in out
    assert "still usable: True" in out


def test_second_thread_on_a_busy_communicator_is_refused():
    outs = run_ranks(lambda r: {}, 1, """
        import threading, time, socket, numpy as np, clustercomm
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
        comms = [None, None]
        def make(r):
            comms[r] = clustercomm.Communicator(rank=r, size=2, coordinator=f"127.0.0.1:{port}")
        ts = [threading.Thread(target=make, args=(r,)) for r in range(2)]
        [t.start() for t in ts]; [t.join() for t in ts]
        kids = [None, None]  # split from the same world: they share its one-thread rule
        def split(r):
            kids[r] = comms[r].split(0, r)
        ts = [threading.Thread(target=split, args=(r,)) for r in range(2)]
        [t.start() for t in ts]; [t.join() for t in ts]
        t = threading.Thread(target=comms[0].recv, args=((4,), np.float32, 1)); t.start()
        time.sleep(0.3)
        try:
            comms[0].barrier()
        except RuntimeError as e:
            print("RuntimeError:", e)
        try:
            kids[0].barrier()
        except RuntimeError as e:
            print("child RuntimeError:", e)
        comms[1].send(np.zeros(4, np.float32), 0); t.join()
        [k.close() for k in kids]
        print("ok", comms[0].broken)
        ts = [threading.Thread(target=c.close) for c in comms]  # each close waits for the other
        [t.start() for t in ts]; [t.join() for t in ts]
    """)
    rc, out = outs[0]
    assert rc == 0, out
    assert "RuntimeError: clustercomm: this communicator is in a call on another thread" in out
    assert "child RuntimeError: clustercomm: this communicator is in a call on another " \
           "thread (or another of its world: split)" in out
    assert "ok False" in out
