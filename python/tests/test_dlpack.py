"""JAX and PyTorch arrays through DLPack, each when installed (JAX: jax==0.10.2 from
python/tests/requirements-optional.txt; PyTorch is not installed by tests/python_venv.sh: its
Linux wheel on PyPI is 539 MB plus CUDA packages, so its test skips unless torch is there).

JAX 0.10.2's `__dlpack__` gives an unversioned "dltensor" capsule (also when asked for a
versioned one), so, as with MLX, nothing marks the array read-only: clustercomm would write an
`out=` JAX array in place although JAX arrays are immutable (python/README.md: don't)."""

import ctypes

import numpy as np
import pytest

import clustercomm


def writable_view(addr, count, dtype):
    """A numpy array over `count` elements at address `addr` (which need not be writable:
    the tests only pass it where the binding refuses before touching it, or writes x's own
    values back onto x)."""
    buf = (ctypes.c_char * (count * np.dtype(dtype).itemsize)).from_address(addr)
    return np.frombuffer(buf, dtype)


def test_jax_array_is_read_in_place():
    jnp = pytest.importorskip(
        "jax.numpy", reason="JAX is not installed here (python/tests/requirements-optional.txt:"
        " jax==0.10.2, jaxlib==0.10.2; tests/python_venv.sh notes why pip left it out)")
    with clustercomm.Communicator() as one:
        x = jnp.arange(8, dtype=jnp.float32) * 2
        addr = x.unsafe_buffer_pointer()
        assert x.__dlpack_device__()[0] == 1  # kDLCPU
        # The binding's overlap check tells where it saw x (see test_mlx.py): refused one
        # element off, accepted (in place: writes x's values onto x) at x's own address.
        with pytest.raises(ValueError, match="overlaps x without being x itself"):
            one.all_reduce(x, out=writable_view(addr + 4, 8, np.float32))
        got = one.all_reduce(x, out=writable_view(addr, 8, np.float32))
        assert np.array_equal(got, np.arange(8, dtype=np.float32) * 2)
        for dt in ("bfloat16", "float16", "int32", "uint8"):
            res = one.all_reduce(jnp.arange(5).astype(dt))
            assert res.dtype.name == dt and res.astype(np.float64).tolist() == [0, 1, 2, 3, 4]


def test_torch_tensor_is_read_in_place():
    torch = pytest.importorskip(
        "torch", reason="PyTorch is not installed (tests/python_venv.sh leaves it out: its Linux "
        "wheel is 539 MB plus CUDA packages)")
    with clustercomm.Communicator() as one:
        x = torch.arange(8, dtype=torch.float32) * 2
        addr = x.data_ptr()
        with pytest.raises(ValueError, match="overlaps x without being x itself"):
            one.all_reduce(x, out=writable_view(addr + 4, 8, np.float32))
        o = torch.zeros(8, dtype=torch.float32)
        assert one.all_reduce(x, out=o) is o and o.tolist() == x.tolist()
        assert one.all_reduce(torch.ones(3, dtype=torch.bfloat16)).dtype.name == "bfloat16"
