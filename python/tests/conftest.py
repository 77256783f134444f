"""Worlds of rank processes for the tests: World(n) spawns n processes on loopback TCP, each
holding one clustercomm.Communicator (ranks.serve), and runs tasks (functions of ranks.py,
by name) on all of them at once. Healthy worlds are shared per size (the `world` fixture);
tests that break a world make their own."""

import multiprocessing as mp
import os
import socket
import time

import pytest

import ranks

TASK_TIMEOUT = 120.0  # seconds a task may take on a loaded machine before the test fails


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class World:
    def __init__(self, n, timeout_ms=30000, **opts):
        ctx = mp.get_context("spawn")
        self.n = n
        coordinator = f"127.0.0.1:{free_port()}" if n > 1 else ""
        self.conns, self.procs, self.pids = [], [], []
        for r in range(n):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=ranks.serve, args=(child, r, n, coordinator, timeout_ms, opts),
                            daemon=True)
            p.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(p)
        for r, c in enumerate(self.conns):
            status, value = self._get(r, c, 60.0)
            if status != "ready":
                self.close()
                raise RuntimeError(f"rank {r} of {n} did not start: {value}")
            self.pids.append(value)

    @staticmethod
    def _get(r, conn, timeout):
        if not conn.poll(timeout):
            raise RuntimeError(f"rank {r}: no answer within {timeout} s")
        try:
            return conn.recv()
        except EOFError:
            return "died", None

    def send(self, ranks_, task, *args):
        for r in ranks_:
            self.conns[r].send((task, args))

    def collect(self, ranks_, timeout=TASK_TIMEOUT):
        """[(status, value)] of those ranks: "ok", "err" (text) or "died"."""
        deadline = time.monotonic() + timeout
        return [self._get(r, self.conns[r], max(0.0, deadline - time.monotonic()))
                for r in ranks_]

    def run(self, task, *args, timeout=TASK_TIMEOUT):
        """Runs ranks.<task>(comm, *args) on every rank; their results, in rank order."""
        everyone = range(self.n)
        self.send(everyone, task, *args)
        results = self.collect(everyone, timeout)
        errors = [f"rank {r}: {v}" for r, (s, v) in enumerate(results) if s != "ok"]
        if errors:
            raise AssertionError("\n".join(errors))
        return [v for _, v in results]

    def close(self):
        for c in self.conns:
            try:
                c.send(None)
            except (BrokenPipeError, OSError):
                pass
        deadline = time.monotonic() + 40
        for p in self.procs:
            p.join(max(0.1, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join()


@pytest.fixture(scope="session")
def worlds():
    made = {}

    def get(n):
        if n not in made:
            made[n] = World(n)
        return made[n]

    yield get
    for w in made.values():
        w.close()


@pytest.fixture(params=[1, 2, 4], ids=lambda n: f"n={n}")
def world(request, worlds):
    return worlds(request.param)


@pytest.fixture(scope="session")
def no_ml_dtypes():
    try:
        import ml_dtypes  # noqa: F401
        return False
    except ImportError:
        return True


def pytest_report_header(config):
    import clustercomm
    import numpy
    return (f"clustercomm {clustercomm.__version__} ({os.path.dirname(clustercomm.__file__)}), "
            f"numpy {numpy.__version__}")
